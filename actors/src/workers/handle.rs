//! [`WorkerPool`], the worker-pool actor's handle: its only public face.

use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ractor::{Actor, ActorCell, SpawnErr};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::accounts::Accounts;
use crate::budget::Budget;
use crate::limits::Limits;
use crate::mailbox::{MailboxError, MailboxSlots};
use crate::workers::actor::{WorkerPoolActor, WorkerPoolArgs};
use crate::workers::job::ResultSlot;
use crate::workers::slots::TaskSlots;
use crate::workers::{mailbox_bound, JobError, JobHandle, JobHolds, JobKind, Msg, Work};

/// The handle of the worker-pool actor. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct WorkerPool {
    /// Mailbox, worker slots (reserved by the actor, lowered through the
    /// handle), startup limit and close flag.
    pool: TaskSlots<Msg>,
}

/// `close`, `when_idle`, `counts`, `set_limit` and `cell` are the shared
/// [`TaskSlots`] operations.
impl std::ops::Deref for WorkerPool {
    type Target = TaskSlots<Msg>;

    fn deref(&self) -> &TaskSlots<Msg> {
        &self.pool
    }
}

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
        accounts: Arc<Accounts>,
        runtime: Handle,
        supervisor: ActorCell,
    ) -> Result<WorkerPool, SpawnErr> {
        let slots = MailboxSlots::new(mailbox_bound(limits));
        let workers = Budget::new("provider_workers", limits.provider_workers);
        let closed = Arc::new(AtomicBool::new(false));
        let args = WorkerPoolArgs {
            slots: slots.clone(),
            workers: Arc::clone(&workers),
            accounts,
            closed: Arc::clone(&closed),
            runtime: runtime.clone(),
        };
        #[allow(
            clippy::disallowed_methods,
            reason = "starts the worker-pool actor on the supplied runtime, under the registry's supervision"
        )]
        let (actor, _join) = runtime
            .spawn(Actor::spawn_linked(None, WorkerPoolActor, args, supervisor))
            .await
            .map_err(|e| SpawnErr::StartupFailed(Box::new(e)))??;
        Ok(WorkerPool {
            pool: TaskSlots::new(
                slots.attach(actor),
                workers,
                limits.provider_workers,
                closed,
            ),
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
        self.submit(JobKind::Async, work, JobHolds::Nothing, answer)
            .await
    }

    /// Runs the future `make` builds, a connection's driver, holding `connection` (its
    /// connection's charges, shared with the connection) until it is
    /// joined; it takes no worker slot. Waits for mailbox room until
    /// `deadline` (its dial's).
    ///
    /// # Cancel safety
    ///
    /// As [`WorkerPool::spawn`]: once queued, the driver may be accepted
    /// and then runs to completion; dropped before, `connection` is
    /// dropped unrun.
    ///
    /// # Errors
    ///
    /// [`JobError::Capacity`] when the metadata budget is taken,
    /// [`JobError::Busy`] when the mailbox stays full until `deadline`,
    /// [`JobError::Closed`] after close.
    pub(crate) async fn spawn_driver<F, Fut>(
        &self,
        make: F,
        connection: Box<dyn Send>,
        deadline: Instant,
    ) -> Result<JobHandle<()>, JobError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (result, answer) = ResultSlot::new();
        // Built in its task, like a job's: a future moved into the task's
        // own future and awaited there would be stored twice.
        let work = Work::Async(Box::pin(async move {
            make().await;
            result.send(());
        }));
        let holds = JobHolds::Connection {
            _charges: connection,
        };
        self.submit_within(JobKind::Driver, work, holds, answer, Some(deadline))
            .await
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
        self.blocking(JobKind::Blocking, job, JobHolds::Nothing)
            .await
    }

    /// As [`WorkerPool::spawn_blocking`], holding `share` (a tenant's worker
    /// share) with the job's charges until it is joined.
    ///
    /// # Cancel safety
    ///
    /// As [`WorkerPool::spawn`]; a refused job returns `share` at once.
    ///
    /// # Errors
    ///
    /// As [`WorkerPool::spawn`].
    pub(crate) async fn spawn_blocking_shared<F, T>(
        &self,
        job: F,
        share: crate::budget::Charge,
    ) -> Result<JobHandle<T>, JobError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.blocking(
            JobKind::Blocking,
            job,
            JobHolds::TenantShare { _share: share },
        )
        .await
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
        self.blocking(JobKind::Control, job, JobHolds::Nothing)
            .await
    }

    async fn blocking<F, T>(
        &self,
        kind: JobKind,
        job: F,
        holds: JobHolds,
    ) -> Result<JobHandle<T>, JobError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (result, answer) = ResultSlot::new();
        let work = Work::Blocking(Box::new(move || result.send(job())));
        self.submit(kind, work, holds, answer).await
    }

    async fn submit<T>(
        &self,
        kind: JobKind,
        work: Work,
        holds: JobHolds,
        answer: oneshot::Receiver<Result<T, JobError>>,
    ) -> Result<JobHandle<T>, JobError> {
        self.submit_within(kind, work, holds, answer, None).await
    }

    /// Queues the job: at once or busy without `deadline`, else waiting
    /// for mailbox room until it.
    async fn submit_within<T>(
        &self,
        kind: JobKind,
        work: Work,
        holds: JobHolds,
        answer: oneshot::Receiver<Result<T, JobError>>,
        deadline: Option<Instant>,
    ) -> Result<JobHandle<T>, JobError> {
        if self.is_closed() {
            return Err(JobError::Closed);
        }
        let (reply, accepted) = oneshot::channel();
        let msg = Msg::Spawn {
            kind,
            work,
            holds,
            reply,
        };
        let sent = match deadline {
            None => self.mailbox.try_send(msg),
            Some(deadline) => self.mailbox.send_within(msg, deadline).await,
        };
        sent.map_err(|e| match e {
            MailboxError::Busy(_) | MailboxError::Timeout(_) => JobError::Busy,
            MailboxError::Closed => JobError::Closed,
        })?;
        let id = accepted.await.map_err(|_gone| JobError::Closed)??;
        Ok(JobHandle::new(id, answer))
    }

    #[cfg(test)]
    pub(super) fn mailbox(&self) -> &crate::mailbox::Mailbox<Msg> {
        &self.pool.mailbox
    }
}
