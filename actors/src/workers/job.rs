//! A job as the caller sees it ([`JobHandle`], [`JobError`]) and as the
//! actor carries it: type-erased, not yet started ([`Work`]), with the typed
//! result travelling back through a [`ResultSlot`] inside it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use tokio::sync::oneshot;

use crate::budget::Exhausted;

/// A boxed, sendable future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Why a job was refused or produced no result.
///
/// Callers and metrics match on [`JobError::code`], which never changes for
/// a variant; messages may be reworded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// No worker slot or no metadata was free; nothing waits for one.
    #[error("capacity exhausted: {resource} has {used} of {limit} in use")]
    Capacity {
        /// `provider_workers`, or the budget that refused (`metadata_bytes`).
        resource: &'static str,
        /// Use when refused.
        used: u32,
        /// The limit in force.
        limit: u32,
    },
    /// The worker pool's mailbox is full; nothing was queued.
    #[error("the worker pool is busy")]
    Busy,
    /// The worker pool is closed (or gone), or the runtime dropped the job
    /// before it finished because it is shutting down.
    #[error("the worker pool is closed")]
    Closed,
    /// The job panicked; its slot is released once the task is joined.
    #[error("the job panicked")]
    Panicked,
}

impl JobError {
    /// The stable code of this error: `capacity`, `busy`, `closed` or
    /// `panicked`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Capacity { .. } => "capacity",
            Self::Busy => "busy",
            Self::Closed => "closed",
            Self::Panicked => "panicked",
        }
    }
}

impl From<Exhausted> for JobError {
    fn from(e: Exhausted) -> Self {
        Self::Capacity {
            resource: e.resource,
            used: e.used,
            limit: e.limit,
        }
    }
}

/// What kind of work a job is, for logs and counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobKind {
    /// A future built by `spawn`.
    Async,
    /// A closure run by `spawn_blocking`.
    Blocking,
    /// Trusted operator work run by `control_blocking`.
    Control,
    /// A connection's driver: no worker slot, its connection's charges.
    Driver,
}

/// What a job holds, besides its worker slot and its metadata, until it is
/// joined.
pub(crate) enum JobHolds {
    /// Nothing more.
    Nothing,
    /// The tenant's worker share: the job runs for one of its requests.
    TenantShare { _share: crate::budget::Charge },
    /// A connection's charges, shared with the connection (a driver).
    Connection { _charges: Box<dyn Send> },
}

impl fmt::Debug for JobHolds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Nothing => "JobHolds::Nothing",
            Self::TenantShare { .. } => "JobHolds::TenantShare",
            Self::Connection { .. } => "JobHolds::Connection",
        })
    }
}

/// A job on its way to the actor: nothing of the caller's has run yet. The
/// async form is an unpolled future whose first poll calls the caller's
/// constructor; the blocking form is the caller's closure, boxed.
pub(crate) enum Work {
    Async(BoxFuture<()>),
    Blocking(Box<dyn FnOnce() + Send + 'static>),
}

impl fmt::Debug for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Async(_) => "Work::Async",
            Self::Blocking(_) => "Work::Blocking",
        })
    }
}

/// Where a job's typed result goes. Dropped without a result, it tells the
/// waiter why: `Panicked` while unwinding, else `Closed` (the job was
/// refused, or the runtime dropped it while shutting down).
pub(crate) struct ResultSlot<T> {
    tx: Option<oneshot::Sender<Result<T, JobError>>>,
}

impl<T> ResultSlot<T> {
    pub(crate) fn new() -> (Self, oneshot::Receiver<Result<T, JobError>>) {
        let (tx, rx) = oneshot::channel();
        (Self { tx: Some(tx) }, rx)
    }

    /// Delivers the result; a waiter that left loses only the value.
    pub(crate) fn send(mut self, value: T) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Ok(value));
        }
    }
}

impl<T> Drop for ResultSlot<T> {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let error = if std::thread::panicking() {
                JobError::Panicked
            } else {
                JobError::Closed
            };
            let _ = tx.send(Err(error));
        }
    }
}

/// The waiter of one accepted job.
///
/// Dropping it never aborts the job and never releases its worker slot or
/// metadata: the job runs to completion, and its charges return only when
/// the worker pool has joined its task. Only the result is lost.
#[must_use = "dropping a job handle loses the result, but the job keeps running and keeps its slot"]
pub struct JobHandle<T> {
    id: u64,
    rx: oneshot::Receiver<Result<T, JobError>>,
}

impl<T> JobHandle<T> {
    pub(crate) fn new(id: u64, rx: oneshot::Receiver<Result<T, JobError>>) -> Self {
        Self { id, rx }
    }

    /// Waits for the job's result.
    ///
    /// The result can arrive slightly before the job's worker slot is free
    /// again: the slot returns once the pool has joined the finished task.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the handle: the job keeps running and keeps
    /// its slot; only the result is lost.
    ///
    /// # Errors
    ///
    /// [`JobError::Panicked`] if the job panicked, [`JobError::Closed`] if
    /// the runtime dropped it unfinished while shutting down.
    pub async fn join(self) -> Result<T, JobError> {
        self.rx.await.unwrap_or(Err(JobError::Panicked))
    }
}

impl<T> fmt::Debug for JobHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobHandle").field("id", &self.id).finish()
    }
}
