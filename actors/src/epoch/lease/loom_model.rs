//! Model checks (loom) of [`LeaseWord`]: a lease taken racing the
//! retirement and the last release of an epoch. Every interleaving (no
//! preemption bound).

use std::sync::Arc;

use loom::thread;

use super::{Drain, LeaseWord};

#[test]
fn a_lease_racing_retirement_and_the_last_release_never_outlives_the_drain_notice() {
    crate::sync::model(
        "a_lease_racing_retirement_and_the_last_release_never_outlives_the_drain_notice",
        None,
        || {
            let word = Arc::new(LeaseWord::default());
            assert!(word.acquire());
            let retirer = {
                let word = Arc::clone(&word);
                thread::spawn(move || word.retire())
            };
            let releaser = {
                let word = Arc::clone(&word);
                thread::spawn(move || word.release())
            };
            // A late caller: leases the epoch unless it is already retired,
            // and returns its lease when done.
            let late = match word.acquire() {
                true => Some(word.release()),
                false => None,
            };
            let drains = [
                Some(retirer.join().expect("retirer")),
                Some(releaser.join().expect("releaser")),
                late,
            ];
            let notices = drains.iter().filter(|d| **d == Some(Drain::Notify)).count();
            assert_eq!(notices, 1, "the drain notice is claimed exactly once");
            assert!(word.is_retired());
            assert_eq!(word.leases(), 0, "no lease left behind the notice");
            assert!(!word.acquire(), "no lease after retirement");
        },
    );
}

#[test]
fn a_lease_taken_racing_the_last_release_of_a_retired_epoch_is_refused() {
    crate::sync::model(
        "a_lease_taken_racing_the_last_release_of_a_retired_epoch_is_refused",
        None,
        || {
            let word = Arc::new(LeaseWord::default());
            assert!(word.acquire());
            assert!(word.acquire());
            assert_eq!(word.retire(), Drain::Pending, "two leases outstanding");
            // The last two releases race a caller that still finds the
            // epoch published and tries to lease it.
            let releasers: Vec<_> = (0..2)
                .map(|_| {
                    let word = Arc::clone(&word);
                    thread::spawn(move || word.release())
                })
                .collect();
            let late = word.acquire();
            let notices = releasers
                .into_iter()
                .map(|r| r.join().expect("releaser"))
                .filter(|d| *d == Drain::Notify)
                .count();
            assert!(!late, "a retired epoch was leased");
            assert_eq!(notices, 1, "the last release sends the drain notice once");
            assert_eq!(word.leases(), 0);
        },
    );
}
