//! Model check (loom) of a connection's charges shared with its driver:
//! the connection and the driver let go of them on two threads, in every
//! interleaving; the node's and the client's charges return exactly once,
//! and only after both have let go.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p provider-pools-actors
//! --lib -- loom_model` (`scripts/test` does, in `target/loom`).

use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::thread;

use super::ConnCharges;
use crate::budget::Budget;
use crate::epoch::notice::WaitNotice;

#[test]
fn shared_charges_return_once_after_the_connection_and_its_driver_let_go() {
    crate::sync::model(
        "shared_charges_return_once_after_the_connection_and_its_driver_let_go",
        None,
        || {
            let node = Budget::new("connections", 1);
            let client = Budget::new("connections_per_client", 1);
            let charges = ConnCharges::new(
                node.try_reserve(1).expect("room on the node"),
                client.try_reserve(1).expect("room on the client"),
                Arc::new(WaitNotice::new(0, None)),
            );
            let driver = charges.for_driver();
            // Each holder says it lets go before it drops its share.
            let connection_going = Arc::new(AtomicBool::new(false));
            let driver_going = Arc::new(AtomicBool::new(false));
            let destroy = {
                let going = Arc::clone(&connection_going);
                thread::spawn(move || {
                    going.store(true, SeqCst);
                    drop(charges);
                })
            };
            let join = {
                let going = Arc::clone(&driver_going);
                thread::spawn(move || {
                    going.store(true, SeqCst);
                    drop(driver);
                })
            };
            if node.used() == 0 {
                assert!(
                    connection_going.load(SeqCst) && driver_going.load(SeqCst),
                    "the charge returned while a holder still had it"
                );
            }
            destroy.join().expect("the connection's thread");
            join.join().expect("the driver's thread");
            assert_eq!(node.used(), 0, "the node's charge returned");
            assert_eq!(client.used(), 0, "the client's charge returned");
        },
    );
}
