//! [`ConnTally`]: the checked-out connections of one epoch, counted in the
//! node's `connections_active` gauge, or in `connections_retired` once the
//! epoch retires — without a lock, since every checkout and return passes
//! here.
//!
//! One word holds the epoch's count and its retired bit. A checkout adds to
//! the gauge its bit names, then to the count; a return takes from the count,
//! then from the gauge the bit named at that instant. Retirement adds the
//! count to the retired gauge *before* it sets the bit (a compare-and-swap
//! that fails, and is retried, if the count moved meanwhile), then takes the
//! same amount from the active gauge.
//!
//! Invariants:
//! - A gauge is never decremented for a connection it does not already
//!   include, so neither gauge ever wraps below zero; a gauge may count a
//!   connection twice for an instant while it moves, never less than once.
//! - At rest, the active gauge holds this epoch's checked-out connections
//!   until it retires, and the retired gauge holds them after.

use std::sync::Arc;

use crate::accounts::Accounts;
use crate::sync::{AtomicU32, AtomicU64, Ordering};

const RETIRED: u64 = 1 << 63;
const COUNT: u64 = RETIRED - 1;

/// Checked-out connections of one epoch, and whether they count as active or
/// retired.
#[derive(Debug)]
pub(crate) struct ConnTally {
    word: AtomicU64,
    accounts: Arc<Accounts>,
}

impl ConnTally {
    pub(crate) fn new(accounts: Arc<Accounts>) -> Self {
        Self {
            word: AtomicU64::new(0),
            accounts,
        }
    }

    pub(crate) fn accounts(&self) -> &Arc<Accounts> {
        &self.accounts
    }

    fn gauge(&self, word: u64) -> &AtomicU32 {
        let gauges = &self.accounts.gauges;
        if word & RETIRED != 0 {
            &gauges.connections_retired
        } else {
            &gauges.connections_active
        }
    }

    pub(crate) fn check_out(&self) {
        let seen = self.word.load(Ordering::Acquire);
        self.gauge(seen).fetch_add(1, Ordering::AcqRel);
        let counted = self.word.fetch_add(1, Ordering::AcqRel);
        if (counted ^ seen) & RETIRED != 0 {
            // Retired in between: the move did not include this one.
            self.gauge(seen).fetch_sub(1, Ordering::AcqRel);
            self.gauge(counted).fetch_add(1, Ordering::AcqRel);
        }
    }

    pub(crate) fn check_in(&self) {
        let counted = self.word.fetch_sub(1, Ordering::AcqRel);
        self.gauge(counted).fetch_sub(1, Ordering::AcqRel);
    }

    pub(crate) fn retire(&self) {
        let gauges = &self.accounts.gauges;
        let mut word = self.word.load(Ordering::Acquire);
        while word & RETIRED == 0 {
            // The count fits a `u32`: it never exceeds the node's connections.
            let count = u32::try_from(word & COUNT).unwrap_or(u32::MAX);
            gauges
                .connections_retired
                .fetch_add(count, Ordering::AcqRel);
            match self.word.compare_exchange_weak(
                word,
                word | RETIRED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    gauges.connections_active.fetch_sub(count, Ordering::AcqRel);
                    return;
                }
                Err(now) => {
                    gauges
                        .connections_retired
                        .fetch_sub(count, Ordering::AcqRel);
                    word = now;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use super::ConnTally;
    use crate::accounts::Accounts;
    use crate::limits::Limits;

    fn gauges(t: &ConnTally) -> (u32, u32) {
        let g = &t.accounts().gauges;
        (
            g.connections_active.load(Ordering::Acquire),
            g.connections_retired.load(Ordering::Acquire),
        )
    }

    #[test]
    fn retirement_moves_the_checked_out_count_once() {
        let tally = ConnTally::new(Accounts::new(&Limits::DEFAULT));
        tally.check_out();
        tally.check_out();
        assert_eq!(gauges(&tally), (2, 0));
        tally.retire();
        tally.retire();
        assert_eq!(gauges(&tally), (0, 2));
        tally.check_out();
        tally.check_in();
        tally.check_in();
        assert_eq!(gauges(&tally), (0, 1));
        tally.check_in();
        assert_eq!(gauges(&tally), (0, 0));
    }

    #[test]
    fn racing_checkouts_and_a_retirement_count_exactly() {
        let accounts = Accounts::new(&Limits::DEFAULT);
        let tally = Arc::new(ConnTally::new(accounts));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let tally = Arc::clone(&tally);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        tally.check_out();
                        tally.check_in();
                    }
                    tally.check_out();
                })
            })
            .collect();
        tally.retire();
        for worker in workers {
            worker.join().expect("worker");
        }
        assert_eq!(gauges(&tally), (0, 4), "every held connection moved once");
    }
}

#[cfg(all(test, loom))]
mod loom_model;
