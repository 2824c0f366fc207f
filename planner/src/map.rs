//! [`Map`]: the model's small maps (a pool's owner quota, an offer's quota, a provider
//! account's config, a template's env), kept as one vector sorted by key.
//!
//! A maximal document and its export hold about 12,000 such maps of two to four entries. As
//! `BTreeMap`s each was a node of some 400 bytes, allocated entry by entry and compared by
//! walking it; as a sorted vector it is one allocation of its entries, compared as a slice.
//! Reading the pair into them instead of `BTreeMap`s took about 0.9 ms off 10 ms.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::borrow::{Borrow, Cow};
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

/// A map ordered by key, as a `BTreeMap` is: it iterates, compares, reads and writes like one.
///
/// Invariant: the entries are sorted by key, each key once.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Map<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Map<K, V> {
    /// An empty map (allocates nothing).
    pub const fn new() -> Self {
        Map {
            entries: Vec::new(),
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the map has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        self.entries.iter().map(pair)
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The entries, sorted by key.
    pub fn as_slice(&self) -> &[(K, V)] {
        &self.entries
    }

    /// Each entry's key and value through `f` (already in order: `f` must keep it).
    pub(crate) fn map_entries<L, W>(self, f: impl FnMut((K, V)) -> (L, W)) -> Map<L, W> {
        Map {
            entries: self.entries.into_iter().map(f).collect(),
        }
    }
}

impl<K: Ord, V> Map<K, V> {
    /// Entries in any order; a repeated key keeps its last value, as inserting them one by
    /// one into a `BTreeMap` would.
    pub fn from_entries(mut entries: Vec<(K, V)>) -> Self {
        // Maps are written sorted (an export, a document written from one): one pass.
        if !entries.is_sorted_by(|a, b| a.0 < b.0) {
            // Through a `BTreeMap`: its code is in every build already (the calls' maps),
            // where a sort would add its own.
            let mut tree = BTreeMap::new();
            for (k, v) in entries.drain(..) {
                tree.insert(k, v);
            }
            entries.extend(tree);
        }
        Map { entries }
    }

    fn search<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// The value of `key`.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.search(key).ok().map(|i| &self.entries[i].1)
    }

    /// True when `key` has a value.
    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.search(key).is_ok()
    }

    /// Sets `key` to `value`; answers the value it replaces. Appending in key order is one
    /// compare; inserting elsewhere moves the entries after it (maps are small).
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if self.entries.last().is_none_or(|(last, _)| *last < key) {
            self.entries.push((key, value));
            return None;
        }
        match self.search(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`; answers its value.
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.search(key).ok().map(|i| self.entries.remove(i).1)
    }
}

impl<K, V> Default for Map<K, V> {
    fn default() -> Self {
        Map::new()
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for Map<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

fn pair<K, V>((k, v): &(K, V)) -> (&K, &V) {
    (k, v)
}

/// The iterator of [`Map::iter`]: `(&key, &value)` in key order.
pub type Iter<'m, K, V> = std::iter::Map<std::slice::Iter<'m, (K, V)>, fn(&(K, V)) -> (&K, &V)>;

impl<'m, K, V> IntoIterator for &'m Map<K, V> {
    type Item = (&'m K, &'m V);
    type IntoIter = Iter<'m, K, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<K, V> IntoIterator for Map<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for Map<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Map::from_entries(iter.into_iter().collect())
    }
}

impl<K: Ord, V> Extend<(K, V)> for Map<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        // Later entries win, as they would inserted one by one, in one sort at most.
        let mut entries = std::mem::take(&mut self.entries);
        entries.extend(iter);
        *self = Map::from_entries(entries);
    }
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for Map<K, V> {
    fn from(entries: [(K, V); N]) -> Self {
        Map::from_entries(Vec::from(entries))
    }
}

impl<K, V> From<Map<K, V>> for BTreeMap<K, V>
where
    K: Ord,
{
    fn from(map: Map<K, V>) -> Self {
        map.entries.into_iter().collect()
    }
}

impl<K: Ord, V> From<BTreeMap<K, V>> for Map<K, V> {
    fn from(map: BTreeMap<K, V>) -> Self {
        // A BTreeMap iterates sorted, each key once: the invariant holds as it comes.
        Map {
            entries: map.into_iter().collect(),
        }
    }
}

impl<K: Serialize, V: Serialize> Serialize for Map<K, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (k, v) in &self.entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, K, V> Deserialize<'de> for Map<K, V>
where
    K: Deserialize<'de> + Ord,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor<K, V>(PhantomData<(K, V)>);

        impl<'de, K, V> Visitor<'de> for MapVisitor<K, V>
        where
            K: Deserialize<'de> + Ord,
            V: Deserialize<'de>,
        {
            type Value = Map<K, V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                // The hint is the input's claim: capped, as serde caps its own.
                let mut entries = Vec::with_capacity(access.size_hint().unwrap_or(0).min(64));
                while let Some(entry) = access.next_entry()? {
                    entries.push(entry);
                }
                Ok(Map::from_entries(entries))
            }
        }

        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}

impl<K: JsonSchema, V: JsonSchema> JsonSchema for Map<K, V> {
    fn inline_schema() -> bool {
        <BTreeMap<K, V>>::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        <BTreeMap<K, V>>::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        <BTreeMap<K, V>>::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        <BTreeMap<K, V>>::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::Map;
    // proptest is a native dev-dependency: the wasm test build leaves the property out.
    #[cfg(not(target_arch = "wasm32"))]
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn reads_writes_and_looks_up_as_a_btree_map_does() {
        let map: Map<String, u64> = serde_json::from_str(r#"{"vcpu": 8, "gpu": 2}"#).unwrap();
        assert_eq!(map.get("gpu"), Some(&2));
        assert!(!map.contains_key("disk"));
        assert_eq!(
            serde_json::to_string(&map).unwrap(),
            r#"{"gpu":2,"vcpu":8}"#
        );
        assert_eq!(format!("{map:?}"), r#"{"gpu": 2, "vcpu": 8}"#);
        let repeated: Map<String, u64> = serde_json::from_str(r#"{"a": 1, "a": 2}"#).unwrap();
        assert_eq!(repeated, Map::from([("a".to_owned(), 2)]));
        assert_eq!(
            BTreeMap::from(repeated),
            BTreeMap::from([("a".to_owned(), 2)])
        );
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        /// Whatever the order and repeats of its entries, a map equals the `BTreeMap` built
        /// from them: same entries in the same order, same lookups.
        #[test]
        fn behaves_as_a_btree_map(entries in prop::collection::vec((0u8..24, any::<u32>()), 0..40)) {
            let tree: BTreeMap<u8, u32> = entries.iter().copied().collect();
            let map = Map::from_entries(entries.clone());
            prop_assert_eq!(map.iter().collect::<Vec<_>>(), tree.iter().collect::<Vec<_>>());
            let mut inserted = Map::new();
            for (k, v) in &entries {
                inserted.insert(*k, *v);
            }
            prop_assert_eq!(&inserted, &map);
            for k in 0u8..24 {
                prop_assert_eq!(map.get(&k), tree.get(&k));
            }
            prop_assert_eq!(BTreeMap::from(map), tree);
        }
    }
}
