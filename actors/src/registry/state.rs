//! The registry actor's state and its named operations.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use std::time::Duration;

use ractor::{ActorId, RpcReplyPort};

use crate::accounts::Accounts;
use crate::budget::{Budget, Charge};
use crate::cleanup::CleanupPool;
use crate::epoch::published::PublishedEpoch;
use crate::epoch::EpochHandle;
use crate::identity::{Epoch, InstanceId, ProviderId, ServiceName};
use crate::limits::Limits;
use crate::registry::{Controls, Directory, RegistryHandle};
use crate::scheduler::{CloseSlot, SchedulerHandle};
use crate::supervision::{RestartHistory, RestartPolicy};
use crate::workers::WorkerPool;

mod install;
mod lowering;
mod shutdown;
mod supervision;

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
    accounts: Arc<Accounts>,
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
        accounts: Arc<Accounts>,
        directory: Arc<Directory>,
        registry: RegistryHandle,
        controls: Controls,
        ticker: tokio::task::JoinHandle<()>,
        restart: RestartPolicy,
    ) -> Self {
        Self {
            limits,
            accounts,
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

    /// A prober for each epoch actor not known to have stopped.
    #[cfg(feature = "testing")]
    pub(crate) fn epoch_probers(&self) -> Vec<crate::epoch::EpochProber> {
        self.epochs
            .values()
            .filter(|record| !record.actor_stopped)
            .map(|record| record.handle.prober())
            .collect()
    }

    /// Asks every retained epoch to destroy expired idle connections, each
    /// scan touching at most `RECLAIM_BOUND` entries; busy epochs skip a tick.
    pub(crate) fn reclaim_idle(&self) {
        for record in self.epochs.values() {
            record.handle.reclaim(crate::registry::RECLAIM_BOUND);
        }
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
        self.accounts
            .gauges
            .configured_epochs
            .store(configured, Ordering::Release);
    }
}
