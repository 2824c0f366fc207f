//! Reading JSON into the model's serde types, and saying what went wrong in JSON's words.
//!
//! The server's method inputs and a saved export (the CLI's `--state`, the JS package's
//! `plan`) are read by serde's derive, whose messages speak Rust (`expected struct Document`,
//! `u64`, `sequence`), whose structs accept arrays, and whose enums maps. What is here makes both
//! readers refuse the same things in the same words: one wording, written once. (Where a
//! problem is placed is each reader's: the server's `details.path` names a missing field, a
//! saved export's refusal names the object that lacks it.)

use serde::de::{self, Deserializer, Visitor};

/// What a number past a double's range (`1e309`, 400 digits) is, said at its path. It is JSON
/// by RFC 8259's grammar, which leaves the range to implementations: a malformed value, like
/// any other, not a syntax error at a place (serde_json's place is where it stopped reading
/// the number, and counts from the start of the text it was given, which the server's is not).
pub const OUT_OF_RANGE: &str = "is a number out of range: a double holds at most about 1.8e308";

/// True for serde_json's error of a number past a double's range ([`OUT_OF_RANGE`]). Its error
/// kinds are private: its message is the only way to tell this one.
pub fn is_out_of_range(err: &serde_json::Error) -> bool {
    err.to_string().starts_with("number out of range")
}

/// A deserializer that reads a struct from a JSON object only, and an enum from its name (a
/// string) only. serde reads a struct from an array of its fields in order too (`"policy":
/// [0.5]` was a policy), and an enum from `{"shared": null}`: an input's objects are objects,
/// and its names strings, as their schemas say. Every other read is passed through, each
/// nested value read through this again. Every enum read through it must be a set of names
/// (unit variants): one whose variants carry data would be refused, `expected a string`.
pub struct ObjectsOnly<D>(pub D);

/// Forwards the `deserialize_*` methods that take only a visitor.
macro_rules! objects_only_forward {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method(ObjectsOnly(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for ObjectsOnly<D> {
    type Error = D::Error;

    objects_only_forward! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        // A map read refuses an array: `invalid type: sequence, expected struct ...`.
        self.0.deserialize_map(ObjectsOnly(visitor))
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, ObjectsOnly(visitor))
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_newtype_struct(name, ObjectsOnly(visitor))
    }
    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, ObjectsOnly(visitor))
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_tuple_struct(name, len, ObjectsOnly(visitor))
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        // Every enum read through here is a name (`kind`, `network`, `missing`'s items): a
        // string. serde_json's enum read would take `{"shared": null}` for `"shared"` too,
        // and say `expected value` of a null or a number, at a place that holds one.
        self.0.deserialize_any(Named(visitor))
    }
    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// The visitor of an enum read as its name ([`ObjectsOnly`]'s enums): a string, handed to the
/// enum's own visitor as a unit variant; anything else is of the wrong type.
struct Named<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for Named<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.0.visit_enum(de::value::StrDeserializer::new(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.0
            .visit_enum(de::value::BorrowedStrDeserializer::new(v))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.visit_str(&v)
    }
}

/// Forwards the `visit_*` methods that take a plain value.
macro_rules! objects_only_visit {
    ($($method:ident($t:ty))*) => {$(
        fn $method<E: de::Error>(self, v: $t) -> Result<V::Value, E> {
            self.0.$method(v)
        }
    )*};
}

/// The visitor of a value read by [`ObjectsOnly`]: what it holds is read the same way.
impl<'de, V: Visitor<'de>> Visitor<'de> for ObjectsOnly<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.0.expecting(f)
    }
    objects_only_visit! {
        visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64)
        visit_i128(i128) visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64)
        visit_u128(u128) visit_f32(f32) visit_f64(f64) visit_char(char) visit_str(&str)
        visit_borrowed_str(&'de str) visit_string(String) visit_bytes(&[u8])
        visit_borrowed_bytes(&'de [u8]) visit_byte_buf(Vec<u8>)
    }
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(ObjectsOnly(d))
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(ObjectsOnly(d))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(ObjectsOnly(seq))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(ObjectsOnly(map))
    }
}

impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for ObjectsOnly<A> {
    type Error = A::Error;

    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(ObjectsOnly(seed))
    }
    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for ObjectsOnly<A> {
    type Error = A::Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(ObjectsOnly(seed))
    }
    fn next_value_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(ObjectsOnly(seed))
    }
    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, T: de::DeserializeSeed<'de>> de::DeserializeSeed<'de> for ObjectsOnly<T> {
    type Value = T::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T::Value, D::Error> {
        self.0.deserialize(ObjectsOnly(d))
    }
}

/// A serde path written as the document's paths are (`pools[0].quota["nvidia.gpu"]`, the root
/// ``), not as serde_path_to_error prints it (`quota.nvidia.gpu`, `.` and `?`).
pub fn path_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                crate::validate::push_key(&mut out, key)
            }
            // A key that could not be read (a truncated body): the problem is its object's.
            Segment::Unknown => {}
        }
    }
    out
}

/// What an escaped UTF-16 surrogate without its pair is (`"\ud800"`, `"\udc00"`), in place of
/// serde_json's words for it (without their place), which say neither: `unexpected end of hex
/// escape` (a high surrogate not followed by `\u`) and `lone leading surrogate in hex escape` (a
/// low one alone, or a high one followed by another escape, `\ud800\u0041`). JSON's grammar
/// allows such an escape, but it stands for no character (RFC 8259, 8.2; I-JSON refuses it).
/// `None` for any other message.
pub fn unpaired_surrogate(words: &str) -> Option<&'static str> {
    matches!(
        words,
        "unexpected end of hex escape" | "lone leading surrogate in hex escape"
    )
    .then_some(
        "a \\u escape of a UTF-16 surrogate (\\uD800 to \\uDFFF) without its pair: surrogates come \
         in pairs, high then low, and one alone is no Unicode character",
    )
}

/// serde's message in the API's words: what the input expected as JSON says it (`a JSON
/// object`, `an integer from 0 to 4294967295`), never as a Rust type (`struct TenantInput`,
/// `u32`), and what it got as a JSON kind (`object`, `array`, `number`, not `map`,
/// `sequence`, `floating point`). serde_json's place (` at line 1 column 5`) stays.
pub fn in_wire_terms(message: &str) -> String {
    let (text, place) = split_place(message);
    if let Some(words) = unpaired_surrogate(text) {
        return format!("{words}{place}");
    }
    // A struct read from an array (serde allows it) is an array where an object is due.
    if let Some(rest) = text.strip_prefix("invalid length ")
        && rest.contains(", expected struct ")
    {
        return format!("invalid type: array, expected a JSON object{place}");
    }
    if text.starts_with("data did not match any variant of ") {
        return format!("the value is none of the forms this field takes{place}");
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = text.strip_prefix(prefix)
            && let Some(comma) = rest.rfind(", expected ")
        {
            let (got, expected) = (&rest[..comma], &rest[comma + ", expected ".len()..]);
            let expected = expected_in_wire_terms(expected);
            let got = got_in_wire_terms(got);
            // A map where a name is due (serde's enums): an object, of the wrong type.
            let prefix = if got == "object" && expected == "a string" {
                "invalid type: "
            } else {
                prefix
            };
            return format!("{prefix}{got}, expected {expected}{place}");
        }
    }
    message.to_owned()
}

/// serde's `Unexpected` kind as JSON names it (its value, if any, kept).
fn got_in_wire_terms(got: &str) -> String {
    for (serde, json) in [
        ("map", "object"),
        ("sequence", "array"),
        ("floating point", "number"),
        ("unit value", "null"),
        ("unit", "null"),
    ] {
        if got == serde {
            return json.to_owned();
        }
        if let Some(value) = got.strip_prefix(serde).filter(|v| v.starts_with(" `")) {
            return format!("{json}{value}");
        }
    }
    got.to_owned()
}

