//! Model checks (loom) of the wake-up protocol between the epoch actor and
//! the tasks that park or destroy a client's connections: the real
//! [`WaitNotice`], [`Budget`] and [`IdleStash`], every interleaving and
//! memory ordering loom explores (unbounded, but for the two-release model:
//! a preemption bound of 3, 4,705 interleavings against 563,352 unbounded,
//! which passed too but takes minutes).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p provider-pools-actors
//! --lib -- loom_model` (`scripts/test` does, in `target/loom`).
//!
//! Loom models `SeqCst` fences exactly (the release side's only `SeqCst`
//! guarantee) and the stash's lock, which orders a park against the
//! actor's last look; its treatment of `SeqCst` accesses as `AcqRel` is
//! weaker than the real one, so a model that passes here holds on
//! hardware too.
//!
//! A lost wake-up shows as the actor's wait never ending: loom then fails
//! the model for exceeding its branch limit.

use std::any::TypeId;
use std::sync::Arc;
use std::time::Duration;

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::{WaitNotice, WakeSlot};
use crate::budget::{Budget, Charge};
use crate::epoch::idle::{IdleConn, IdleStash};

/// A wake-up slot that counts what it sends.
struct Counting(Arc<AtomicUsize>);

impl WakeSlot for Counting {
    fn wake(self, _client: usize) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// The actor's side: waits for the wake-up after `seen`, then re-arms the
/// notice before it looks again (as `Clients::wake` does).
fn await_wake(notice: &WaitNotice<Counting>, wakes: &Arc<AtomicUsize>, seen: &mut usize) {
    while wakes.load(SeqCst) == *seen {
        thread::yield_now();
    }
    *seen = wakes.load(SeqCst);
    notice.arm(Some(Counting(Arc::clone(wakes))));
}

#[test]
fn a_release_racing_the_actors_last_look_is_seen_by_one_of_them() {
    crate::sync::model(
        "a_release_racing_the_actors_last_look_is_seen_by_one_of_them",
        None,
        || {
            let budget = Budget::new("connections_per_client", 1);
            let held = budget.try_reserve(1).expect("room");
            let wakes = Arc::new(AtomicUsize::new(0));
            let notice = Arc::new(WaitNotice::new(0, None));
            notice.arm(Some(Counting(Arc::clone(&wakes))));
            let releaser = {
                let notice = Arc::clone(&notice);
                thread::spawn(move || {
                    drop(held);
                    notice.notify();
                })
            };
            // The actor: a waiter is counted before the last look.
            notice.set_waiting(1);
            let looked = budget.try_reserve(1).ok();
            releaser.join().expect("releaser");
            let woken = wakes.load(SeqCst);
            assert!(
                looked.is_some() || woken == 1,
                "the release was lost: the look missed it and no wake-up was sent"
            );
            assert!(woken <= 1, "one armed slot sends at most one wake-up");
            drop(looked);
            assert_eq!(budget.used(), 0);
        },
    );
}

#[test]
fn two_releases_racing_the_actor_each_reach_a_waiter_through_one_slot_at_a_time() {
    crate::sync::model(
        "two_releases_racing_the_actor_each_reach_a_waiter_through_one_slot_at_a_time",
        Some(3),
        || {
            let budget = Budget::new("connections_per_client", 2);
            let held = [
                budget.try_reserve(1).expect("room"),
                budget.try_reserve(1).expect("room"),
            ];
            let wakes = Arc::new(AtomicUsize::new(0));
            let notice = Arc::new(WaitNotice::new(0, None));
            notice.arm(Some(Counting(Arc::clone(&wakes))));
            let releasers: Vec<_> = held
                .into_iter()
                .map(|charge| {
                    let notice = Arc::clone(&notice);
                    thread::spawn(move || {
                        drop(charge);
                        notice.notify();
                    })
                })
                .collect();
            // The actor serves two waiters: it looks, and while a waiter is
            // left, waits for a wake-up, re-arms, and looks again.
            let mut served: Vec<Charge> = Vec::new();
            let mut seen = 0;
            loop {
                notice.set_waiting(2 - served.len());
                while served.len() < 2 {
                    match budget.try_reserve(1) {
                        Ok(charge) => served.push(charge),
                        Err(_) => break,
                    }
                }
                if served.len() == 2 {
                    notice.set_waiting(0);
                    break;
                }
                await_wake(&notice, &wakes, &mut seen);
            }
            for releaser in releasers {
                releaser.join().expect("releaser");
            }
            assert!(wakes.load(SeqCst) <= 2, "at most one wake-up per release");
            drop(served);
            assert_eq!(budget.used(), 0, "no charge lost or doubled");
        },
    );
}

fn idle_entry(node: &Arc<Budget>, client: &Arc<Budget>) -> IdleConn {
    IdleConn::charged(7u32, node, client, None)
}

#[test]
fn a_park_racing_the_actors_last_look_is_seen_by_one_of_them() {
    crate::sync::model(
        "a_park_racing_the_actors_last_look_is_seen_by_one_of_them",
        None,
        || {
            let node = Budget::new("connections", 1);
            let client = Budget::new("connections_per_client", 1);
            let stash = Arc::new(IdleStash::new(0, None));
            let entry = idle_entry(&node, &client);
            // The park: its push, and the waiter count it reads under the
            // stash's lock (it wakes the actor when that is not zero).
            let parker = {
                let stash = Arc::clone(&stash);
                thread::spawn(move || stash.put(entry))
            };
            // The actor: a waiter is counted before the last look.
            stash.notice().set_waiting(1);
            let looked = stash.take(TypeId::of::<u32>(), Duration::from_secs(60));
            let saw_waiter = parker.join().expect("parker");
            assert!(
                looked.is_some() || saw_waiter,
                "the park was lost: the look missed it and the park saw no waiter"
            );
            stash.notice().set_waiting(0);
            drop(looked);
            stash.clear();
            assert_eq!((node.used(), client.used()), (0, 0));
        },
    );
}
