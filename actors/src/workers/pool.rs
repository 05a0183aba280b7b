//! [`WorkerPool`], the worker-pool actor's handle: its only public face.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ractor::{Actor, ActorCell, SpawnErr};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::budget::{Budget, InUse};
use crate::ledger::Ledger;
use crate::limits::Limits;
use crate::mailbox::{Mailbox, MailboxError, MailboxSlots};
use crate::workers::actor::{WorkerPoolActor, WorkerPoolArgs};
use crate::workers::job::ResultSlot;
use crate::workers::tasks::{answer_within, WaitError};
use crate::workers::{mailbox_bound, JobCounts, JobError, JobHandle, JobKind, Msg, Work};

/// The handle of the worker-pool actor. Cheap to clone.
#[derive(Debug, Clone)]
#[cfg_attr(not(test), allow(dead_code))] // wired by the registry integration
pub(crate) struct WorkerPool {
    mailbox: Mailbox<Msg>,
    /// The worker slots; reserved by the actor, lowered through the handle.
    workers: Arc<Budget>,
    /// The startup limit, which sized the release slots.
    startup: u32,
    /// Set once by `close`; read by the handle and the actor.
    closed: Arc<AtomicBool>,
}

#[cfg_attr(not(test), allow(dead_code))] // wired by the registry integration
impl WorkerPool {
    /// Spawns the worker-pool actor on `runtime`, linked to `supervisor`,
    /// with `limits.provider_workers` slots; every job runs on `runtime`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future after the actor started leaves it running,
    /// linked to `supervisor`, with no handle: the supervisor should stop it.
    ///
    /// # Errors
    ///
    /// The [`SpawnErr`] of ractor, or `StartupFailed` if the runtime dropped
    /// the spawning task.
    pub(crate) async fn spawn_linked(
        limits: &Limits,
        ledger: Arc<Ledger>,
        runtime: Handle,
        supervisor: ActorCell,
    ) -> Result<WorkerPool, SpawnErr> {
        let slots = MailboxSlots::new(mailbox_bound(limits));
        let workers = Budget::new("provider_workers", limits.provider_workers);
        let closed = Arc::new(AtomicBool::new(false));
        let args = WorkerPoolArgs {
            slots: slots.clone(),
            workers: Arc::clone(&workers),
            ledger,
            closed: Arc::clone(&closed),
            runtime: runtime.clone(),
        };
        let (actor, _join) = runtime
            .spawn(Actor::spawn_linked(None, WorkerPoolActor, args, supervisor))
            .await
            .map_err(|e| SpawnErr::StartupFailed(Box::new(e)))??;
        Ok(WorkerPool {
            mailbox: slots.attach(actor),
            workers,
            startup: limits.provider_workers,
            closed,
        })
    }

