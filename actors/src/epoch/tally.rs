//! [`ConnTally`]: the checked-out connections of one epoch, counted as
//! active until the epoch retires and as retired after — without a lock,
//! since every checkout and return passes here.
//!
//! The count is the epoch's own word in the node's list of them
//! ([`CheckedOutCount`]): a checkout or a return moves only that word, and the
//! node's snapshot sums the words of the live epochs.
//!
//! Invariants:
//! - Each checked-out connection is counted once, as active or as retired,
//!   in every snapshot: the count and the retired bit are one word.
//! - At rest, the active count holds this epoch's checked-out connections
//!   until it retires, and the retired count holds them after.

use std::sync::Arc;

use crate::accounts::{Accounts, CheckedOutCount};

/// Checked-out connections of one epoch, and whether they count as active or
/// retired.
#[derive(Debug)]
pub(crate) struct ConnTally {
    word: Arc<CheckedOutCount>,
    accounts: Arc<Accounts>,
}

impl ConnTally {
    /// A tally counted in `accounts`' list of epochs while it lives.
    pub(crate) fn new(accounts: Arc<Accounts>) -> Self {
        Self {
            word: accounts.checked_out.register(),
            accounts,
        }
    }

    /// The node's accounts the tally is counted in.
    pub(crate) fn accounts(&self) -> &Arc<Accounts> {
        &self.accounts
    }

    /// Counts one connection out.
    pub(crate) fn check_out(&self) {
        self.word.check_out();
    }

    /// Counts one connection back in (or destroyed while out).
    pub(crate) fn check_in(&self) {
        self.word.check_in();
    }

    /// The epoch retired: its checked-out connections count as retired from
    /// now on (idempotent).
    pub(crate) fn retire(&self) {
        self.word.retire();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::ConnTally;
    use crate::accounts::Accounts;
    use crate::limits::Limits;

    fn counts(t: &ConnTally) -> (u32, u32) {
        t.accounts().checked_out.totals()
    }

    #[test]
    fn retirement_moves_the_checked_out_count_once() {
        let tally = ConnTally::new(Accounts::new(&Limits::DEFAULT));
        tally.check_out();
        tally.check_out();
        assert_eq!(counts(&tally), (2, 0));
        tally.retire();
        tally.retire();
        assert_eq!(counts(&tally), (0, 2));
        tally.check_out();
        tally.check_in();
        tally.check_in();
        assert_eq!(counts(&tally), (0, 1));
        tally.check_in();
        assert_eq!(counts(&tally), (0, 0));
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
        assert_eq!(counts(&tally), (0, 4), "every held connection moved once");
    }
}

#[cfg(all(test, loom))]
mod loom_model;
