//! The worker-pool actor's state and its named operations.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::accounts::Accounts;
use crate::budget::{Budget, Charge};
use crate::mailbox::Mailbox;
use crate::workers::tasks::{FinishGuard, TaskTable, WaitError};
use crate::workers::{JobCounts, JobError, JobHolds, JobKind, Msg, Work, JOB_OVERHEAD};

/// What a running job holds until it is joined.
pub(crate) struct RunningJob {
    kind: JobKind,
    /// None for a driver.
    _worker: Option<Charge>,
    _metadata: Charge,
    _holds: JobHolds,
}

pub(crate) struct State {
    tasks: TaskTable<RunningJob, ()>,
    /// How many of the tasks are drivers.
    drivers: u32,
    workers: Arc<Budget>,
    accounts: Arc<Accounts>,
    mailbox: Mailbox<Msg>,
    closed: Arc<AtomicBool>,
}

impl State {
    pub(crate) fn new(
        tasks: TaskTable<RunningJob, ()>,
        workers: Arc<Budget>,
        accounts: Arc<Accounts>,
        mailbox: Mailbox<Msg>,
        closed: Arc<AtomicBool>,
    ) -> Self {
        Self {
            tasks,
            drivers: 0,
            workers,
            accounts,
            mailbox,
            closed,
        }
    }

    /// Reserves a worker slot (none for a driver), the job's metadata and
    /// its finish slot, then submits `work` to the runtime; refuses at once
    /// when any is missing.
    pub(crate) fn spawn(
        &mut self,
        kind: JobKind,
        work: Work,
        holds: JobHolds,
        reply: oneshot::Sender<Result<u64, JobError>>,
    ) {
        let accepted = self.accept(kind, work, holds);
        // The gauge counts the job before its caller hears it was accepted.
        self.report();
        let _ = reply.send(accepted);
    }

    /// Accepts `work`, or refuses it; refused work is dropped unrun here,
    /// with any destructor panic of what it captured contained.
    fn accept(&mut self, kind: JobKind, work: Work, holds: JobHolds) -> Result<u64, JobError> {
        let mut work = Some(work);
        let accepted = self.try_accept(kind, &mut work, holds);
        if let Some(refused) = work {
            crate::contain::drop_contained(refused, "a refused job");
        }
        accepted
    }

    fn try_accept(
        &mut self,
        kind: JobKind,
        work: &mut Option<Work>,
        holds: JobHolds,
    ) -> Result<u64, JobError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(JobError::Closed);
        }
        // A driver is paid for by its connection's charges, which it holds.
        let worker = match kind {
            JobKind::Driver => None,
            JobKind::Async | JobKind::Blocking | JobKind::Control => {
                Some(self.workers.try_reserve(1)?)
            }
        };
        let metadata = self.accounts.metadata.try_reserve(JOB_OVERHEAD)?;
        // One release slot per worker slot: running out is a sizing bug,
        // answered as busy rather than waiting.
        let slot = self.mailbox.reserve_release().ok_or(JobError::Busy)?;
        let id = self.tasks.next_id();
        let finish = FinishGuard::new(slot, Msg::Finished { id });
        let runtime = self.tasks.runtime();
        #[allow(
            clippy::disallowed_methods,
            reason = "the worker pool's task table keeps every job's join handle"
        )]
        let join = match work.take().ok_or(JobError::Closed)? {
            Work::Async(future) => runtime.spawn(async move {
                let _finish = finish;
                future.await;
            }),
            Work::Blocking(job) => runtime.spawn_blocking(move || {
                let _finish = finish;
                job();
            }),
        };
        let held = RunningJob {
            kind,
            _worker: worker,
            _metadata: metadata,
            _holds: holds,
        };
        self.tasks.insert(id, join, held);
        if kind == JobKind::Driver {
            self.drivers += 1;
        }
        tracing::trace!(job = id, ?kind, "job accepted");
        Ok(id)
    }

    /// Joins job `id`'s ended task, then releases its worker slot and
    /// metadata.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: until the join completes, the job and its charges stay
    /// in the task table.
    pub(crate) async fn finished(&mut self, id: u64) {
        let Some((held, result)) = self.tasks.join(id).await else {
            tracing::warn!(job = id, "finish notice for an unknown job");
            return;
        };
        match result {
            Ok(()) => tracing::trace!(job = id, kind = ?held.kind, "job joined"),
            // The payload is provider text: it is not logged.
            Err(e) if e.is_panic() => tracing::warn!(job = id, kind = ?held.kind, "job panicked"),
            Err(_) => tracing::debug!(job = id, kind = ?held.kind, "job dropped by the runtime"),
        }
        let kind = held.kind;
        drop(held);
        if kind == JobKind::Driver {
            self.drivers = self.drivers.saturating_sub(1);
        }
        self.report();
        self.tasks.wake_if_idle();
    }

    pub(crate) fn when_idle(&mut self, reply: oneshot::Sender<Result<(), WaitError>>) {
        self.tasks.when_idle(reply);
    }

    pub(crate) fn counts(&self) -> JobCounts {
        let mut counts = JobCounts::default();
        for held in self.tasks.held() {
            match held.kind {
                JobKind::Async => counts.spawned += 1,
                JobKind::Blocking => counts.blocking += 1,
                JobKind::Control => counts.control += 1,
                JobKind::Driver => counts.drivers += 1,
            }
        }
        counts
    }

    /// Publishes the running jobs and drivers to the accounts' gauges.
    pub(crate) fn report(&self) {
        let running = u32::try_from(self.tasks.len()).unwrap_or(u32::MAX);
        let drivers = self.drivers;
        let gauges = &self.accounts.gauges;
        gauges
            .workers
            .store(running.saturating_sub(drivers), Ordering::Release);
        gauges.drivers.store(drivers, Ordering::Release);
    }
}
