//! RFC 8785 JSON Canonicalization Scheme (JCS) and the SHA-256 over it: the basis of planHash.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

mod direct;
pub use direct::{CanonicalError, to_canonical};

/// Lowercase hex SHA-256 of a call list's canonical JSON.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct PlanHash(pub String);

impl PlanHash {
    /// The hash of `value`'s canonical serialization.
    pub fn of(value: &Value) -> Self {
        PlanHash(sha256_hex(canonicalize(value).as_bytes()))
    }

    /// The hash of any serializable value's canonical serialization, written straight from
    /// `Serialize` (the same hash as [`PlanHash::of`] its `serde_json::Value`).
    pub fn of_serialize<T: serde::Serialize + ?Sized>(value: &T) -> Result<Self, CanonicalError> {
        Ok(PlanHash(sha256_hex(to_canonical(value)?.as_bytes())))
    }

    /// The shape of every planHash: 64 lowercase hexadecimal digits. Anything else can never
    /// match a plan, so it is a mistake to report as such rather than as a moved fleet.
    pub const PATTERN: &str = "^[0-9a-f]{64}$";

    /// True when `text` has the shape of a planHash ([`PlanHash::PATTERN`]).
    pub fn is_well_formed(text: &str) -> bool {
        text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }
}

impl std::fmt::Display for PlanHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    // In pieces: V8 runs a wasm function called once in its baseline code to the end (it has
    // no on-stack replacement for wasm), and one call of sha2's block loop over 90 MB took
    // 7 s there against 1.9 s optimized. Called per piece, the loop is optimized after a few.
    let mut hasher = Sha256::new();
    for piece in bytes.chunks(64 << 10) {
        hasher.update(piece);
    }
    let digest = hasher.finalize();
    let mut out = String::with_capacity(64);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Serializes `value` per RFC 8785: object members sorted by their UTF-16 code units, no
/// insignificant white space, numbers as ECMAScript prints them, strings minimally escaped.
pub fn canonicalize(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            // serde_json's map iterates in byte order, which is JCS's UTF-16 order for keys
            // without characters outside the Basic Multilingual Plane: write in place, with
            // no per-object vector and sort, unless the keys say otherwise.
            let in_order = map
                .keys()
                .zip(map.keys().skip(1))
                .all(|(a, b)| utf16_cmp(a, b).is_le());
            if in_order {
                write_members(out, map.iter());
            } else {
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                members.sort_by(|a, b| utf16_cmp(a.0, b.0));
                write_members(out, members.into_iter());
            }
            out.push('}');
        }
    }
}

/// JCS's key order: UTF-16 code units, which is byte order for ASCII keys.
fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

fn write_members<'a>(out: &mut String, members: impl Iterator<Item = (&'a String, &'a Value)>) {
    for (i, (key, item)) in members.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_value(out, item);
    }
}

/// Integers below 2^53 in magnitude print exactly, without a temporary string.
const EXACT: u64 = 9_007_199_254_740_992;

fn write_number(out: &mut String, n: &serde_json::Number) {
    if let Some(i) = n.as_i64() {
        write_i64(out, i);
    } else if let Some(u) = n.as_u64() {
        write_u64(out, u);
    } else {
        write_f64(out, n.as_f64().unwrap_or(0.0));
    }
}

fn write_i64(out: &mut String, i: i64) {
    if i.unsigned_abs() < EXACT {
        if i < 0 {
            out.push('-');
        }
        write_digits(out, i.unsigned_abs());
    } else {
        write_f64(out, i as f64);
    }
}

fn write_u64(out: &mut String, u: u64) {
    if u < EXACT {
        write_digits(out, u);
    } else {
        write_f64(out, u as f64);
    }
}

/// The decimal digits of `u`, without the formatting machinery.
fn write_digits(out: &mut String, mut u: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&buf[i..]).expect("ASCII digits"));
}

/// ECMAScript Number::toString: integers below 2^53 print as integers; others go through
/// the shortest round-trip representation, with an exponent from 1e21 up and below 1e-6.
fn write_f64(out: &mut String, f: f64) {
    if f == 0.0 {
        out.push('0');
        return;
    }
    if !f.is_finite() {
        // JSON cannot carry these; serde_json never produces them.
        out.push_str("null");
        return;
    }
    // The shortest round-trip digits, from ryu: when two are equally short and equally close
    // (0.75772857666015625 lies halfway between ...562 and ...563), it takes the even one, as
    // ECMAScript does; Rust's `{:e}` rounds such a tie up, and the planHash would differ from
    // every other JCS implementation's.
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(f.abs());
    let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
    let exp: i32 = exp.parse().expect("ryu writes an integer exponent");
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The value is 0.DIGITS x 10^n: the digits without leading and trailing zeros.
    let all = int.bytes().chain(frac.bytes());
    let lead = all.clone().take_while(|&b| b == b'0').count();
    let mut digits: String = all.skip(lead).map(char::from).collect();
    while digits.ends_with('0') {
        digits.pop();
    }
    let k = digits.len() as i32;
    let n = int.len() as i32 - lead as i32 + exp;
    if f < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        let _ = write!(out, "{}", (n - 1).abs());
    }
}

