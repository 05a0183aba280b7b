//! One pool of mailbox slots: a lock-free counter, with a [`Notify`] for
//! the senders that wait for room.
//!
//! Taking a slot is one compare-and-swap; returning it is one add, plus a
//! notification only while someone waits — no lock on either path (a tokio
//! `Semaphore` takes its waiter-list mutex on every return).
//!
//! Invariants:
//! - Slots taken ≤ capacity; a [`Slot`] returns its room exactly once, when
//!   dropped.
//! - No lost wake-up: a waiter registers and announces itself before its
//!   last look at the counter, and a return looks for waiters after adding,
//!   with a `SeqCst` fence between the write and the look on each side, so
//!   one of the two sees the other. (The fences, rather than `SeqCst`
//!   accesses alone, are what loom models exactly: its model check,
//!   `pool/loom_model.rs`, proves this.)
//! - Waiters are woken in the order they registered, but a sender that
//!   does not wait may take a returned slot first: no FIFO promise between
//!   waiting senders and new ones.
//! - `returned` counts every return since the pool was made; it only
//!   grows. It is a statistic, not part of the pool's synchronisation (a
//!   plain std atomic, which the loom models leave alone): a quiescence
//!   check reads it (through `opened`) to see whether an actor opened
//!   anything besides its probe.
//!
//! [`SlotPool`] is public for model checks that combine it with a caller's
//! own accounting (the engine's cleanup slots); a mailbox keeps its pools
//! to itself.

use std::fmt;
use std::sync::atomic::{AtomicUsize as StatCounter, Ordering::Relaxed};
use std::sync::Arc;

use tokio::time::Instant;

use crate::sync::{fence, AtomicUsize, Notify, Ordering::SeqCst};

/// A bounded, lock-free count of slots.
pub struct SlotPool {
    free: AtomicUsize,
    waiting: AtomicUsize,
    room: Notify,
    /// Slots returned since the pool was made (wrapping).
    returned: StatCounter,
}

impl SlotPool {
    /// A pool of `capacity` free slots.
    pub fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            free: AtomicUsize::new(capacity),
            waiting: AtomicUsize::new(0),
            room: Notify::new(),
            returned: StatCounter::new(0),
        })
    }

    /// Free slots now.
    pub fn free(&self) -> usize {
        self.free.load(SeqCst)
    }

    /// A slot if one is free.
    pub fn try_take(self: &Arc<Self>) -> Option<Slot> {
        self.free
            .fetch_update(SeqCst, SeqCst, |free| free.checked_sub(1))
            .ok()
            .map(|_| Slot {
                pool: Arc::clone(self),
            })
    }

    /// A slot, waiting for one until `deadline`; `None` if none freed up.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future holds no slot, and a room notice it had
    /// received passes to the next waiter.
    pub async fn take_within(self: &Arc<Self>, deadline: Instant) -> Option<Slot> {
        tokio::time::timeout_at(deadline, self.take()).await.ok()
    }

    /// A slot, waiting as long as it takes.
    ///
    /// # Cancel safety
    ///
    /// As [`SlotPool::take_within`].
    pub(crate) async fn take(self: &Arc<Self>) -> Slot {
        loop {
            if let Some(slot) = self.try_take() {
                return slot;
            }
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let _waiting = Waiting::announce(&self.waiting);
            // The last look, after announcing: a return that missed the
            // announcement added its slot before this look (the fences
            // here and in `put` order the two sides).
            fence(SeqCst);
            if let Some(slot) = self.try_take() {
                return slot;
            }
            notified.await;
        }
    }

    /// Slots returned since the pool was made, wrapping at `usize::MAX`.
    pub(crate) fn returned(&self) -> usize {
        self.returned.load(Relaxed)
    }

    fn put(&self) {
        self.returned.fetch_add(1, Relaxed);
        self.free.fetch_add(1, SeqCst);
        fence(SeqCst);
        if self.waiting.load(SeqCst) > 0 {
            self.room.notify_one();
        }
    }
}

/// Counts one waiting sender while it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn announce(waiting: &'a AtomicUsize) -> Self {
        waiting.fetch_add(1, SeqCst);
        Self(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

/// Room for one message in its pool, returned when dropped.
#[must_use = "a slot returns its room as soon as it is dropped"]
pub struct Slot {
    pool: Arc<SlotPool>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.pool.put();
    }
}

impl fmt::Debug for SlotPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlotPool")
            .field("free", &self.free())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slot").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn slots_are_bounded_and_return_on_drop() {
        let pool = SlotPool::new(2);
        let a = pool.try_take().expect("first");
        let b = pool.try_take().expect("second");
        assert!(pool.try_take().is_none(), "capacity 2");
        drop(a);
        assert_eq!(pool.free(), 1);
        let _c = pool.try_take().expect("returned slot");
        drop(b);
        assert_eq!(pool.free(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_gets_a_returned_slot_or_times_out() {
        let pool = SlotPool::new(1);
        let held = pool.try_take().expect("the only slot");
        let deadline = Instant::now() + Duration::from_millis(10);
        assert!(pool.take_within(deadline).await.is_none(), "times out");
        assert_eq!(pool.waiting.load(SeqCst), 0, "a timed-out waiter leaves");
        let waiter = {
            let pool = Arc::clone(&pool);
            let deadline = Instant::now() + Duration::from_secs(5);
            // A test driver: it keeps the handle.
            #[allow(clippy::disallowed_methods)]
            tokio::spawn(async move { pool.take_within(deadline).await.is_some() })
        };
        tokio::task::yield_now().await;
        drop(held);
        assert!(waiter.await.expect("waiter ran"), "woken by the return");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_waiters_on_few_slots_all_get_through() {
        const WAITERS: usize = 64;
        const ROUNDS: usize = 200;
        let pool = SlotPool::new(2);
        let mut tasks = Vec::new();
        for _ in 0..WAITERS {
            let pool = Arc::clone(&pool);
            // A test driver: it keeps every handle.
            #[allow(clippy::disallowed_methods)]
            tasks.push(tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    let deadline = Instant::now() + Duration::from_secs(10);
                    let slot = pool.take_within(deadline).await.expect("no lost wake-up");
                    tokio::task::yield_now().await;
                    drop(slot);
                }
            }));
        }
        for task in tasks {
            task.await.expect("waiter finished");
        }
        assert_eq!(pool.free(), 2);
    }
}

#[cfg(all(test, loom))]
mod loom_model;
