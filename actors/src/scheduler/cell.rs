//! A queued waiter's entry: the one place its answer is written and read.
//!
//! The queue owner (see [`super::core`]) writes the answer and wakes the
//! waiter; the waiter's future reads it, or leaves. The entry replaces the
//! oneshot channel and the per-waiter timer of a message-driven scheduler:
//! its deadline is kept beside it by the one alarm (see [`super::deadlines`]),
//! not in it, so the entry stays small.
//!
//! Invariants:
//! - An entry is answered at most once, and only while its waiter waits:
//!   an answer to a waiter that left is refused, so its writer keeps what
//!   it carried (a grant's running capacity goes back to the queue).
//! - A waiter that leaves after its grant was written (but before it read
//!   it) hands that grant back ([`Left::Holding`]); one that leaves while
//!   queued asks the owner to cancel it ([`Left::Queued`]). Either way
//!   nothing it held is lost, and the two cases never overlap: both sides
//!   decide under the entry's lock.
//! - Only the queue owner reads or writes the entry's queue key.

use std::sync::PoisonError;
use std::task::{Context, Poll, Waker};

use crate::scheduler::queue::{RunningKey, WaiterKey};
use crate::scheduler::Ended;
use crate::sync::{Mutex, MutexGuard};

/// What a queued waiter hears: granted, the running counts named by the
/// key; or how its admit ended without a grant.
type Answer = Result<RunningKey, Ended>;

/// Where a waiter stands.
#[derive(Debug)]
enum Phase {
    /// In line (or on its way to the queue owner).
    Waiting,
    /// Answered; the waiter has not read it yet.
    Answered(Answer),
    /// The waiter read its answer, or left.
    Done,
}

/// What a waiter that leaves must give back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Left {
    /// It was still in line: the owner must remove it.
    Queued,
    /// It had been granted and had not read the grant: release it.
    Holding(RunningKey),
    /// Nothing: its answer was read, or held nothing.
    Nothing,
}

#[derive(Debug)]
struct Inner {
    phase: Phase,
    waker: Option<Waker>,
    key: Option<WaiterKey>,
}

/// A queued waiter's entry, shared by the queue and the waiter's future.
#[derive(Debug)]
pub(crate) struct Cell {
    inner: Mutex<Inner>,
}

impl Cell {
    /// A waiting entry.
    pub(crate) fn new() -> Self {
        Self {
            inner: Mutex::new(Inner {
                phase: Phase::Waiting,
                waker: None,
                key: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing here panics while holding the lock; a poisoned one still
        // holds a consistent entry.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// True while the waiter waits for its answer.
    pub(crate) fn is_waiting(&self) -> bool {
        matches!(self.lock().phase, Phase::Waiting)
    }

    /// Owner: records the key the waiter is queued under.
    pub(crate) fn queued_at(&self, key: WaiterKey) {
        self.lock().key = Some(key);
    }

    /// Owner: the key the waiter was queued under, once.
    pub(crate) fn take_key(&self) -> Option<WaiterKey> {
        self.lock().key.take()
    }

    /// Owner: answers a waiting waiter and wakes it. False, changing
    /// nothing, when the waiter left or was answered already: the caller
    /// keeps what `answer` carried.
    #[must_use = "a refused grant must go back to the queue"]
    pub(crate) fn answer(&self, answer: Answer) -> bool {
        let waker = {
            let mut inner = self.lock();
            if !matches!(inner.phase, Phase::Waiting) {
                return false;
            }
            inner.phase = Phase::Answered(answer);
            inner.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// Waiter: the answer once written (read once), else registers `cx`'s
    /// waker. A waiter that left reads `Closed`.
    pub(crate) fn poll_answer(&self, cx: &mut Context<'_>) -> Poll<Answer> {
        let mut inner = self.lock();
        match std::mem::replace(&mut inner.phase, Phase::Done) {
            Phase::Answered(answer) => Poll::Ready(answer),
            Phase::Done => Poll::Ready(Err(Ended::Closed)),
            Phase::Waiting => {
                inner.phase = Phase::Waiting;
                match &mut inner.waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }

    /// Waiter: leaves without reading further; says what to give back.
    pub(crate) fn leave(&self) -> Left {
        let mut inner = self.lock();
        inner.waker = None;
        match std::mem::replace(&mut inner.phase, Phase::Done) {
            Phase::Waiting => Left::Queued,
            Phase::Answered(Ok(running)) => Left::Holding(running),
            Phase::Answered(_) | Phase::Done => Left::Nothing,
        }
    }
}

// Its size is that of the std mutex, not of the model checks' one.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::Cell;

    /// Every queued waiter has one entry: with its `Arc`'s counts, an
    /// allocation of at most 104 bytes.
    #[test]
    fn a_waiter_s_entry_is_at_most_88_bytes() {
        assert!(size_of::<Cell>() <= 88, "{} bytes", size_of::<Cell>());
    }
}