    /// Runs the future `make` builds as a provider job.
    ///
    /// A worker slot and the job's metadata are reserved before `make` is
    /// called; `make` runs inside the job's task on the runtime.
    ///
    /// # Cancel safety
    ///
    /// Dropped before the request is queued, nothing happened and `make` is
    /// never called. Once queued, the job may still be accepted: it then
    /// runs to completion holding its slot, and only its handle is lost.
    ///
    /// # Errors
    ///
    /// [`JobError::Capacity`] when every worker slot or the metadata budget
    /// is taken, [`JobError::Busy`] when the mailbox is full,
    /// [`JobError::Closed`] after close — all at once, never waiting.
    pub(crate) async fn spawn<F, Fut>(&self, make: F) -> Result<JobHandle<Fut::Output>, JobError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let (result, answer) = ResultSlot::new();
        let work = Work::Async(Box::pin(async move {
            let output = make().await;
            result.send(output);
        }));
        self.submit(JobKind::Async, work, answer).await
    }

    /// Runs the blocking closure `job` on the runtime's blocking threads.
    ///
    /// # Cancel safety
    ///
    /// As [`WorkerPool::spawn`]: once queued, the job may run to completion
    /// without a handle; it is never aborted.
    ///
    /// # Errors
    ///
    /// As [`WorkerPool::spawn`].
    pub(crate) async fn spawn_blocking<F, T>(&self, job: F) -> Result<JobHandle<T>, JobError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.blocking(JobKind::Blocking, job).await
    }

    /// Runs trusted operator work (a secret reload, say) on the same worker
    /// slots as [`WorkerPool::spawn_blocking`], with the same accounting;
    /// tagged as control work in logs and counts. An abandoned waiter never
    /// releases the job's charges.
    ///
    /// # Cancel safety
    ///
    /// As [`WorkerPool::spawn`].
    ///
    /// # Errors
    ///
    /// As [`WorkerPool::spawn`].
    pub(crate) async fn control_blocking<F, T>(&self, job: F) -> Result<JobHandle<T>, JobError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.blocking(JobKind::Control, job).await
    }

    async fn blocking<F, T>(&self, kind: JobKind, job: F) -> Result<JobHandle<T>, JobError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (result, answer) = ResultSlot::new();
        let work = Work::Blocking(Box::new(move || result.send(job())));
        self.submit(kind, work, answer).await
    }

    async fn submit<T>(
        &self,
        kind: JobKind,
        work: Work,
        answer: oneshot::Receiver<Result<T, JobError>>,
    ) -> Result<JobHandle<T>, JobError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(JobError::Closed);
        }
        let (reply, accepted) = oneshot::channel();
        self.mailbox
            .try_send(Msg::Spawn { kind, work, reply })
            .map_err(|e| match e {
                MailboxError::Busy(_) | MailboxError::Timeout(_) => JobError::Busy,
                MailboxError::Closed => JobError::Closed,
            })?;
        let id = accepted.await.map_err(|_gone| JobError::Closed)??;
        Ok(JobHandle::new(id, answer))
    }

    /// Refuses every later job with [`JobError::Closed`]; accepted jobs run
    /// on. Idempotent; needs no mailbox room.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Waits until no job runs: every accepted job joined and its charges
    /// released.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the actor answers a waiter that left into the void.
    ///
    /// # Errors
    ///
    /// [`WaitError::Timeout`] when `deadline` passes first (nothing is
    /// aborted), [`WaitError::Busy`] when too many waiters wait,
    /// [`WaitError::Closed`] when the actor is gone.
    pub(crate) async fn when_idle(&self, deadline: Instant) -> Result<(), WaitError> {
        let (reply, answer) = oneshot::channel();
        self.mailbox
            .send_within(Msg::WhenIdle { reply }, deadline)
            .await?;
        answer_within(answer, deadline).await?
    }

    /// The running jobs, by kind, as the actor counts them.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Errors
    ///
    /// [`WaitError::Timeout`] or [`WaitError::Closed`].
    pub(crate) async fn counts(&self, deadline: Instant) -> Result<JobCounts, WaitError> {
        let (reply, answer) = oneshot::channel();
        let msg = Msg::Counts {
            reply: reply.into(),
        };
        self.mailbox.send_within(msg, deadline).await?;
        answer_within(answer, deadline).await
    }

    /// Lowers (or restores) the worker slots; a limit above the startup
    /// limit, which sized the release slots, is taken as the startup limit.
    ///
    /// # Errors
    ///
    /// [`InUse`] when more slots are held than `limit`; the old limit stays.
    pub(crate) fn set_limit(&self, limit: u32) -> Result<(), InUse> {
        self.workers.set_limit(limit.min(self.startup))
    }

    /// The actor, for the supervisor to recognise its events.
    pub(crate) fn cell(&self) -> ActorCell {
        self.mailbox.actor().get_cell()
    }

    #[cfg(test)]
    pub(super) fn mailbox(&self) -> &Mailbox<Msg> {
        &self.mailbox
    }
}
