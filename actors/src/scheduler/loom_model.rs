//! Model checks (loom) of the caller-driven admission core: the real
//! [`Core`] (its ownership word, deferred FIFO, state and waiter entries on
//! loom's atomics and mutexes), with a stand-in for the scheduler actor
//! that counts its wake-ups and, once the callers are done, serves them
//! (`woken`, `run_handed`) as the actor would. [`BATCH`] and [`PASSES`]
//! are one under loom, so a caller hands over after one operation.
//!
//! Every model ends by asserting the accounting invariant: nothing is left
//! for an owner, and the queue's (pending, running) equal the waiters
//! still in line and the grants still held.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use loom::sync::atomic::Ordering::SeqCst;
use loom::thread;

use super::core::{Core, BATCH, PASSES};
use super::fixtures::{admit, attached, granted, provider, waiting, StandIn};
use super::queue::Ceilings;
use super::{AdmitReply, Ended, Rate, RateOwner, RunningGrant, Waiting};
use crate::accounts::Accounts;
use crate::limits::Limits;

fn setup(running_total: u32) -> (Arc<Core>, Arc<StandIn>) {
    assert_eq!((BATCH, PASSES), (1, 1), "the loom batch sizes");
    let ceilings = Ceilings {
        pending_total: 8,
        pending_per_tenant: 8,
        pending_per_provider: 8,
        running_total,
        running_per_tenant: running_total,
        running_per_provider: running_total,
    };
    attached(Core::new(ceilings, Accounts::new(&Limits::DEFAULT), 8))
}

/// The waiter's answer so far, polled once.
fn poll(waiting: &mut Waiting) -> Poll<Result<RunningGrant, Ended>> {
    Pin::new(waiting).poll(&mut Context::from_waker(Waker::noop()))
}

/// Serves the actor, then asserts nothing is left for an owner and the
/// counts are `expected`.
fn served(core: &Core, actor: &StandIn, expected: (u32, u32)) {
    actor.serve(core);
    assert!(core.is_unowned(), "an operation was left behind");
    assert_eq!(core.counts(), expected, "(pending, running)");
}

#[test]
fn a_grant_racing_its_waiters_cancel_is_returned_or_never_made() {
    crate::sync::model(
        "a_grant_racing_its_waiters_cancel_is_returned_or_never_made",
        Some(3),
        || {
            let (core, actor) = setup(1);
            let running = granted(admit(&core, "a"));
            let waiter = waiting(admit(&core, "b"));
            let releaser = thread::spawn(move || drop(running));
            drop(waiter);
            releaser.join().expect("releaser");
            served(&core, &actor, (0, 0));
        },
    );
}

#[test]
fn a_release_racing_close_grants_before_close_or_answers_closed_and_never_after() {
    crate::sync::model(
        "a_release_racing_close_grants_before_close_or_answers_closed_and_never_after",
        Some(3),
        || {
            let (core, actor) = setup(1);
            let running = granted(admit(&core, "a"));
            let mut waiter = waiting(admit(&core, "b"));
            let releaser = thread::spawn(move || drop(running));
            let closer = {
                let core = Arc::clone(&core);
                thread::spawn(move || {
                    core.close();
                    admit(&core, "c")
                })
            };
            releaser.join().expect("releaser");
            let late = closer.join().expect("closer");
            actor.serve(&core);
            // No grant after close: refused at once, or (left for the
            // owner) answered `Closed` through its entry.
            match late {
                AdmitReply::Ended(Ended::Closed) => {}
                AdmitReply::Waiting(mut late) => assert!(
                    matches!(poll(&mut late), Poll::Ready(Err(Ended::Closed))),
                    "an admit after close was not answered closed"
                ),
                other => panic!("an admit after close: {other:?}"),
            }
            match poll(&mut waiter) {
                Poll::Ready(Ok(grant)) => {
                    served(&core, &actor, (0, 1));
                    drop(grant);
                }
                Poll::Ready(Err(Ended::Closed)) => {}
                other => panic!("the waiter heard neither grant nor close: {other:?}"),
            }
            served(&core, &actor, (0, 0));
        },
    );
}

#[test]
fn two_releases_racing_for_one_waiter_grant_it_once() {
    crate::sync::model(
        "two_releases_racing_for_one_waiter_grant_it_once",
        Some(3),
        || {
            let (core, actor) = setup(2);
            let first = granted(admit(&core, "a"));
            let second = granted(admit(&core, "b"));
            let mut waiter = waiting(admit(&core, "c"));
            let one = thread::spawn(move || drop(first));
            let two = thread::spawn(move || drop(second));
            one.join().expect("first release");
            two.join().expect("second release");
            actor.serve(&core);
            let Poll::Ready(Ok(grant)) = poll(&mut waiter) else {
                panic!("the waiter was not granted");
            };
            served(&core, &actor, (0, 1));
            drop(grant);
            served(&core, &actor, (0, 0));
        },
    );
}

