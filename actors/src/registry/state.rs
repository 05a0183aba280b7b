//! The registry actor's state and its named operations.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use std::time::Duration;

use ractor::{ActorCell, ActorId, RpcReplyPort};
use tokio::time::Instant;

use crate::budget::{Budget, Charge};
use crate::cleanup::CleanupPool;
use crate::epoch::published::PublishedEpoch;
use crate::epoch::EpochHandle;
use crate::identity::{Epoch, InstanceId, ProviderId, ServiceName};
use crate::ledger::Ledger;
use crate::limits::Limits;
use crate::registry::{Controls, Directory, RegistryHandle};
use crate::scheduler::{CloseSlot, SchedulerHandle};
use crate::supervision::{RestartHistory, RestartPolicy};
use crate::workers::WorkerPool;

mod install;
mod lowering;

/// How long the registry waits for the scheduler during shutdown.
const SCHEDULER_WAIT: Duration = Duration::from_secs(5);

/// One logical provider across its epochs.
struct ProviderEntry {
    /// Minted at creation, shared by every epoch of this installation.
    installation: InstanceId,
    installed: Epoch,
    service: ServiceName,
    /// Clients of every retained epoch of this provider.
    clients: Arc<Budget>,
}

/// What the registry holds for one retained epoch.
struct EpochRecord {
    published: Arc<PublishedEpoch>,
    handle: EpochHandle,
    /// Released (dropped) only when the record is removed: after the epoch
    /// drained and its actor terminated.
    _charges: [Charge; 4],
    drained: bool,
    actor_stopped: bool,
    restarts: RestartHistory,
}

pub(crate) struct State {
    /// Limits in force: the startup limits, or lower.
    limits: Limits,
    ledger: Arc<Ledger>,
    directory: Arc<Directory>,
    registry: RegistryHandle,
    scheduler: SchedulerHandle,
    workers: WorkerPool,
    cleanup: CleanupPool,
    /// Room for the scheduler's `Close`, reserved at start.
    scheduler_close: Option<CloseSlot>,
    /// Set before the registry stops the control actors itself.
    scheduler_stopping: bool,
    /// The reclaim tick task; aborted when the registry completes.
    ticker: tokio::task::JoinHandle<()>,
    restart: RestartPolicy,
    providers: HashMap<ProviderId, ProviderEntry>,
    services: HashMap<ServiceName, ProviderId>,
    epochs: HashMap<InstanceId, EpochRecord>,
    by_actor: HashMap<ActorId, InstanceId>,
    shutdown_waiters: Vec<RpcReplyPort<()>>,
}

impl State {
    pub(crate) fn new(
        limits: Limits,
        ledger: Arc<Ledger>,
        directory: Arc<Directory>,
        registry: RegistryHandle,
        controls: Controls,
        ticker: tokio::task::JoinHandle<()>,
        restart: RestartPolicy,
    ) -> Self {
        Self {
            limits,
            ledger,
            directory,
            registry,
            scheduler_close: controls.scheduler.reserve_close(),
            scheduler: controls.scheduler,
            workers: controls.workers,
            cleanup: controls.cleanup,
            scheduler_stopping: false,
            ticker,
            restart,
            providers: HashMap::new(),
            services: HashMap::new(),
            epochs: HashMap::new(),
            by_actor: HashMap::new(),
            shutdown_waiters: Vec::new(),
        }
    }

    /// A retired epoch has no lease left: stop its actor.
    pub(crate) fn epoch_drained(&mut self, instance: InstanceId) {
        if let Some(record) = self.epochs.get_mut(&instance) {
            record.drained = true;
            record.handle.stop();
        }
        self.collect(instance);
    }