/// Whether `bytes` hold a control character, `"` or `\\`: eight bytes a step, as a string
/// written is mostly ids and names.
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `word` below `n` (n <= 0x80), or of some byte above it
    // when one is: exact as to whether there is one, which is all this asks.
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word & HIGH;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        if below(word, 0x20) | below(quote, 1) | below(backslash, 1) != 0 {
            return true;
        }
    }
    chunks
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    // Names, ids and values rarely need escapes: copy them whole.
    if !needs_escape(s.as_bytes()) {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(input: &str, expect: &str) {
        let value: Value = serde_json::from_str(input).unwrap();
        assert_eq!(canonicalize(&value), expect, "input: {input}");
    }

    #[test]
    fn plan_hashes_are_well_formed() {
        let hash = PlanHash::of(&json!([]));
        assert!(PlanHash::is_well_formed(&hash.0));
        for bad in [
            "",
            "00",
            &hash.0.to_uppercase(),
            &format!("{}0", hash.0),
            &hash.0[1..],
        ] {
            assert!(!PlanHash::is_well_formed(bad), "{bad}");
        }
        assert!(!PlanHash::is_well_formed(&format!("{}g", &hash.0[1..])));
    }

    #[test]
    fn sorts_keys_and_drops_white_space() {
        check(
            r#"{ "b": 1, "a": [ true, null, "x" ] }"#,
            r#"{"a":[true,null,"x"],"b":1}"#,
        );
    }

    #[test]
    fn orders_keys_by_utf16_code_units() {
        // U+1F600 is D83D DE00 in UTF-16, which sorts before U+FB01 (FB01); bytes say otherwise.
        check(
            "{\"\u{fb01}\":1,\"\u{1f600}\":2}",
            "{\"\u{1f600}\":2,\"\u{fb01}\":1}",
        );
    }

    #[test]
    fn prints_numbers_as_ecmascript_does() {
        check(
            "[0, -0.0, 1.0, 1e21, 1e20, 0.000001, 1e-7, 333333333.33333329, 1E30, 4.5, -1.5e-10]",
            "[0,0,1,1e+21,100000000000000000000,0.000001,1e-7,333333333.3333333,1e+30,4.5,-1.5e-10]",
        );
        check("9007199254740993", "9007199254740992");
        // Ties between two shortest forms go to the even one, as in ECMAScript (V8 and the
        // `canonicalize` package print these so).
        check(
            "[0.75772857666015625, 1125899906842624.25, 0.5000076293945312, 5e-324, 1.7976931348623157e308, 123.0, 0.1, 1e-6, 1.5e-7]",
            "[0.7577285766601562,1125899906842624.2,0.5000076293945312,5e-324,1.7976931348623157e+308,123,0.1,0.000001,1.5e-7]",
        );
    }

    #[test]
    fn finds_every_byte_that_needs_an_escape() {
        for len in 0..20 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    let expect = b < 0x20 || b == b'"' || b == b'\\';
                    assert_eq!(needs_escape(&bytes), expect, "{b:#x} at {at} of {len}");
                }
            }
        }
        assert!(!needs_escape("é\u{1f600}\u{7f}".as_bytes()));
    }

    #[test]
    fn escapes_strings_minimally() {
        check(r#""\u00e9\u001f\n\"\\/""#, "\"\u{e9}\\u001f\\n\\\"\\\\/\"");
    }

    #[test]
    fn writes_typed_values_as_their_json_value_would_be_written() {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        enum E {
            Unit,
            New(u8),
            Tuple(i8, f64),
            Named { z: bool, a: Option<u32> },
        }
        #[derive(serde::Serialize)]
        #[serde(tag = "method", content = "input")]
        enum Tagged {
            Call { zeta: String, alpha: Vec<E> },
        }
        let value = Tagged::Call {
            zeta: "\u{1f600}\n".into(),
            alpha: vec![
                E::Unit,
                E::New(7),
                E::Tuple(-1, 1e21),
                E::Named { z: true, a: None },
            ],
        };
        let direct = to_canonical(&value).unwrap();
        assert_eq!(direct, canonicalize(&serde_json::to_value(&value).unwrap()));
        assert_eq!(
            direct,
            r#"{"input":{"alpha":["unit",{"new":7},{"tuple":[-1,1e+21]},{"named":{"a":null,"z":true}}],"zeta":"😀\n"},"method":"Call"}"#
        );
    }

    #[test]
    fn hashes_the_canonical_form() {
        let a = PlanHash::of(&json!({"b": 1, "a": 2}));
        let b = PlanHash::of(&json!({"a": 2, "b": 1}));
        assert_eq!(a, b);
        assert_eq!(a.0, sha256_hex(br#"{"a":2,"b":1}"#));
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