/// What serde's `expected` names (a Rust type, or a visitor's words), as JSON says it.
fn expected_in_wire_terms(expected: &str) -> String {
    let range = |min: i128, max: i128| format!("an integer from {min} to {max}");
    match expected {
        "u8" => range(0, u8::MAX.into()),
        "u16" => range(0, u16::MAX.into()),
        "u32" => range(0, u32::MAX.into()),
        // A u64's real bound is often lower (stored as i64): no bound is stated.
        "u64" | "u128" | "usize" => "a non-negative integer".to_owned(),
        "i8" => range(i8::MIN.into(), i8::MAX.into()),
        "i16" => range(i16::MIN.into(), i16::MAX.into()),
        "i32" => range(i32::MIN.into(), i32::MAX.into()),
        "i64" => range(i64::MIN.into(), i64::MAX.into()),
        "i128" | "isize" => "an integer".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        "a map" => "a JSON object".to_owned(),
        "a sequence" => "an array".to_owned(),
        "a borrowed string" | "a character" | "a char" => "a string".to_owned(),
        "unit" => "null".to_owned(),
        // serde's enums of names (every enum of the inputs): a string, one of its names.
        "string or map" | "map with a single key" | "variant identifier" | "field identifier" => {
            "a string".to_owned()
        }
        _ => {
            let words = [
                ("struct variant ", "a JSON object"),
                ("tuple variant ", "an array"),
                ("tuple struct ", "an array"),
                ("unit struct ", "null"),
                ("newtype struct ", "a value"),
                ("struct ", "a JSON object"),
                ("internally tagged enum ", "a JSON object"),
                ("adjacently tagged enum ", "a JSON object"),
                ("enum ", "a string"),
                ("tuple of ", "an array"),
                ("an array of length ", "an array"),
            ];
            match words.iter().find(|(rust, _)| expected.starts_with(rust)) {
                Some((_, json)) => (*json).to_owned(),
                None => expected.to_owned(),
            }
        }
    }
}

