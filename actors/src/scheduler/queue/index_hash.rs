//! A hasher for keys the engine mints itself — queue tickets (a counter)
//! and slab indices: a rotate, a xor and a multiply per integer, no seed.
//!
//! No caller chooses these keys, so no caller can flood a bucket with them;
//! identities that callers choose (tenants, providers) are hashed with a
//! key once, when validated, and their maps mix that keyed hash
//! (`identity::IdMap`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by engine-minted integers.
pub(crate) type IndexMap<K, V> = HashMap<K, V, BuildHasherDefault<IndexHasher>>;

/// The hasher of [`IndexMap`]; the multiply spreads sequential keys over
/// both the low bits (bucket) and the high bits (tag) of the hash.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IndexHasher(u64);

impl IndexHasher {
    fn mix(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl Hasher for IndexHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.mix(u64::from(byte));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.mix(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn sequential_keys_spread_over_buckets_and_tags() {
        let build = BuildHasherDefault::<IndexHasher>::default();
        let hashes: Vec<u64> = (0..4096u64).map(|n| build.hash_one(n)).collect();
        let buckets: HashSet<u64> = hashes.iter().map(|h| h & 4095).collect();
        let tags: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert!(buckets.len() > 2048, "{} of 4096 buckets", buckets.len());
        assert_eq!(tags.len(), 128, "every 7-bit tag is used");
        let pairs: HashSet<u64> = (0..64u32)
            .flat_map(|t| (0..64u32).map(move |p| (t, p)))
            .map(|pair| build.hash_one(pair))
            .collect();
        assert_eq!(pairs.len(), 64 * 64, "index pairs do not collide");
    }
}
