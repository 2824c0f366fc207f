//! JSON numbers as JSON Schema reads them: `961.0` and `1e2` are integers (an integer is any
//! number with a zero fractional part), while serde reads them as floats and refuses them
//! where a Rust integer is expected. The inputs accept what their schemas admit, and the
//! schemas state the ranges the Rust integers enforce.

use serde::de::{self, Deserializer, Visitor};
use serde_json::{Map, Number, Value, json};
use std::fmt;

/// 2^64, the first float past `u64`.
const U64_END: f64 = 18_446_744_073_709_551_616.0;
/// -2^63, the smallest `i64`.
const I64_START: f64 = -9_223_372_036_854_775_808.0;

/// The integer an integral float stands for, when a Rust integer holds it.
///
/// -2^63 itself is refused: the literal `-9223372036854775808` is read as an `i64` and never
/// comes here, while a float of -2^63 may be a literal below it (`-9223372036854775810`)
/// rounded up, which no `i64` holds. (Past `u64` every float rounds to 2^64 or more.)
fn integral(x: f64) -> Option<Number> {
    if x.fract() != 0.0 {
        return None;
    }
    if (0.0..U64_END).contains(&x) {
        Some(Number::from(x as u64))
    } else if x > I64_START && x < 0.0 {
        Some(Number::from(x as i64))
    } else {
        None
    }
}

/// Rewrites every integral float of `value` (`961.0`, `1e2`) as the integer it is, so a
/// typed input reads it where an integer is expected. Floats that are not integral, and
/// integral ones past `u64`/`i64`, stay floats (and are refused where an integer is due).
pub fn integral_floats_to_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(i) = n.as_f64().and_then(integral) {
                *n = i;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_to_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_to_integers),
        _ => {}
    }
}

/// `deserialize_with` for an optional `u32` input field: an integer, or an integral float
/// (`100.0`), of 0 to `u32::MAX`; `null` or absent is `None`.
pub fn optional_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    struct Optional;
    impl<'de> Visitor<'de> for Optional {
        type Value = Option<u32>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an integer from 0 to 4294967295")
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            u32::try_from(v)
                .map(Some)
                .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            u32::try_from(v)
                .map(Some)
                .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            match integral(v).and_then(|n| n.as_u64()) {
                Some(u) => self.visit_u64(u),
                None => Err(E::invalid_type(de::Unexpected::Float(v), &self)),
            }
        }
    }
    d.deserialize_option(Optional)
}

/// Gives every integer schema of `value` the range its Rust type enforces, where it states
/// none: `uint64` is 0 to `u64::MAX`, `int64` (and an integer with no minimum) is the `i64`
/// range, and an integer with a minimum of 0 or more is at most `u64::MAX` (the planner's
/// schemas have dropped the formats by then). Without a maximum a client may send 10^30,
/// which no field can hold.
pub fn state_integer_ranges(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if is_integer(map) {
                let format = map.get("format").and_then(Value::as_str).map(str::to_owned);
                let unsigned = match format.as_deref() {
                    Some("uint64" | "uint32" | "uint16" | "uint8" | "uint") => true,
                    Some(_) => false,
                    None => map
                        .get("minimum")
                        .and_then(Value::as_f64)
                        .is_some_and(|m| m >= 0.0),
                };
                if unsigned {
                    map.entry("minimum").or_insert(json!(0));
                    map.entry("maximum").or_insert(json!(u64::MAX));
                } else {
                    map.entry("minimum").or_insert(json!(i64::MIN));
                    map.entry("maximum").or_insert(json!(i64::MAX));
                }
            }
            map.values_mut().for_each(state_integer_ranges);
        }
        Value::Array(items) => items.iter_mut().for_each(state_integer_ranges),
        _ => {}
    }
}

/// `"type": "integer"` or `["integer", "null"]`.
fn is_integer(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == "integer",
        Some(Value::Array(types)) => types.iter().any(|t| t == "integer"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_floats_become_integers_and_the_rest_stays() {
        let mut v: Value = serde_json::from_str(
            r#"{"a": 961.0, "b": [1e2, -3.0, 1.5], "c": {"d": 1e30, "e": -0.0, "f": 7, "g": 1.8446744073709550e19}}"#,
        )
        .unwrap();
        integral_floats_to_integers(&mut v);
        assert_eq!(v["a"], json!(961));
        assert!(v["a"].is_u64());
        assert_eq!(v["b"], json!([100, -3, 1.5]));
        assert!(v["c"]["d"].is_f64(), "past u64: stays a float");
        assert_eq!(v["c"]["e"], json!(0));
        assert_eq!(v["c"]["f"], json!(7));
        assert_eq!(v["c"]["g"], json!(18_446_744_073_709_549_568u64));
    }

    #[test]
    fn a_float_at_the_i64_bound_is_no_integer() {
        // Below i64::MIN, a literal is a float rounded to -2^63: it must not become i64::MIN.
        let mut v: Value =
            serde_json::from_str("[-9223372036854775810, -9223372036854775808, -9.2e18]").unwrap();
        assert!(v[0].is_f64() && v[1].is_i64());
        integral_floats_to_integers(&mut v);
        assert!(v[0].is_f64(), "stays a float: {}", v[0]);
        assert_eq!(v[1], json!(i64::MIN), "the exact literal is the integer");
        assert_eq!(v[2], json!(-9_200_000_000_000_000_000i64));
    }

    #[derive(serde::Deserialize, Debug)]
    struct Limit {
        #[serde(default, deserialize_with = "optional_u32")]
        limit: Option<u32>,
    }

    #[test]
    fn optional_u32_reads_integral_floats_and_refuses_the_rest() {
        let read = |s: &str| serde_json::from_str::<Limit>(s).map(|l| l.limit);
        assert_eq!(read("{}").unwrap(), None);
        assert_eq!(read(r#"{"limit": null}"#).unwrap(), None);
        assert_eq!(read(r#"{"limit": 5}"#).unwrap(), Some(5));
        assert_eq!(read(r#"{"limit": 1096.0}"#).unwrap(), Some(1096));
        assert_eq!(read(r#"{"limit": 1e2}"#).unwrap(), Some(100));
        assert_eq!(read(r#"{"limit": 4294967295}"#).unwrap(), Some(u32::MAX));
        for bad in ["1.5", "4294967296", "-1", "1e30", "\"5\"", "true"] {
            assert!(read(&format!(r#"{{"limit": {bad}}}"#)).is_err(), "{bad}");
        }
        let from_value: Limit = serde_json::from_value(json!({ "limit": 3.0 })).unwrap();
        assert_eq!(from_value.limit, Some(3));
    }

    #[test]
    fn integer_schemas_state_their_range() {
        let mut s = json!({
            "u64": { "type": "integer", "format": "uint64", "minimum": 0 },
            "i64": { "type": ["integer", "null"], "format": "int64" },
            "u32": { "type": "integer", "minimum": 1, "maximum": 4294967295u32 },
            "doc": { "type": "integer", "minimum": 0 },
            "text": { "type": "string" },
        });
        state_integer_ranges(&mut s);
        assert_eq!(s["u64"]["maximum"], json!(u64::MAX));
        assert_eq!(
            (s["i64"]["minimum"].clone(), s["i64"]["maximum"].clone()),
            (json!(i64::MIN), json!(i64::MAX))
        );
        assert_eq!(s["u32"]["maximum"], json!(u32::MAX));
        assert_eq!(s["u32"]["minimum"], json!(1));
        assert_eq!(s["doc"]["maximum"], json!(u64::MAX));
        assert!(s["text"].get("maximum").is_none());
    }
}
