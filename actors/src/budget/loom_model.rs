//! Model checks (loom) of [`Budget`]: reservations racing releases and a
//! lowering at the bound, and a release racing a waiter. Every
//! interleaving (no preemption bound).

use std::sync::Arc;

use loom::thread;

use super::{Budget, Charge};

#[test]
fn reservations_racing_a_release_at_the_bound_never_overrun_it() {
    crate::sync::model(
        "reservations_racing_a_release_at_the_bound_never_overrun_it",
        None,
        || {
            let budget = Budget::new("connections", 1);
            let held = budget.try_reserve(1).expect("room");
            let releaser = thread::spawn(move || drop(held));
            let racer = {
                let budget = Arc::clone(&budget);
                thread::spawn(move || budget.try_reserve(1).ok())
            };
            let mine = budget.try_reserve(1).ok();
            releaser.join().expect("releaser");
            let theirs = racer.join().expect("racer");
            let live = [&mine, &theirs].iter().filter(|c| c.is_some()).count();
            assert!(live <= 1, "two charges on a budget of one");
            assert_eq!(budget.used() as usize, live, "use is the live charges");
            drop((mine, theirs));
            assert_eq!(budget.used(), 0, "every charge returned once");
        },
    );
}

#[test]
fn a_lowering_racing_reservations_keeps_use_within_the_limit_it_set() {
    crate::sync::model(
        "a_lowering_racing_reservations_keeps_use_within_the_limit_it_set",
        None,
        || {
            let budget = Budget::new("metadata_bytes", 2);
            let held = budget.try_reserve(1).expect("room");
            let lowering = {
                let budget = Arc::clone(&budget);
                thread::spawn(move || budget.set_limit(1).is_ok())
            };
            let racer = {
                let budget = Arc::clone(&budget);
                thread::spawn(move || budget.try_reserve(1).ok())
            };
            let lowered = lowering.join().expect("lowering");
            let theirs: Option<Charge> = racer.join().expect("racer");
            // The lowering and the reservation never both succeed: with one
            // unit held, the limit of 1 leaves no room, and a lowering below
            // the use is refused.
            assert!(
                !(lowered && theirs.is_some()),
                "overrun by a racing lowering"
            );
            assert_eq!(budget.limit(), if lowered { 1 } else { 2 });
            assert!(budget.used() <= budget.limit());
            drop((held, theirs));
            assert_eq!(budget.used(), 0);
        },
    );
}

#[test]
fn a_release_racing_a_waiter_wakes_it_or_leaves_it_the_room() {
    crate::sync::model(
        "a_release_racing_a_waiter_wakes_it_or_leaves_it_the_room",
        None,
        || {
            let budget = Budget::waitable("connections_per_tenant", 1);
            let held = budget.try_reserve(1).expect("room");
            let releaser = thread::spawn(move || drop(held));
            // The waiter's steps of `reserve_within`: counted, then an
            // attempt; it would then wait for the wake-up.
            let freed = budget.freed.as_ref().expect("a waitable budget");
            let waiter = budget.count_waiter(freed);
            let mine = budget.try_reserve(1).ok();
            releaser.join().expect("releaser");
            let woken = {
                let notified = freed.notify.notified();
                let mut notified = std::pin::pin!(notified);
                notified.as_mut().enable()
            };
            assert!(
                mine.is_some() || woken,
                "the release and the waiter missed each other: a lost wake-up"
            );
            drop((waiter, mine));
            assert_eq!(budget.used(), 0, "every charge returned once");
        },
    );
}

#[test]
fn a_release_with_nobody_waiting_sends_no_wake_up() {
    crate::sync::model(
        "a_release_with_nobody_waiting_sends_no_wake_up",
        None,
        || {
            let budget = Budget::waitable("connections_per_tenant", 1);
            let held = budget.try_reserve(1).expect("room");
            let releaser = thread::spawn(move || drop(held));
            releaser.join().expect("releaser");
            let freed = budget.freed.as_ref().expect("a waitable budget");
            let notified = freed.notify.notified();
            let mut notified = std::pin::pin!(notified);
            assert!(
                !notified.as_mut().enable(),
                "a wake-up with nobody to take it"
            );
        },
    );
}
