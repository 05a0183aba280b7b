//! Hashing of the identities callers choose: a name is hashed once, when it
//! is validated, by SipHash under a key drawn at random for the process;
//! a map of identities ([`IdMap`], [`IdSet`]) then mixes that one integer
//! instead of hashing the name again at every lookup.
//!
//! Invariants, one per line:
//! - Equal names have equal hashes (one key per process).
//! - A caller cannot predict a name's hash (the key is random and never
//!   leaves the process), so cannot aim names at one bucket.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::OnceLock;

/// A map keyed by identities (or tuples of them).
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// A set of identities.
pub(crate) type IdSet<K> = HashSet<K, BuildHasherDefault<IdHasher>>;

/// The process's key for hashing names.
static KEY: OnceLock<RandomState> = OnceLock::new();

/// `name`'s keyed hash.
pub(super) fn keyed_hash(name: &str) -> u64 {
    KEY.get_or_init(RandomState::new).hash_one(name)
}

/// The hasher of [`IdMap`]: a rotate, a xor and a multiply per integer
/// written, no key of its own. An identity writes its keyed hash, one
/// integer; anything else hashed with it is mixed in the same way.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl IdHasher {
    fn mix(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl Hasher for IdHasher {
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

    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::hash::{BuildHasher, BuildHasherDefault};

    use super::IdHasher;
    use crate::identity::{ProviderId, TenantId};

    #[test]
    fn equal_names_hash_alike_and_similar_names_spread() {
        let build = BuildHasherDefault::<IdHasher>::default();
        let a = TenantId::new("tenant-1").expect("valid");
        let b = TenantId::new(String::from("tenant-1")).expect("valid");
        assert_eq!(a, b);
        assert_eq!(build.hash_one(&a), build.hash_one(&b));
        let hashes: HashSet<u64> = (0..4096)
            .map(|n| build.hash_one(TenantId::new(format!("t{n}")).expect("valid")))
            .collect();
        assert_eq!(hashes.len(), 4096, "no two names collide");
        let buckets: HashSet<u64> = hashes.iter().map(|h| h & 4095).collect();
        assert!(buckets.len() > 2048, "{} of 4096 buckets", buckets.len());
        let tags: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert_eq!(tags.len(), 128, "every 7-bit tag is used");
    }

    #[test]
    fn a_pair_hashes_by_both_names() {
        let build = BuildHasherDefault::<IdHasher>::default();
        let t = |n: &str| TenantId::new(n).expect("valid");
        let p = |n: &str| ProviderId::new(n).expect("valid");
        let pairs: HashSet<u64> = (0..64)
            .flat_map(|x| (0..64).map(move |y| (x, y)))
            .map(|(x, y)| build.hash_one((t(&format!("t{x}")), p(&format!("p{y}")))))
            .collect();
        assert_eq!(pairs.len(), 64 * 64, "pairs do not collide");
    }
}
