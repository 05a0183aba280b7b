//! Equal jitter from a per-cycle seed: non-cryptographic scheduling state.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// A small splitmix64 generator seeded from the standard library's
/// randomized hasher.
#[derive(Debug, Clone)]
pub(crate) struct Jitter(u64);

impl Jitter {
    /// A generator seeded from a fresh randomized hasher.
    pub(crate) fn seeded() -> Self {
        Self(RandomState::new().build_hasher().finish())
    }

    /// A generator with a fixed seed (tests).
    #[cfg(test)]
    pub(crate) fn with_seed(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A wait between half `ceiling` (rounded up, in nanoseconds) and
    /// `ceiling`, both included; zero stays zero.
    pub(crate) fn equal(&mut self, ceiling: Duration) -> Duration {
        let ceiling = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        if ceiling == 0 {
            return Duration::ZERO;
        }
        let low = ceiling.div_ceil(2);
        let span = ceiling - low + 1;
        Duration::from_nanos(low + self.next() % span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_stays_zero() {
        let mut jitter = Jitter::with_seed(7);
        assert_eq!(jitter.equal(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn a_wait_lies_between_half_rounded_up_and_the_ceiling() {
        let mut jitter = Jitter::with_seed(1);
        let ceiling = Duration::from_nanos(3);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let wait = jitter.equal(ceiling);
            assert!((2..=3).contains(&wait.as_nanos()), "{wait:?}");
            seen.insert(wait.as_nanos());
        }
        assert_eq!(seen.len(), 2, "both ends are reached");
    }

    #[test]
    fn fresh_seeds_differ() {
        assert_ne!(Jitter::seeded().next(), Jitter::seeded().next());
    }
}
