//! Model checks (loom) of [`ConnTally`]: checkouts and returns racing the
//! epoch's retirement, the node's active and retired counts read by an
//! observer meanwhile (every interleaving within a preemption bound of 3);
//! a checkout on a retired epoch, which only ever adds to the retired count
//! (every interleaving).

use std::sync::Arc;

use loom::thread;

use super::ConnTally;
use crate::accounts::Accounts;
use crate::limits::Limits;

fn counts(tally: &ConnTally) -> (u32, u32) {
    tally.accounts().checked_out.totals()
}

#[test]
fn checkouts_racing_retirement_move_each_connection_once_and_never_wrap_a_count() {
    crate::sync::model(
        "checkouts_racing_retirement_move_each_connection_once_and_never_wrap_a_count",
        Some(3),
        || {
            let tally = Arc::new(ConnTally::new(Accounts::new(&Limits::DEFAULT)));
            tally.check_out();
            // One connection returned and one checked out while it retires.
            let worker = {
                let tally = Arc::clone(&tally);
                thread::spawn(move || {
                    tally.check_in();
                    tally.check_out();
                })
            };
            let observer = {
                let tally = Arc::clone(&tally);
                thread::spawn(move || {
                    let (active, retired) = counts(&tally);
                    // Neither count wraps below zero or counts a connection
                    // that was never checked out.
                    assert!(
                        active <= 2 && retired <= 2,
                        "a count wrapped: {active}, {retired}"
                    );
                })
            };
            tally.retire();
            worker.join().expect("worker");
            observer.join().expect("observer");
            assert_eq!(
                counts(&tally),
                (0, 1),
                "the held connection counts as retired, once"
            );
            tally.check_in();
            assert_eq!(counts(&tally), (0, 0));
        },
    );
}

#[test]
fn a_checkout_on_a_retired_epoch_only_ever_adds_to_the_retired_count() {
    crate::sync::model(
        "a_checkout_on_a_retired_epoch_only_ever_adds_to_the_retired_count",
        None,
        || {
            let tally = Arc::new(ConnTally::new(Accounts::new(&Limits::DEFAULT)));
            tally.retire();
            let worker = {
                let tally = Arc::clone(&tally);
                thread::spawn(move || tally.check_out())
            };
            // Once counted, the connection is never counted less than once.
            let (_, before) = counts(&tally);
            let (_, after) = counts(&tally);
            assert!(
                after >= before,
                "the retired count went from {before} to {after} during a checkout"
            );
            worker.join().expect("worker");
            assert_eq!(counts(&tally), (0, 1));
        },
    );
}
