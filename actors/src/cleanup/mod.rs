//! The cleanup actor: destroys owned resources on its own reserved slots
//! (`cleanup_jobs`), so saturated provider workers can never block cleanup.
//!
//! A submission is decided in the handle, synchronously and lock-free, so
//! it can be made from a `Drop`: the handle reserves a cleanup slot (a
//! [`Budget`](crate::budget::Budget) named `cleanup_jobs`) and two release
//! slots of the actor's mailbox — one to deliver `Run`, one for the task's
//! `Finished` — or refuses at once, handing the resource and its charge
//! back. The actor spawns the close on the runtime and keeps its join
//! handle; the task delivers the outcome to the [`CleanupTicket`] and, when
//! it ends, a drop guard sends `Finished`; the actor joins the task and only
//! then frees the slot.
//!
//! Invariants:
//! - Cleanup never waits for a worker: its slots and its mailbox room are its own.
//! - Destroy, then release: a charge is dropped only after its resource is gone.
//! - A failed close never refunds: resource and charge come back together in `CleanupFailed`.
//! - `failed_cleanup` counts every live `CleanupFailed`, held by a caller or by the actor.
//! - A dropped ticket never aborts a cleanup; a failure nobody waits for stays with the actor.
//! - A failure the actor keeps holds its cleanup slot, so at most `cleanup_jobs` are kept.
//! - A slot returns only after the task's join (a reaper keeps this if the actor stops first).
//!
//! Mailbox: 16 message slots, for `WhenIdle` and `Counts` only (a full
//! mailbox never refuses a cleanup); `2 × cleanup_jobs` release slots
//! (startup limit): a `Run` and a `Finished` for every slot.
//!
//! Shutdown order: close the worker pool and wait for it first (jobs may
//! still hand resources to cleanup), then [`CleanupPool::close`], then
//! [`CleanupPool::when_idle`]; on timeout nothing is aborted. Failures the
//! actor kept stay charged and counted until that `when_idle` of a closed
//! pool, which destroys each resource before its charge (their connections
//! hold requests, and so epochs, that the registry waits for before it
//! stops this actor); a close that fails after the pool closed is destroyed
//! at once.

mod actor;
mod handle;
mod outcome;
mod resource;
mod state;
#[cfg(test)]
mod tests;

#[cfg(all(test, loom))]
mod loom_model;

use ractor::RpcReplyPort;
use tokio::sync::oneshot;

pub use outcome::{CleanupError, CleanupFailed, CleanupRefused, CleanupTicket};
pub use resource::{Cleanup, CloseFailure};

pub(crate) use handle::CleanupPool;

use crate::budget::Charge;
use crate::limits::Limits;
use crate::mailbox::{MailboxBound, ReleaseSlot};
use crate::workers::{BoxFuture, WaitError};
use outcome::Orphan;

/// The cleanup actor's mailbox bound for the given startup limits.
pub(crate) fn mailbox_bound(limits: &Limits) -> MailboxBound {
    MailboxBound {
        messages: 16,
        releases: 2 * limits.cleanup_jobs as usize,
    }
}

/// What the cleanup actor holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CleanupCounts {
    /// Cleanups running (each holds a slot).
    pub(crate) running: u32,
    /// Failures whose ticket was dropped (each still holds its slot).
    pub(crate) orphaned: u32,
}

/// Messages of the cleanup actor.
pub(crate) enum Msg {
    /// Spawn an admitted cleanup (sent on a release slot reserved at
    /// admission). `task` closes the resource and yields a failure nobody
    /// waits for; `slot` is its cleanup slot; `finish` is the room for its
    /// `Finished`.
    Run {
        task: BoxFuture<Option<Orphan>>,
        slot: Charge,
        finish: ReleaseSlot<Msg>,
    },
    /// Cleanup `id`'s task ended (sent by its drop guard): join it, then
    /// free its slot or keep it with its orphaned failure.
    Finished { id: u64 },
    /// Answer once no cleanup runs (kept failures do not count).
    WhenIdle {
        reply: oneshot::Sender<Result<(), WaitError>>,
    },
    /// Report what the actor holds.
    Counts { reply: RpcReplyPort<CleanupCounts> },
}

impl crate::workers::slots::IdleQuery for Msg {
    type Counts = CleanupCounts;

    fn when_idle(reply: oneshot::Sender<Result<(), crate::workers::WaitError>>) -> Self {
        Msg::WhenIdle { reply }
    }

    fn counts(reply: RpcReplyPort<CleanupCounts>) -> Self {
        Msg::Counts { reply }
    }
}