#[test]
fn operations_combined_under_contention_are_all_applied_and_handed_over() {
    crate::sync::model(
        "operations_combined_under_contention_are_all_applied_and_handed_over",
        Some(2),
        || {
            let (core, actor) = setup(1);
            let running = granted(admit(&core, "a"));
            let leaving = waiting(admit(&core, "b"));
            // A release, an admit and a cancel, each from its own thread:
            // whoever finds the queue owned leaves its operation.
            let releaser = thread::spawn(move || drop(running));
            let admitter = {
                let core = Arc::clone(&core);
                thread::spawn(move || admit(&core, "c"))
            };
            drop(leaving);
            releaser.join().expect("releaser");
            let admitted = admitter.join().expect("admitter");
            actor.serve(&core);
            // c was granted at once or in line; either way it ends granted.
            let grant = match admitted {
                AdmitReply::Granted(grant) => grant,
                AdmitReply::Waiting(mut waiter) => {
                    let Poll::Ready(Ok(grant)) = poll(&mut waiter) else {
                        panic!("c was left in line with capacity free");
                    };
                    grant
                }
                AdmitReply::Ended(ended) => panic!("c was refused: {ended:?}"),
            };
            served(&core, &actor, (0, 1));
            drop(grant);
            served(&core, &actor, (0, 0));
        },
    );
}

#[test]
fn a_hand_over_is_applied_once_by_a_caller_taking_it_back_or_by_the_actor() {
    crate::sync::model(
        "a_hand_over_is_applied_once_by_a_caller_taking_it_back_or_by_the_actor",
        Some(2),
        || {
            let (core, actor) = setup(2);
            let first = granted(admit(&core, "a"));
            let second = granted(admit(&core, "b"));
            let mut waiter = waiting(admit(&core, "c"));
            // Two releases race: whoever finds the queue owned leaves its
            // release, and an owner's pass of one operation hands the rest
            // to the actor, which is not served until the end.
            let one = thread::spawn(move || drop(first));
            drop(second);
            // A later caller may find that hand-over still waiting for the
            // actor: it takes it back and applies in its own passes.
            let late = admit(&core, "d");
            one.join().expect("release");
            actor.serve(&core);
            let Poll::Ready(Ok(c)) = poll(&mut waiter) else {
                panic!("c was not granted");
            };
            let d = match late {
                AdmitReply::Granted(grant) => grant,
                AdmitReply::Waiting(mut waiter) => {
                    let Poll::Ready(Ok(grant)) = poll(&mut waiter) else {
                        panic!("d was left in line with capacity free");
                    };
                    grant
                }
                AdmitReply::Ended(ended) => panic!("d was refused: {ended:?}"),
            };
            served(&core, &actor, (0, 2));
            drop((c, d));
            served(&core, &actor, (0, 0));
        },
    );
}

#[test]
fn with_the_actor_stopping_a_hand_over_is_applied_by_one_side() {
    crate::sync::model(
        "with_the_actor_stopping_a_hand_over_is_applied_by_one_side",
        Some(3),
        || {
            let (core, actor) = setup(2);
            let first = granted(admit(&core, "a"));
            let second = granted(admit(&core, "b"));
            let one = thread::spawn(move || drop(first));
            let stopper = {
                let (core, actor) = (Arc::clone(&core), Arc::clone(&actor));
                thread::spawn(move || {
                    actor.stopped.store(true, SeqCst);
                    core.stop();
                })
            };
            drop(second);
            one.join().expect("release");
            stopper.join().expect("stopper");
            // The actor is gone: nothing serves its wake-ups.
            assert!(core.is_unowned(), "a hand-over was lost with the actor");
            assert_eq!(core.counts(), (0, 0));
        },
    );
}

#[test]
fn a_token_awaited_by_a_group_any_owner_parks_reaches_the_alarm() {
    crate::sync::model(
        "a_token_awaited_by_a_group_any_owner_parks_reaches_the_alarm",
        Some(3),
        || {
            let (core, actor) = setup(4);
            let rate = Rate {
                requests: 1,
                period: Duration::from_secs(10),
                burst: 1,
            };
            core.configure_rate(RateOwner::Provider(provider()), rate)
                .expect("a first rate");
            let racing = {
                let core = Arc::clone(&core);
                thread::spawn(move || admit(&core, "b"))
            };
            let mine = admit(&core, "a");
            let theirs = racing.join().expect("admitter");
            let admissions = [mine, theirs];
            let grants = (admissions.iter())
                .filter(|a| matches!(a, AdmitReply::Granted(_)))
                .count();
            assert_eq!(grants, 1, "one token, one grant");
            actor.serve(&core);
            // Whoever parked the other admit asked the alarm for the
            // token (earlier than its deadline), and woke the actor.
            let (asked, token) = core.with_state(|s| (s.asked_alarm(), s.next_token()));
            let token = token.expect("the waiter's provider awaits a token");
            assert!(
                asked.is_some_and(|asked| asked <= token),
                "{asked:?} vs {token:?}"
            );
            assert!(actor.wakes() >= 1, "the actor was woken to set it");
            served(&core, &actor, (1, 1));
        },
    );
}
