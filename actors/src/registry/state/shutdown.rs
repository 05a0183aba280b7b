//! Retirement and shutdown. Shutdown order: close admission (the accounts),
//! answer queued waiters `Closed` and retire every epoch; each epoch's
//! actor stops when its drain notice arrives and its charges go once the
//! actor has terminated; once no epoch is retained, the scheduler owns no
//! request and the worker and cleanup actors run nothing, stop those three,
//! complete the accounts and stop the registry.

use ractor::{ActorCell, RpcReplyPort};
use tokio::time::Instant;

use super::{State, SCHEDULER_WAIT};

impl State {
    /// Closes admission, answers queued waiters `Closed`, and retires every
    /// published epoch.
    pub(crate) fn retire(&mut self) {
        self.accounts.close();
        if let Some(slot) = self.scheduler_close.take() {
            slot.close();
        }
        for epoch in self.directory.clear() {
            if let Some(record) = self.epochs.get_mut(&epoch.instance) {
                record.handle.retire();
            }
        }
        self.refresh_configured();
    }

    /// Retires; `reply` is answered once nothing is owned any more.
    pub(crate) fn shutdown(&mut self, reply: RpcReplyPort<()>) {
        self.retire();
        self.shutdown_waiters.push(reply);
    }

    /// Completes shutdown if it was asked for and nothing is owned: no epoch
    /// retained, no request in the scheduler, no job in the worker or
    /// cleanup pool. Then stops the control actors, completes the accounts and
    /// stops the registry.
    pub(crate) async fn finish_shutdown(&mut self, myself: &ActorCell) {
        if self.shutdown_waiters.is_empty() || !self.epochs.is_empty() {
            return;
        }
        if !self.scheduler_stopping {
            if self.scheduler_counts().await != Some((0, 0)) {
                return;
            }
            let deadline = Instant::now() + SCHEDULER_WAIT;
            let workers_idle = self
                .workers
                .counts(deadline)
                .await
                .is_ok_and(|c| c.running() == 0);
            let cleanup_idle = self
                .cleanup
                .counts(deadline)
                .await
                .is_ok_and(|c| c.running == 0);
            if !workers_idle || !cleanup_idle {
                return;
            }
            self.scheduler_stopping = true;
            for cell in [
                self.scheduler.cell(),
                self.workers.cell(),
                self.cleanup.cell(),
            ] {
                let _ = cell.stop_and_wait(None, Some(SCHEDULER_WAIT)).await;
            }
        }
        if self.accounts.complete() {
            tracing::info!("provider pools shut down clean");
        }
        self.ticker.abort();
        for waiter in self.shutdown_waiters.drain(..) {
            let _ = waiter.send(());
        }
        myself.stop(Some("shut down".into()));
    }

    /// The scheduler's (pending, running), or `None` if it cannot answer.
    async fn scheduler_counts(&self) -> Option<(u32, u32)> {
        self.scheduler.counts(Instant::now() + SCHEDULER_WAIT).await
    }
}
