//! [`Text`]: the strings of the document model, borrowed from the JSON they were read from
//! whenever they can be.
//!
//! A maximal document and its export hold about 95,000 strings. Reading each into its own
//! `String` (an allocation, a copy, and a free when the document goes) cost more than the
//! rest of reading them; a string without escapes is now a slice of the input. Built by hand
//! (an export assembled from database rows), a `Text` owns its string.

use crate::map::Map;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};
use std::borrow::{Borrow, Cow};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;

/// A string of the document model: a slice of the JSON it was read from, or its own.
///
/// It compares, hashes and orders as the `str` it holds (so a `Map<Text, _>` is looked
/// up by `&str`), and reads and writes as a JSON string.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text<'a>(Cow<'a, str>);

impl<'a> Text<'a> {
    /// A `Text` borrowing `text`.
    pub const fn borrowed(text: &'a str) -> Self {
        Text(Cow::Borrowed(text))
    }

    /// The string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when the text is a slice of the JSON it was read from.
    pub fn is_borrowed(&self) -> bool {
        matches!(self.0, Cow::Borrowed(_))
    }

    /// The same text, owning its string (it copies only a borrowed one).
    pub fn into_owned(self) -> Text<'static> {
        Text(Cow::Owned(self.0.into_owned()))
    }

    /// The string, as a `String` (copied only when borrowed).
    pub fn into_string(self) -> String {
        self.0.into_owned()
    }
}

impl Deref for Text<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Text<'_> {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<String> for Text<'_> {
    fn from(text: String) -> Self {
        Text(Cow::Owned(text))
    }
}

impl<'a> From<&'a str> for Text<'a> {
    fn from(text: &'a str) -> Self {
        Text(Cow::Borrowed(text))
    }
}

impl<'a> From<Cow<'a, str>> for Text<'a> {
    fn from(text: Cow<'a, str>) -> Self {
        Text(text)
    }
}

impl From<Text<'_>> for String {
    fn from(text: Text<'_>) -> Self {
        text.into_string()
    }
}

impl PartialEq<str> for Text<'_> {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Text<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for Text<'_> {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Text<'_>> for str {
    fn eq(&self, other: &Text<'_>) -> bool {
        *self == *other.0
    }
}

impl PartialEq<Text<'_>> for &str {
    fn eq(&self, other: &Text<'_>) -> bool {
        **self == *other.0
    }
}

impl PartialEq<Text<'_>> for String {
    fn eq(&self, other: &Text<'_>) -> bool {
        **self == *other.0
    }
}

impl fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}

/// Reads a JSON string as a [`Text`], borrowing it when the reader can (no escapes).
struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
    type Value = Text<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'a>, E> {
        Ok(Text::borrowed(text))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'a>, E> {
        Ok(Text::from(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Text<'a>, E> {
        Ok(Text::from(text))
    }
}

impl JsonSchema for Text<'_> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        String::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        String::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        String::json_schema(generator)
    }
}

/// A map of texts (a config, an env) as `String`s: a call's input, a database row.
pub fn to_strings(map: &Map<Text<'_>, Text<'_>>) -> BTreeMap<String, String> {
    // Inserted one by one, not collected: `collect` sorts its input first, and each sort is
    // code the console downloads.
    let mut out = BTreeMap::new();
    for (k, v) in map {
        out.insert(k.to_string(), v.to_string());
    }
    out
}

/// A map keyed by texts (a quota) keyed by `String`s.
pub fn to_string_keys<V: Copy>(map: &Map<Text<'_>, V>) -> BTreeMap<String, V> {
    let mut out = BTreeMap::new();
    for (k, &v) in map {
        out.insert(k.to_string(), v);
    }
    out
}

/// A map of `String`s as texts: [`to_strings`] the other way.
pub fn from_strings(map: BTreeMap<String, String>) -> Map<Text<'static>, Text<'static>> {
    // Texts order as their strings: the map stays sorted.
    Map::from(map).map_entries(|(k, v)| (Text::from(k), Text::from(v)))
}

/// A map keyed by `String`s keyed by texts: [`to_string_keys`] the other way.
pub fn from_string_keys<V>(map: BTreeMap<String, V>) -> Map<Text<'static>, V> {
    Map::from(map).map_entries(|(k, v)| (Text::from(k), v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_without_escapes_is_borrowed_one_with_escapes_owned() {
        let json = r#"["plain", "with \"quotes\""]"#;
        let texts: Vec<Text<'_>> = serde_json::from_str(json).unwrap();
        assert!(matches!(texts[0].0, Cow::Borrowed("plain")));
        assert!(matches!(&texts[1].0, Cow::Owned(s) if s == "with \"quotes\""));
    }

    #[test]
    fn compares_and_looks_up_as_its_str() {
        let map = std::collections::BTreeMap::from([(Text::from("gpu".to_owned()), 4)]);
        assert_eq!(map.get("gpu"), Some(&4));
        assert_eq!(Text::borrowed("a"), Text::from("a".to_owned()));
        assert!(Text::borrowed("a") < Text::borrowed("b"));
        assert_eq!(
            serde_json::to_string(&Text::borrowed("é\"")).unwrap(),
            r#""é\"""#
        );
    }
}