/// `message` and serde_json's place that ends it (` at line <digits> column <digits>`), if any.
pub fn split_place(message: &str) -> (&str, &str) {
    match message.rfind(" at line ") {
        Some(at)
            if message[at + " at line ".len()..]
                .split_once(" column ")
                .is_some_and(|(line, column)| {
                    [line, column]
                        .iter()
                        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                }) =>
        {
            message.split_at(at)
        }
        _ => (message, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_are_said_in_json_words() {
        for (serde, json) in [
            (
                "invalid type: string \"x\", expected struct Document at line 1 column 48",
                "invalid type: string \"x\", expected a JSON object at line 1 column 48",
            ),
            (
                "invalid value: integer `-1`, expected u64",
                "invalid value: integer `-1`, expected a non-negative integer",
            ),
            (
                "invalid type: map, expected a sequence",
                "invalid type: object, expected an array",
            ),
            (
                "invalid type: floating point `1.5`, expected u32",
                "invalid type: number `1.5`, expected an integer from 0 to 4294967295",
            ),
            (
                "invalid type: unit value, expected a string",
                "invalid type: null, expected a string",
            ),
            (
                "invalid length 1, expected struct Policy with 1 element",
                "invalid type: array, expected a JSON object",
            ),
            // A map where a name is due is of the wrong type, not of the wrong value.
            (
                "invalid value: map, expected variant identifier",
                "invalid type: object, expected a string",
            ),
            // What is not serde's type talk stays as it is.
            (
                "missing field `caller` at line 1 column 42",
                "missing field `caller` at line 1 column 42",
            ),
            ("trailing characters", "trailing characters"),
            (
                "lone leading surrogate in hex escape at line 1 column 67",
                "a \\u escape of a UTF-16 surrogate (\\uD800 to \\uDFFF) without its pair: surrogates \
                 come in pairs, high then low, and one alone is no Unicode character at line 1 column 67",
            ),
        ] {
            assert_eq!(in_wire_terms(serde), json, "{serde}");
        }
    }

    #[test]
    fn a_place_is_split_only_when_it_is_serde_jsons() {
        assert_eq!(
            split_place("EOF while parsing at line 3 column 14"),
            ("EOF while parsing", " at line 3 column 14")
        );
        for whole in ["a value at line x column 2", "at line 1 column", "plain"] {
            assert_eq!(split_place(whole), (whole, ""));
        }
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Pair {
        a: u32,
        b: Option<Box<Pair>>,
    }

    #[test]
    fn objects_are_read_from_objects_only() {
        let read = |text: &str| {
            let mut de = serde_json::Deserializer::from_str(text);
            serde_path_to_error::deserialize::<_, Pair>(ObjectsOnly(&mut de)).map_err(|e| {
                (
                    path_of(e.path()),
                    in_wire_terms(&e.into_inner().to_string()),
                )
            })
        };
        assert!(read(r#"{"a": 1, "b": {"a": 2}}"#).is_ok());
        // serde alone reads a struct from a list of its fields, at any depth.
        assert!(serde_json::from_str::<Pair>(r#"{"a": 1, "b": [2, null]}"#).is_ok());
        assert_eq!(
            read(r#"{"a": 1, "b": [2, null]}"#).unwrap_err(),
            (
                "b".to_owned(),
                "invalid type: array, expected a JSON object at line 1 column 14".to_owned()
            )
        );
        assert_eq!(read("[1]").unwrap_err().0, "");
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Site {
        kind: crate::document::SiteKind,
    }

    #[test]
    fn an_enum_is_read_from_its_name_only() {
        let from_text = |text: &str| {
            let mut de = serde_json::Deserializer::from_str(text);
            serde_path_to_error::deserialize::<_, Site>(ObjectsOnly(&mut de))
                .map(|site| site.kind)
                .map_err(|e| {
                    (
                        path_of(e.path()),
                        in_wire_terms(&e.into_inner().to_string()),
                    )
                })
        };
        let from_value = |text: &str| {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            serde_path_to_error::deserialize::<_, Site>(ObjectsOnly(value))
                .map(|site| site.kind)
                .map_err(|e| {
                    (
                        path_of(e.path()),
                        in_wire_terms(&e.into_inner().to_string()),
                    )
                })
        };
        let shared = crate::document::SiteKind::Shared;
        assert_eq!(from_text(r#"{"kind": "shared"}"#), Ok(shared));
        assert_eq!(from_value(r#"{"kind": "shared"}"#), Ok(shared));
        // serde_json alone reads the externally tagged form too.
        assert!(serde_json::from_str::<Site>(r#"{"kind": {"shared": null}}"#).is_ok());
        for (text, got) in [
            (r#"{"kind": {"shared": null}}"#, "object"),
            (r#"{"kind": null}"#, "null"),
            (r#"{"kind": 5}"#, "integer `5`"),
            (r#"{"kind": ["shared"]}"#, "array"),
        ] {
            let wrong = format!("invalid type: {got}, expected a string");
            let (path, message) = from_text(text).unwrap_err();
            assert_eq!(path, "kind");
            assert!(
                message.starts_with(&format!("{wrong} at line 1 column ")),
                "{message}"
            );
            assert_eq!(from_value(text), Err(("kind".to_owned(), wrong)));
        }
        assert_eq!(
            from_value(r#"{"kind": "x"}"#).unwrap_err().1,
            "unknown variant `x`, expected `shared` or `dedicated`"
        );
    }

    #[test]
    fn paths_are_written_as_the_documents() {
        let mut de = serde_json::Deserializer::from_str(r#"{"m": {"a.b": [1, "x"]}}"#);
        let err = serde_path_to_error::deserialize::<
            _,
            std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<u32>>>,
        >(ObjectsOnly(&mut de))
        .unwrap_err();
        assert_eq!(path_of(err.path()), r#"m["a.b"][1]"#);
    }
}
