//! The worker-pool actor: the single owner of the provider worker slots
//! (`provider_workers`) and of every job's join handle until the job has
//! really completed — provider jobs, and the drivers of connections.
//!
//! Two classes of job run here. A provider job (`spawn`, `spawn_blocking`,
//! `control_blocking`) takes one of the `provider_workers` slots. A
//! connection's driver takes none: it holds its connection's charges
//! instead (shared with the connection), so drivers are bounded by the
//! connection limits, one per charged connection, and the connection's
//! charges return only once both the connection and its driver are gone.
//!
//! A job is accepted in one hop: the handle queues the not-yet-started work
//! ([`Work`]); the actor reserves a worker slot, the job's metadata
//! ([`JOB_OVERHEAD`] bytes) and the release slot of its finish notice, and
//! only then submits the work to the supplied runtime. The caller's
//! constructor or closure first runs inside that task. When the task ends —
//! returned, panicked or dropped by the runtime — a drop guard sends
//! `Finished` on the reserved slot; the actor awaits the join handle, logs a
//! panic, and only then releases the slot and the metadata.
//!
//! Invariants:
//! - Reserve before acting: a worker slot (a driver: its connection's charges) and the metadata are reserved before the caller's code runs.
//! - A driver never takes a worker slot: `provider_workers` bounds provider jobs only.
//! - Refusals are immediate: no slot or metadata is `Capacity`, a full mailbox `Busy`, after close `Closed`.
//! - No refund without the join: a job's charges return only after its join handle has completed.
//! - A dropped `JobHandle` neither aborts the job nor releases its charges.
//! - `control_blocking` jobs share the same slots and the same accounting as `spawn_blocking` jobs.
//! - A panicking job poisons nothing: its waiter hears `Panicked`, its slot returns after the join.
//! - Jobs run on the supplied runtime only; the actor keeps every join handle.
//!
//! Mailbox: `64 + provider_workers` message slots (startup limit), so a
//! burst of spawns that fits the worker slots is never refused busy (a
//! driver's spawn waits for room within its dial's deadline);
//! `provider_workers + connections` release slots, one per running job or
//! driver for its `Finished` (neither budget can be raised past its startup
//! limit, so this always fits).
//! Closing needs no message: it is a flag the handle and the actor share.
//!
//! Shutdown order: [`WorkerPool::close`] refuses new jobs (accepted jobs run
//! on); [`WorkerPool::when_idle`] answers once every accepted job has been
//! joined and its charges released, and on timeout nothing is aborted; the
//! supervisor stops the actor after that. An actor stopped or failed
//! earlier hands each running task and its charges to a reaper on the
//! runtime, which releases them only after the join.

mod actor;
mod handle;
mod job;
pub(crate) mod slots;
mod state;
pub(crate) mod tasks;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use ractor::RpcReplyPort;
use tokio::sync::oneshot;

pub(crate) use handle::WorkerPool;
pub(crate) use job::{BoxFuture, JobHolds, JobKind, Work};
pub use job::{JobError, JobHandle};
pub(crate) use tasks::WaitError;

use crate::limits::Limits;
use crate::mailbox::MailboxBound;

/// Metadata bytes charged for each accepted job until it is joined.
pub(crate) const JOB_OVERHEAD: u32 = 128;

/// The worker pool's mailbox bound for the given startup limits.
pub(crate) fn mailbox_bound(limits: &Limits) -> MailboxBound {
    MailboxBound {
        messages: 64 + limits.provider_workers as usize,
        releases: limits.provider_workers as usize + limits.connections as usize,
    }
}

/// Running jobs by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JobCounts {
    /// Futures from `spawn`.
    pub(crate) spawned: u32,
    /// Closures from `spawn_blocking`.
    pub(crate) blocking: u32,
    /// Closures from `control_blocking`.
    pub(crate) control: u32,
    /// Connection drivers (no worker slot).
    pub(crate) drivers: u32,
}

impl JobCounts {
    /// Every job not yet joined, drivers included.
    pub(crate) fn running(&self) -> u32 {
        self.spawned + self.blocking + self.control + self.drivers
    }
}

/// Messages of the worker-pool actor.
pub(crate) enum Msg {
    /// Accept `work` or refuse it at once; the job's id or the refusal goes
    /// to `reply`.
    Spawn {
        kind: JobKind,
        work: Work,
        /// What the job holds besides its slot and metadata, until joined.
        holds: JobHolds,
        reply: oneshot::Sender<Result<u64, JobError>>,
    },
    /// Job `id`'s task ended (sent by its drop guard on its reserved slot):
    /// join it, then release its charges.
    Finished { id: u64 },
    /// Answer once no job runs (at once if none does).
    WhenIdle {
        reply: oneshot::Sender<Result<(), WaitError>>,
    },
    /// Report the running jobs.
    Counts { reply: RpcReplyPort<JobCounts> },
}

impl crate::workers::slots::IdleQuery for Msg {
    type Counts = JobCounts;

    fn when_idle(reply: oneshot::Sender<Result<(), crate::workers::WaitError>>) -> Self {
        Msg::WhenIdle { reply }
    }

    fn counts(reply: RpcReplyPort<JobCounts>) -> Self {
        Msg::Counts { reply }
    }
}
