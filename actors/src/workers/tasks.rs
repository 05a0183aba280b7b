//! The task inventory shared by the worker-pool and cleanup actors: every
//! spawned task's join handle together with what the task holds, the drop
//! guard that reports a task's end, and the bounded list of idle waiters.
//!
//! Invariants:
//! - A task's holdings (slot and metadata charges) leave the table only with
//!   the task's join result: [`TaskTable::join`] awaits the join first.
//! - A task reports its end exactly once, on the release slot reserved when
//!   it was accepted, whether it returned, panicked or was dropped unpolled.
//! - A table dropped with tasks still running (its actor stopped or failed)
//!   hands each task to a reaper on the runtime, which drops the holdings
//!   only after the join: no refund without the join, even on control failure.
//! - At most [`IDLE_WAITERS`] idle waiters are held; one more is answered
//!   [`WaitError::Busy`].

use std::collections::HashMap;
use std::fmt;

use ractor::Message;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::{JoinError, JoinHandle};
use tokio::time::Instant;

use crate::mailbox::{MailboxError, ReleaseSlot};

/// How many `WhenIdle` waiters one actor holds at once.
pub(crate) const IDLE_WAITERS: usize = 8;

/// Why a control request to a pool actor got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WaitError {
    /// The deadline passed first; nothing was cancelled.
    #[error("the deadline passed before the pool answered")]
    Timeout,
    /// Every idle-waiter place is taken.
    #[error("too many idle waiters")]
    Busy,
    /// The pool actor has stopped.
    #[error("the pool actor has stopped")]
    Closed,
}

impl<M> From<MailboxError<M>> for WaitError {
    fn from(e: MailboxError<M>) -> Self {
        match e {
            MailboxError::Busy(_) => Self::Busy,
            MailboxError::Timeout(_) => Self::Timeout,
            MailboxError::Closed => Self::Closed,
        }
    }
}

/// Waits for a control answer until `deadline`.
///
/// # Cancel safety
///
/// Cancel safe: only the answer is lost.
pub(crate) async fn answer_within<T>(
    answer: oneshot::Receiver<T>,
    deadline: Instant,
) -> Result<T, WaitError> {
    match tokio::time::timeout_at(deadline, answer).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(_gone)) => Err(WaitError::Closed),
        Err(_elapsed) => Err(WaitError::Timeout),
    }
}

/// Sends a task's end notice when dropped: when the task returns, panics
/// (the guard drops while unwinding) or is dropped by the runtime unpolled.
///
/// Lives inside the task, declared first so that it drops last.
pub(crate) struct FinishGuard<M: Message> {
    slot: Option<ReleaseSlot<M>>,
    msg: Option<M>,
}

impl<M: Message> FinishGuard<M> {
    pub(crate) fn new(slot: ReleaseSlot<M>, msg: M) -> Self {
        Self {
            slot: Some(slot),
            msg: Some(msg),
        }
    }
}

impl<M: Message> Drop for FinishGuard<M> {
    fn drop(&mut self) {
        if let (Some(slot), Some(msg)) = (self.slot.take(), self.msg.take()) {
            // A stopped actor handed this task to its reaper, which joins it.
            let _ = slot.send(msg);
        }
    }
}

impl<M: Message> fmt::Debug for FinishGuard<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FinishGuard")
            .field("armed", &self.slot.is_some())
            .finish()
    }
}

/// One running task: its join handle and what it holds until joined.
struct Task<H, O> {
    join: JoinHandle<O>,
    held: H,
}

/// Running tasks by id, with their holdings, and the idle waiters.
pub(crate) struct TaskTable<H: Send + 'static, O: Send + 'static> {
    runtime: Handle,
    next_id: u64,
    running: HashMap<u64, Task<H, O>>,
    idle: Vec<oneshot::Sender<Result<(), WaitError>>>,
}

impl<H: Send + 'static, O: Send + 'static> TaskTable<H, O> {
    pub(crate) fn new(runtime: Handle) -> Self {
        Self {
            runtime,
            next_id: 0,
            running: HashMap::new(),
            idle: Vec::new(),
        }
    }

    /// The runtime tasks are spawned on.
    pub(crate) fn runtime(&self) -> &Handle {
        &self.runtime
    }

    /// A fresh task id, for the finish notice of a task about to start.
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    /// Keeps a started task's join handle and holdings.
    pub(crate) fn insert(&mut self, id: u64, join: JoinHandle<O>, held: H) {
        self.running.insert(id, Task { join, held });
    }

    /// Awaits task `id`'s join, then hands back its holdings with its
    /// result. `None` if no such task is running.
    ///
    /// Called on the task's finish notice, so the task has returned or is
    /// about to.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the entry stays in the table until the join completes,
    /// so an actor killed mid-join still hands it to the reaper.
    pub(crate) async fn join(&mut self, id: u64) -> Option<(H, Result<O, JoinError>)> {
        let task = self.running.get_mut(&id)?;
        let result = (&mut task.join).await;
        let task = self.running.remove(&id)?;
        Some((task.held, result))
    }

    pub(crate) fn len(&self) -> usize {
        self.running.len()
    }

    /// What every running task holds.
    pub(crate) fn held(&self) -> impl Iterator<Item = &H> {
        self.running.values().map(|task| &task.held)
    }

    /// Answers `reply` once no task runs: at once if none does.
    pub(crate) fn when_idle(&mut self, reply: oneshot::Sender<Result<(), WaitError>>) {
        if self.running.is_empty() {
            let _ = reply.send(Ok(()));
            return;
        }
        if self.idle.len() >= IDLE_WAITERS {
            self.idle.retain(|waiter| !waiter.is_closed());
        }
        if self.idle.len() >= IDLE_WAITERS {
            let _ = reply.send(Err(WaitError::Busy));
            return;
        }
        self.idle.push(reply);
    }

    /// Answers every idle waiter if no task runs.
    pub(crate) fn wake_if_idle(&mut self) {
        if self.running.is_empty() {
            for waiter in self.idle.drain(..) {
                let _ = waiter.send(Ok(()));
            }
        }
    }
}

impl<H: Send + 'static, O: Send + 'static> Drop for TaskTable<H, O> {
    fn drop(&mut self) {
        for (_, Task { join, held }) in self.running.drain() {
            // The actor is gone before its tasks: the reaper keeps the
            // holdings until the real join. Its own handle is not kept; it
            // ends as soon as the task it waits for does.
            #[allow(
                clippy::disallowed_methods,
                reason = "the reaper holds a dropped table's holdings until each task's real join"
            )]
            drop(self.runtime.spawn(async move {
                let _ = join.await;
                drop(held);
            }));
        }
    }
}

impl<H: Send + 'static, O: Send + 'static> fmt::Debug for TaskTable<H, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskTable")
            .field("running", &self.running.len())
            .field("idle_waiters", &self.idle.len())
            .finish()
    }
}
