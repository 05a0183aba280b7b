//! [`CheckedOutCount`]: the checked-out connections of one epoch, and
//! [`CheckedOutCounts`], which reads them all for the node's snapshot.
//!
//! Every checkout and return passes through an epoch's word, so the word is
//! all they touch: one read-modify-write each, on the epoch's own word (on
//! a cache line of its own), and nothing node-wide. The node's active and
//! retired counts are not kept as gauges beside the words; a snapshot sums
//! the words of the epochs alive.
//!
//! One word holds the epoch's count and its retired bit. A checkout adds to
//! the count, a return takes from it, retirement sets the bit; the bit says
//! whether the count is read as active or as retired connections.
//!
//! Invariants:
//! - Each checked-out connection is counted once, in exactly one of the
//!   two counts, in every read: both come from one load of the word.
//! - A word is read until its epoch is gone; an epoch outlives its
//!   checked-out connections, so a word that is gone counted nothing.
//! - The list's lock is held to register a word or to read the words,
//!   never by a checkout or a return.

use std::sync::{Arc, PoisonError, Weak};

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, Mutex, Ordering};

const RETIRED: u64 = 1 << 63;
const COUNT: u64 = RETIRED - 1;

/// The checked-out connections of one epoch, and whether they count as
/// active or retired.
#[derive(Debug, Default)]
pub(crate) struct CheckedOutCount {
    /// On a cache line of its own: every checkout and return writes it,
    /// from every worker thread.
    word: CachePadded<AtomicU64>,
}

impl CheckedOutCount {
    /// Counts one connection out.
    pub(crate) fn check_out(&self) {
        self.word.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts one connection back in (or destroyed while out).
    pub(crate) fn check_in(&self) {
        self.word.fetch_sub(1, Ordering::AcqRel);
    }

    /// From now on, its connections count as retired (idempotent).
    pub(crate) fn retire(&self) {
        self.word.fetch_or(RETIRED, Ordering::AcqRel);
    }

    /// `(active, retired)`: its count, on the side its bit names.
    fn read(&self) -> (u32, u32) {
        let word = self.word.load(Ordering::Acquire);
        let count = u32::try_from(word & COUNT).unwrap_or(u32::MAX);
        if word & RETIRED == 0 {
            (count, 0)
        } else {
            (0, count)
        }
    }
}

/// Every live epoch's [`CheckedOutCount`], for the node's counts.
#[derive(Debug, Default)]
pub(crate) struct CheckedOutCounts {
    words: Mutex<Vec<Weak<CheckedOutCount>>>,
}

impl CheckedOutCounts {
    /// A new epoch's word, read by [`Self::totals`] while the epoch lives.
    pub(crate) fn register(&self) -> Arc<CheckedOutCount> {
        let word = Arc::new(CheckedOutCount::default());
        let mut words = self.words.lock().unwrap_or_else(PoisonError::into_inner);
        words.retain(|word| word.strong_count() > 0);
        words.push(Arc::downgrade(&word));
        word
    }

    /// `(active, retired)` connections of the node: the sum over the live
    /// epochs.
    pub(crate) fn totals(&self) -> (u32, u32) {
        let words = self.words.lock().unwrap_or_else(PoisonError::into_inner);
        words
            .iter()
            .filter_map(Weak::upgrade)
            .map(|word| word.read())
            .fold((0, 0), |(active, retired), (a, r)| {
                (active.saturating_add(a), retired.saturating_add(r))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::CheckedOutCounts;

    #[test]
    fn the_totals_sum_the_live_epochs_each_on_its_side() {
        let counts = CheckedOutCounts::default();
        let current = counts.register();
        let retired = counts.register();
        current.check_out();
        current.check_out();
        retired.check_out();
        retired.retire();
        assert_eq!(counts.totals(), (2, 1));
        retired.check_in();
        current.check_in();
        assert_eq!(counts.totals(), (1, 0));
    }

    #[test]
    fn a_word_whose_epoch_is_gone_is_forgotten() {
        let counts = CheckedOutCounts::default();
        let gone = counts.register();
        drop(gone);
        let kept = counts.register();
        kept.check_out();
        assert_eq!(counts.totals(), (1, 0));
        let words = counts.words.lock().expect("lock");
        assert_eq!(
            words.len(),
            1,
            "the dead word is pruned at the next registration"
        );
    }
}