    /// A child actor terminated or failed: the scheduler (a control owner)
    /// or an epoch actor. An epoch actor that failed before draining is
    /// restarted with its same configuration within the restart policy;
    /// past it, its provider is retired. Its record — and every charge —
    /// stays until its leases drain.
    pub(crate) async fn child_stopped(
        &mut self,
        myself: &ActorCell,
        actor: ActorId,
        failure: Option<String>,
    ) {
        let control = [
            ("scheduler", self.scheduler.cell().get_id()),
            ("worker pool", self.workers.cell().get_id()),
            ("cleanup", self.cleanup.cell().get_id()),
        ];
        if let Some((name, _)) = control.iter().find(|(_, id)| *id == actor) {
            if !self.scheduler_stopping {
                tracing::error!(actor = name, reason = ?failure, "control actor lost; admission closed");
                self.ledger.fail();
            }
            return;
        }
        let Some(instance) = self.by_actor.remove(&actor) else {
            return;
        };
        let Some(record) = self.epochs.get_mut(&instance) else {
            return;
        };
        record.actor_stopped = true;
        // Else a drained actor's (or one past its restart budget) would
        // stay in the `waiting` gauge: no actor of the epoch sets it again.
        record.published.forget_waiters();
        if record.drained {
            self.collect(instance);
            return;
        }
        let (provider, epoch) = (record.published.provider.clone(), record.published.epoch);
        let reason = failure.as_deref().unwrap_or("stopped before draining");
        if record.restarts.try_restart(&self.restart, Instant::now()) {
            let respawned = EpochHandle::spawn(
                Arc::clone(&record.published),
                Arc::clone(&self.ledger),
                &self.limits,
                myself.clone(),
            )
            .await;
            match respawned {
                Ok(mut handle) => {
                    tracing::warn!(%provider, %epoch, reason, "epoch actor restarted");
                    if record.published.is_retired() {
                        handle.retire();
                    }
                    self.by_actor.insert(handle.cell().get_id(), instance);
                    record.handle = handle;
                    record.actor_stopped = false;
                    return;
                }
                Err(err) => tracing::error!(%provider, %epoch, %err, "epoch restart failed"),
            }
        }
        tracing::error!(%provider, %epoch, reason, "epoch actor past its restart budget; provider retired");
        self.retire_provider(&provider);
    }

    /// Unpublishes `provider`: its current epoch retires and drains.
    fn retire_provider(&mut self, provider: &ProviderId) {
        if let Some(epoch) = self.directory.unpublish(provider) {
            if let Some(record) = self.epochs.get_mut(&epoch.instance) {
                record.handle.retire();
            }
        }
        self.refresh_configured();
    }

    /// Closes admission, answers queued waiters `Closed`, and retires every
    /// published epoch.
    pub(crate) fn retire(&mut self) {
        self.ledger.close();
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
    /// cleanup pool. Then stops the control actors, completes the ledger and
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
        if self.ledger.complete() {
            tracing::info!("provider pools shut down clean");
        }
        self.ticker.abort();
        for waiter in self.shutdown_waiters.drain(..) {
            let _ = waiter.send(());
        }
        myself.stop(Some("shut down".into()));
    }

    /// Asks every retained epoch to destroy expired idle connections, each
    /// scan touching at most `RECLAIM_BOUND` entries; busy epochs skip a tick.
    pub(crate) fn reclaim_idle(&self) {
        for record in self.epochs.values() {
            record.handle.reclaim(crate::registry::RECLAIM_BOUND);
        }
    }

    /// The scheduler's (pending, running), or `None` if it cannot answer.
    async fn scheduler_counts(&self) -> Option<(u32, u32)> {
        self.scheduler.counts(Instant::now() + SCHEDULER_WAIT).await
    }

    /// Removes the record of `instance` — releasing its charges — once the
    /// epoch drained and its actor is gone.
    fn collect(&mut self, instance: InstanceId) {
        let done = self
            .epochs
            .get(&instance)
            .is_some_and(|r| r.drained && r.actor_stopped);
        if done {
            self.epochs.remove(&instance);
        }
    }

    fn refresh_configured(&self) {
        let configured = u32::try_from(self.directory.len()).unwrap_or(u32::MAX);
        self.ledger
            .gauges
            .configured_epochs
            .store(configured, Ordering::Release);
    }
}
