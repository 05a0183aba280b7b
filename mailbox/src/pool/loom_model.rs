//! Model checks (loom) of [`SlotPool`]: a reservation racing a return at
//! the bound, and waiting senders racing returns (no lost wake-up). Every
//! interleaving (no preemption bound); the waiters wait on the loom
//! stand-in for tokio's `Notify` (`crate::sync::Notify`).

use std::sync::Arc;

use loom::future::block_on;
use loom::thread;

use super::SlotPool;
use crate::sync::Ordering::SeqCst;

#[test]
fn a_reservation_racing_a_return_at_the_bound_never_takes_more_than_the_capacity() {
    crate::sync::model(
        "a_reservation_racing_a_return_at_the_bound_never_takes_more_than_the_capacity",
        None,
        || {
            let pool = SlotPool::new(1);
            let held = pool.try_take().expect("the only slot");
            let returner = thread::spawn(move || drop(held));
            let racer = {
                let pool = Arc::clone(&pool);
                thread::spawn(move || pool.try_take())
            };
            let mine = pool.try_take();
            returner.join().expect("returner");
            let theirs = racer.join().expect("racer");
            let live = usize::from(mine.is_some()) + usize::from(theirs.is_some());
            assert!(live <= 1, "two slots taken from a pool of one");
            assert_eq!(
                pool.free(),
                1 - live,
                "free is the capacity less the live slots"
            );
            drop((mine, theirs));
            assert_eq!(pool.free(), 1, "every slot returned once");
        },
    );
}

#[test]
fn a_waiter_racing_a_return_is_woken_and_takes_the_slot() {
    crate::sync::model(
        "a_waiter_racing_a_return_is_woken_and_takes_the_slot",
        None,
        || {
            let pool = SlotPool::new(1);
            let held = pool.try_take().expect("the only slot");
            let waiter = {
                let pool = Arc::clone(&pool);
                // A lost wake-up leaves it parked for ever: loom reports
                // the deadlock.
                thread::spawn(move || block_on(pool.take()))
            };
            drop(held);
            let slot = waiter.join().expect("waiter");
            assert_eq!(pool.free(), 0, "the waiter holds the returned slot");
            assert_eq!(pool.waiting.load(SeqCst), 0, "a served waiter leaves");
            drop(slot);
            assert_eq!(pool.free(), 1, "returned once");
        },
    );
}

#[test]
fn two_waiters_racing_a_return_both_get_through_one_at_a_time() {
    crate::sync::model(
        "two_waiters_racing_a_return_both_get_through_one_at_a_time",
        Some(3),
        || {
            let pool = SlotPool::new(1);
            let held = pool.try_take().expect("the only slot");
            let waiters: Vec<_> = (0..2)
                .map(|_| {
                    let pool = Arc::clone(&pool);
                    thread::spawn(move || {
                        let slot = block_on(pool.take());
                        assert_eq!(pool.free(), 0, "one slot, held by one waiter");
                        drop(slot);
                    })
                })
                .collect();
            drop(held);
            for waiter in waiters {
                waiter.join().expect("waiter got through");
            }
            assert_eq!(pool.free(), 1, "every slot returned once");
            assert_eq!(pool.waiting.load(SeqCst), 0);
        },
    );
}
