//! A fast hasher for the planner's maps (the FxHash of rustc): keys are short names and ids,
//! and SipHash's resistance to crafted collisions buys nothing in a pure function over a
//! document of at most a few thousand items per list, while costing a sixth of a plan.

use std::hash::{BuildHasherDefault, Hasher};

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// FxHash: rotate, xor, multiply per 8-byte word.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, b: u8) {
        self.add(u64::from(b));
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // hashbrown takes its control bits from the top of the hash: spread the low bits up.
        self.0.rotate_left(26)
    }
}

/// A `HashMap` with [`FxHasher`].
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;
/// A `HashSet` with [`FxHasher`].
pub(crate) type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<FxHasher>>;

/// Values by the 64-bit hash of a key kept elsewhere (the validator's key buffer, the
/// document's flavors), so that recording a key allocates nothing. FxHash is easy to collide
/// on purpose, so a hash is never taken for its key: the caller's `same` checks each hit, and
/// a different key with a taken hash is kept beside the map, found by a scan (rare by chance;
/// crafted, at most a list's 1000 items).
pub(crate) struct HashIndex<V> {
    first: HashMap<u64, V>,
    collided: Vec<(u64, V)>,
}

impl<V> Default for HashIndex<V> {
    fn default() -> Self {
        HashIndex {
            first: HashMap::default(),
            collided: Vec::new(),
        }
    }
}

impl<V: Copy> HashIndex<V> {
    /// Forgets every key, keeping the memory.
    pub(crate) fn clear(&mut self) {
        self.first.clear();
        self.collided.clear();
    }

    /// The value recorded for the key that hashes to `hash` and for which `same` holds; when
    /// there is none, records `value` for this key and answers `None`.
    pub(crate) fn get_or_insert(
        &mut self,
        hash: u64,
        value: V,
        mut same: impl FnMut(V) -> bool,
    ) -> Option<V> {
        use std::collections::hash_map::Entry;
        match self.first.entry(hash) {
            Entry::Vacant(slot) => {
                slot.insert(value);
                None
            }
            Entry::Occupied(entry) if same(*entry.get()) => Some(*entry.get()),
            Entry::Occupied(_) => {
                let found = self
                    .collided
                    .iter()
                    .find(|&&(h, v)| h == hash && same(v))
                    .map(|&(_, v)| v);
                if found.is_none() {
                    self.collided.push((hash, value));
                }
                found
            }
        }
    }
}

/// Two different names (16 characters of `a-z0-9`) that leave `state` alike once it has
/// written either: FxHash collided on purpose, as anyone can. A name's two 8-byte words go
/// `s -> (rotl(s, 5) ^ w) * K`; after first words that leave states `s` and `t`, second words
/// `x` and `y` with `x ^ y == rotl(s, 5) ^ rotl(t, 5)` end equal (`K` is odd).
#[cfg(test)]
pub(crate) fn colliding_names(state: FxHasher) -> (String, String) {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let word = |mut n: u64| {
        let mut w = [0u8; 8];
        for b in &mut w {
            *b = CHARS[(n % 36) as usize];
            n /= 36;
        }
        w
    };
    let after = |w: [u8; 8]| {
        let mut h = state;
        h.add(u64::from_le_bytes(w));
        h.0.rotate_left(5)
    };
    let (a, ra) = (word(0), after(word(0)));
    for n in 1.. {
        let b = word(n);
        let d = (ra ^ after(b)).to_le_bytes();
        let (mut x, mut y) = ([0u8; 8], [0u8; 8]);
        let found = (0..8).all(|i| {
            CHARS
                .iter()
                .find(|&&c| CHARS.contains(&(c ^ d[i])))
                .map(|&c| (x[i], y[i]) = (c, c ^ d[i]))
                .is_some()
        });
        if found {
            let name = |w: [u8; 8], v: [u8; 8]| String::from_utf8([w, v].concat()).expect("ASCII");
            return (name(a, x), name(b, y));
        }
    }
    unreachable!()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colliding_names_collide() {
        let (a, b) = colliding_names(FxHasher::default());
        assert_ne!(a, b);
        let hash = |name: &str| {
            let mut h = FxHasher::default();
            h.write(name.as_bytes());
            h.finish()
        };
        assert_eq!(hash(&a), hash(&b), "{a} {b}");
    }

    #[test]
    fn a_hash_index_tells_colliding_keys_apart() {
        // Every key hashes to 7: only `same` tells them apart.
        let keys = ["a", "b", "c"];
        let mut index = HashIndex::default();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(index.get_or_insert(7, i, |j| keys[j] == *key), None);
        }
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(index.get_or_insert(7, 99, |j| keys[j] == *key), Some(i));
        }
        index.clear();
        assert_eq!(index.get_or_insert(7, 0, |_| true), None);
    }
}
