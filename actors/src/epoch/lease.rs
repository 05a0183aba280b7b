//! The lease count that keeps a retired epoch alive.
//!
//! One atomic word per epoch: bit 63 says the epoch is retired, bit 62 that its
//! drain notice was claimed, the low bits count outstanding leases.
//!
//! Invariants:
//! - No lease is acquired after retirement: work accepted earlier finishes on
//!   this epoch, new work goes to its successor.
//! - The drain notice is claimed exactly once, by whichever of `retire` and the
//!   last `release` observes "retired and no lease".

use crate::sync::{AtomicU64, Ordering};

const RETIRED: u64 = 1 << 63;
const NOTICE_CLAIMED: u64 = 1 << 62;
const COUNT: u64 = NOTICE_CLAIMED - 1;

/// Outstanding leases on one epoch, plus its retirement flags.
#[derive(Debug, Default)]
pub(crate) struct LeaseWord(AtomicU64);

/// What a state change asks its caller to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drain {
    /// Nothing: leases remain, or another caller sends the notice.
    Pending,
    /// This caller claimed the notice: the epoch is retired and unleased.
    Notify,
}

impl LeaseWord {
    /// Takes one lease; false once the epoch is retired.
    pub(crate) fn acquire(&self) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                // The count is bounded by the leases the limits allow, far
                // below 2^62; saturating keeps the flags intact regardless.
                (word & RETIRED == 0 && word & COUNT < COUNT).then_some(word + 1)
            })
            .is_ok()
    }

    /// Returns one lease taken by [`LeaseWord::acquire`].
    pub(crate) fn release(&self) -> Drain {
        let after = self.0.fetch_sub(1, Ordering::AcqRel) - 1;
        if after & RETIRED != 0 && after & COUNT == 0 {
            self.claim_notice()
        } else {
            Drain::Pending
        }
    }

    /// Marks the epoch retired; a second call does nothing.
    pub(crate) fn retire(&self) -> Drain {
        let before = self.0.fetch_or(RETIRED, Ordering::AcqRel);
        if before & RETIRED == 0 && before & COUNT == 0 {
            self.claim_notice()
        } else {
            Drain::Pending
        }
    }

    pub(crate) fn is_retired(&self) -> bool {
        self.0.load(Ordering::Acquire) & RETIRED != 0
    }

    #[cfg(test)]
    pub(crate) fn leases(&self) -> u64 {
        self.0.load(Ordering::Acquire) & COUNT
    }

    fn claim_notice(&self) -> Drain {
        if self.0.fetch_or(NOTICE_CLAIMED, Ordering::AcqRel) & NOTICE_CLAIMED == 0 {
            Drain::Notify
        } else {
            Drain::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn retiring_an_unleased_epoch_notifies_once() {
        let word = LeaseWord::default();
        assert_eq!(word.retire(), Drain::Notify);
        assert_eq!(word.retire(), Drain::Pending);
        assert!(!word.acquire(), "no lease after retirement");
    }

    #[test]
    fn the_last_release_after_retirement_notifies() {
        let word = LeaseWord::default();
        assert!(word.acquire());
        assert!(word.acquire());
        assert_eq!(word.retire(), Drain::Pending);
        assert_eq!(word.release(), Drain::Pending);
        assert_eq!(word.release(), Drain::Notify);
        assert_eq!(word.leases(), 0);
    }

    #[test]
    fn a_saturated_count_refuses_a_lease_and_leaves_the_flags_alone() {
        let word = LeaseWord(AtomicU64::new(COUNT));
        assert!(!word.acquire(), "no lease past the count's bound");
        assert_eq!(word.leases(), COUNT, "the count did not wrap");
        assert!(!word.is_retired());
        assert_eq!(
            word.retire(),
            Drain::Pending,
            "leases remain and the notice is still unclaimed"
        );
    }

    #[test]
    fn racing_releases_and_retire_notify_exactly_once() {
        for _ in 0..200 {
            let word = Arc::new(LeaseWord::default());
            for _ in 0..4 {
                assert!(word.acquire());
            }
            let racers: Vec<_> = (0..5)
                .map(|i| {
                    let word = Arc::clone(&word);
                    std::thread::spawn(move || {
                        if i == 0 {
                            word.retire()
                        } else {
                            word.release()
                        }
                    })
                })
                .collect();
            let notices = racers
                .into_iter()
                .map(|r| r.join().expect("racer"))
                .filter(|d| *d == Drain::Notify)
                .count();
            assert_eq!(notices, 1);
        }
    }
}

#[cfg(all(test, loom))]
mod loom_model;
