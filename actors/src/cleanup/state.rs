//! The cleanup actor's state and its named operations.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::oneshot;
use tracing::Instrument;

use crate::accounts::Accounts;
use crate::budget::Charge;
use crate::cleanup::outcome::Orphan;
use crate::cleanup::{CleanupCounts, Msg};
use crate::mailbox::ReleaseSlot;
use crate::observe::spans;
use crate::workers::tasks::{FinishGuard, TaskTable, WaitError};
use crate::workers::BoxFuture;

/// What the table holds for a running cleanup: its slot and its span
/// (`pools.cleanup`), which closes once the job is joined.
pub(crate) struct Running {
    slot: Charge,
    span: tracing::Span,
}

/// A failure nobody waits for, with the cleanup slot it keeps.
struct Kept {
    _failed: Orphan,
    _slot: Charge,
}

pub(crate) struct State {
    tasks: TaskTable<Running, Option<Orphan>>,
    /// At most `cleanup_jobs` (startup limit): each entry holds a slot.
    kept: Vec<Kept>,
    accounts: Arc<Accounts>,
    /// The pool's close flag: once set, shutdown is under way and nothing
    /// is kept any more.
    closed: Arc<AtomicBool>,
}

impl State {
    pub(crate) fn new(
        tasks: TaskTable<Running, Option<Orphan>>,
        accounts: Arc<Accounts>,
        closed: Arc<AtomicBool>,
    ) -> Self {
        Self {
            tasks,
            kept: Vec::new(),
            accounts,
            closed,
        }
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Spawns an admitted cleanup and keeps its join handle.
    pub(crate) fn run(
        &mut self,
        task: BoxFuture<Option<Orphan>>,
        slot: Charge,
        finish: ReleaseSlot<Msg>,
    ) {
        let id = self.tasks.next_id();
        let span = tracing::debug_span!(
            spans::CLEANUP,
            cleanup = id,
            outcome = tracing::field::Empty
        );
        let finish = FinishGuard::new(finish, Msg::Finished { id });
        let job = async move {
            let _finish = finish;
            task.await
        };
        #[allow(
            clippy::disallowed_methods,
            reason = "the cleanup actor's task table keeps the join handle"
        )]
        let join = self.tasks.runtime().spawn(job.instrument(span.clone()));
        self.tasks.insert(id, join, Running { slot, span });
        tracing::trace!(cleanup = id, "cleanup started");
    }

    /// Joins cleanup `id`'s ended task, then frees its slot — or keeps the
    /// slot with a failure whose ticket was dropped.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: until the join completes, the task and its slot stay in
    /// the task table.
    pub(crate) async fn finished(&mut self, id: u64) {
        let Some((Running { slot, span }, result)) = self.tasks.join(id).await else {
            tracing::warn!(cleanup = id, "finish notice for an unknown cleanup");
            return;
        };
        span.record(
            "outcome",
            match &result {
                Ok(None) => "closed",
                Ok(Some(_)) => "failed",
                Err(e) if e.is_panic() => "panicked",
                Err(_) => "dropped",
            },
        );
        match result {
            Ok(None) => tracing::trace!(cleanup = id, "cleanup joined"),
            Ok(Some(orphan)) if self.is_closed() => {
                tracing::warn!(
                    cleanup = id,
                    "cleanup failed during shutdown; the resource is destroyed, then released"
                );
                crate::contain::drop_contained(orphan, "a failed close after shutdown began");
            }
            Ok(Some(orphan)) => {
                tracing::warn!(
                    cleanup = id,
                    "cleanup failed with nobody waiting; the resource stays owned and charged"
                );
                self.kept.push(Kept {
                    _failed: orphan,
                    _slot: slot,
                });
                self.report();
                self.tasks.wake_if_idle();
                return;
            }
            // The payload is provider text: it is not logged.
            Err(e) if e.is_panic() => tracing::warn!(
                cleanup = id,
                "cleanup panicked; the resource was dropped before its charge"
            ),
            Err(_) => tracing::debug!(cleanup = id, "cleanup dropped by the runtime"),
        }
        drop(slot);
        self.report();
        self.tasks.wake_if_idle();
    }

    /// Answers once no cleanup runs. Once the pool is closed (shutdown),
    /// kept failures are destroyed first — each resource, then its charge
    /// and slot: their connections hold requests and so epochs, which the
    /// registry waits for before it stops this actor.
    pub(crate) fn when_idle(&mut self, reply: oneshot::Sender<Result<(), WaitError>>) {
        if self.is_closed() && !self.kept.is_empty() {
            tracing::warn!(
                kept = self.kept.len(),
                "shutdown destroys the failures nobody waited for"
            );
            let kept = std::mem::take(&mut self.kept);
            crate::contain::drop_contained(kept, "failed closes kept until shutdown");
        }
        self.tasks.when_idle(reply);
    }

    pub(crate) fn counts(&self) -> CleanupCounts {
        CleanupCounts {
            running: count(self.tasks.len()),
            orphaned: count(self.kept.len()),
        }
    }

    /// Publishes the running cleanups to the accounts' gauge; failures are
    /// counted by their own values.
    pub(crate) fn report(&self) {
        self.accounts
            .gauges
            .cleanup_jobs
            .store(count(self.tasks.len()), Ordering::Release);
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
