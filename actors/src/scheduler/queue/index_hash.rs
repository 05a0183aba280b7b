//! The map of keys the engine mints itself — queue tickets (a counter)
//! and slab indices — hashed as the identity maps are: a rotate, a xor
//! and a multiply per integer, no seed.
//!
//! No caller chooses these keys, so no caller can flood a bucket with them;
//! identities that callers choose (tenants, providers) are hashed with a
//! key once, when validated, and their maps mix that keyed hash
//! (`identity::IdMap`).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::identity::IdHasher;

/// A map keyed by engine-minted integers, with the mixing hasher of the
/// identity maps: a minted integer is mixed as an identity's keyed hash
/// is, and the multiply spreads sequential keys over both the low bits
/// (bucket) and the high bits (tag) of the hash.
pub(crate) type IndexMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::hash::{BuildHasher, BuildHasherDefault};

    use crate::identity::IdHasher;

    #[test]
    fn sequential_keys_spread_over_buckets_and_tags() {
        let build = BuildHasherDefault::<IdHasher>::default();
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
