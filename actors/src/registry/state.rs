//! The registry actor's state and its named operations.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use std::time::Duration;

use ractor::{ActorCell, ActorId, RpcReplyPort};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::budget::{Budget, Charge, Exhausted};
use crate::cleanup::CleanupPool;
use crate::config::EPOCH_OVERHEAD;
use crate::epoch::actor::EpochHandle;
use crate::epoch::published::{EpochParts, PublishedEpoch};
use crate::error::{InstallError, LowerError};
use crate::identity::{Epoch, InstanceId, ProviderId, ServiceName};
use crate::install::{InstallReceipt, Installation};
use crate::ledger::Ledger;
use crate::limits::{LimitField, Limits};
use crate::mailbox::{BatchMailbox, Mailbox, ReleaseSlot};
use crate::registry::{Controls, Directory, Msg};
use crate::scheduler;
use crate::supervision::{RestartHistory, RestartPolicy};
use crate::workers::WorkerPool;

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
    mailbox: Mailbox<Msg>,
    scheduler: BatchMailbox<scheduler::Msg>,
    workers: WorkerPool,
    cleanup: CleanupPool,
    /// Room for the scheduler's `Close`, reserved at start.
    scheduler_close: Option<ReleaseSlot<scheduler::Msg>>,
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
        mailbox: Mailbox<Msg>,
        controls: Controls,
        ticker: tokio::task::JoinHandle<()>,
        restart: RestartPolicy,
    ) -> Self {
        Self {
            limits,
            ledger,
            directory,
            mailbox,
            scheduler_close: controls.scheduler.reserve_release(),
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

    /// Installs or replaces an epoch; see the module doc for the order.
    pub(crate) async fn install(
        &mut self,
        myself: ActorCell,
        request: Installation,
    ) -> Result<InstallReceipt, InstallError> {
        if self.ledger.is_closed() {
            return Err(InstallError::Closed);
        }
        let Installation {
            provider,
            authority,
            expected,
            credential,
            config,
        } = request;
        let entry = self.providers.get(&provider);
        let installed = entry.map_or(Epoch::ZERO, |e| e.installed);
        if expected != installed {
            return Err(InstallError::EpochMismatch {
                provider,
                expected,
                installed,
            });
        }
        let epoch = installed
            .next()
            .ok_or_else(|| InstallError::EpochExhausted {
                provider: provider.clone(),
            })?;
        if let Some(owner) = self
            .services
            .get(&config.service)
            .filter(|owner| **owner != provider)
        {
            return Err(InstallError::ServiceTaken {
                service: config.service.clone(),
                owner: owner.clone(),
            });
        }
        config.validate(self.limits.clients_per_provider as usize)?;
        if credential.len() > self.limits.private_config_bytes as usize {
            return Err(InstallError::PrivateConfigTooLarge {
                len: credential.len(),
                limit: self.limits.private_config_bytes,
            });
        }

        // Reserve everything the new epoch retains before building it.
        let origins = u32::try_from(config.origins.len()).unwrap_or(u32::MAX);
        let metadata_bytes = EPOCH_OVERHEAD
            .saturating_add(
                u32::try_from(provider.as_str().len() + authority.as_str().len())
                    .unwrap_or(u32::MAX),
            )
            .saturating_add(config.accounted_bytes())
            .saturating_add(u32::try_from(credential.len()).unwrap_or(u32::MAX));
        let provider_clients = entry.map_or_else(
            || Budget::new("clients_per_provider", self.limits.clients_per_provider),
            |e| Arc::clone(&e.clients),
        );
        let installation = entry.map_or_else(InstanceId::next, |e| e.installation);
        let charges = [
            self.ledger.retained.try_reserve(1)?,
            provider_clients.try_reserve(origins)?,
            self.ledger.clients.try_reserve(origins)?,
            self.ledger.metadata.try_reserve(metadata_bytes)?,
        ];
        let drain_notice = self.mailbox.reserve_release().ok_or(Exhausted {
            resource: "registry release slots",
            used: self.limits.retained_configurations,
            limit: self.limits.retained_configurations,
            requested: 1,
        })?;

        let service = config.service.clone();
        let published = PublishedEpoch::new(EpochParts {
            provider: provider.clone(),
            epoch,
            installation,
            authority,
            config,
            credential,
            drain_notice,
            connections_per_client: self.limits.connections_per_client,
            connections_share: self.limits.connections_share(),
            ledger: Arc::clone(&self.ledger),
        });
        let handle = EpochHandle::spawn(
            Arc::clone(&published),
            Arc::clone(&self.ledger),
            &self.limits,
            myself,
        )
        .await
        .map_err(|err| InstallError::Spawn {
            reason: err.to_string(),
        })?;

        // Publish: the old epoch is retired under the directory's write lock
        // before the new one is visible.
        if let Some(old) = self.directory.publish(Arc::clone(&published)) {
            if let Some(record) = self.epochs.get_mut(&old.instance) {
                record.handle.retire();
            }
        }
        let previous = self.providers.insert(
            provider.clone(),
            ProviderEntry {
                installation,
                installed: epoch,
                service: service.clone(),
                clients: provider_clients,
            },
        );
        if let Some(previous) = previous.filter(|p| p.service != service) {
            self.services.remove(&previous.service);
        }
        self.services.insert(service, provider.clone());
        self.by_actor
            .insert(handle.cell().get_id(), published.instance);
        self.epochs.insert(
            published.instance,
            EpochRecord {
                published: Arc::clone(&published),
                handle,
                _charges: charges,
                drained: false,
                actor_stopped: false,
                restarts: RestartHistory::default(),
            },
        );
        self.refresh_configured();
        tracing::info!(%provider, %epoch, digest = %published.digest, "epoch published");
        Ok(InstallReceipt {
            provider,
            epoch,
            digest: published.digest,
            slots: published.typed_slots(),
        })
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
            ("scheduler", self.scheduler.actor().get_id()),
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
            let _ = slot.send(scheduler::Msg::Close);
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
                self.scheduler.actor().get_cell(),
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
            let scan = crate::epoch::actor::Msg::Reclaim {
                bound: crate::registry::RECLAIM_BOUND,
                reply: None,
            };
            let _ = record.handle.mailbox().try_send(scan);
        }
    }

    /// Lowers limits, all or nothing; see `ProviderPools::lower_limits`.
    pub(crate) async fn lower_limits(&mut self, lowered: Limits) -> Result<(), LowerError> {
        if self.ledger.is_closed() {
            return Err(LowerError::Closed);
        }
        // Until every check passed, what the registry sets itself only goes
        // down: a limit raised back towards its startup value while the
        // scheduler is asked would let reservations through that a refusal
        // could not take back.
        self.set_owned(&floor(&self.limits, &lowered), Some(&lowered))
            .await?;
        // Every check passed: the raises, which nothing refuses.
        let _ = self.set_owned(&lowered, None).await;
        self.ledger.set_queue_age(lowered.queue_age);
        self.ledger.set_idle_age(lowered.idle_age);
        self.limits = lowered;
        tracing::info!(?lowered, "limits lowered");
        Ok(())
    }

    /// Sets the limits the registry keeps itself (budgets, worker and
    /// cleanup pools, tenant shares) to `target`, then gives the scheduler
    /// the ceilings of `scheduler`, if any; on a refusal, puts back
    /// everything it set.
    async fn set_owned(
        &mut self,
        target: &Limits,
        scheduler: Option<&Limits>,
    ) -> Result<(), LowerError> {
        let mut budgets: Vec<(LimitField, &Arc<Budget>, u32)> = vec![
            (
                LimitField::RetainedConfigurations,
                &self.ledger.retained,
                target.retained_configurations,
            ),
            (
                LimitField::ConfiguredClients,
                &self.ledger.clients,
                target.configured_clients,
            ),
            (
                LimitField::MetadataBytes,
                &self.ledger.metadata,
                target.metadata_bytes,
            ),
            (
                LimitField::Connections,
                &self.ledger.connections,
                target.connections,
            ),
            (
                LimitField::IdleConnections,
                &self.ledger.idle,
                target.idle_connections,
            ),
        ];
        budgets.extend(self.providers.values().map(|p| {
            (
                LimitField::ClientsPerProvider,
                &p.clients,
                target.clients_per_provider,
            )
        }));
        budgets.extend(self.epochs.values().flat_map(|record| {
            record.published.all_client_connections().map(|budget| {
                (
                    LimitField::ConnectionsPerClient,
                    budget,
                    target.connections_per_client,
                )
            })
        }));
        let mut lowered_so_far = Vec::with_capacity(budgets.len());
        let mut refusal = None;
        for (field, budget, requested) in budgets {
            let previous = budget.limit();
            match budget.set_limit(requested) {
                Ok(()) => lowered_so_far.push((budget, previous)),
                Err(in_use) => {
                    refusal = Some(LowerError::InUse {
                        field,
                        used: in_use.used,
                        requested,
                    });
                    break;
                }
            }
        }
        let pools = [
            (
                LimitField::ProviderWorkers,
                target.provider_workers,
                self.limits.provider_workers,
            ),
            (
                LimitField::CleanupJobs,
                target.cleanup_jobs,
                self.limits.cleanup_jobs,
            ),
        ];
        let mut pools_lowered = 0;
        for (field, requested, _) in pools {
            if refusal.is_some() {
                break;
            }
            let result = match field {
                LimitField::ProviderWorkers => self.workers.set_limit(requested),
                _ => self.cleanup.set_limit(requested),
            };
            match result {
                Ok(()) => pools_lowered += 1,
                Err(in_use) => {
                    refusal = Some(LowerError::InUse {
                        field,
                        used: in_use.used,
                        requested,
                    })
                }
            }
        }
        let mut shares_lowered = None;
        let client_shares: Vec<&crate::tenants::ShareTable> = self
            .epochs
            .values()
            .flat_map(|record| record.published.all_client_tenants())
            .collect();
        let mut client_shares_lowered = Vec::new();
        if refusal.is_none() {
            let share = target.connections_share();
            for table in &client_shares {
                match table.set_share(share, true) {
                    Ok(previous) => client_shares_lowered.push((*table, previous)),
                    Err(in_use) => {
                        refusal = Some(LowerError::InUse {
                            field: LimitField::ConnectionsPerTenant,
                            used: in_use.used,
                            requested: share,
                        });
                        break;
                    }
                }
            }
        }
        if refusal.is_none() {
            let shares = &self.ledger.tenants;
            match shares.lower(crate::tenants::Lowered::of(target)) {
                Ok(previous) => shares_lowered = Some(previous),
                Err(in_use) => {
                    refusal = Some(LowerError::InUse {
                        field: LimitField::MetadataPerTenant,
                        used: in_use.used,
                        requested: target.metadata_per_tenant,
                    })
                }
            }
        }
        if let (None, Some(ceilings)) = (&refusal, scheduler) {
            refusal = self.lower_scheduler(ceilings).await.err();
        }
        if let Some(refusal) = refusal {
            if let Some(previous) = shares_lowered {
                self.ledger.tenants.restore(previous);
            }
            for (table, previous) in client_shares_lowered {
                let _ = table.set_share(previous, false);
            }
            for (budget, previous) in lowered_so_far {
                // Restoring a higher limit cannot fail.
                let _ = budget.set_limit(previous);
            }
            for (field, _, previous) in pools.into_iter().take(pools_lowered) {
                let _ = match field {
                    LimitField::ProviderWorkers => self.workers.set_limit(previous),
                    _ => self.cleanup.set_limit(previous),
                };
            }
            return Err(refusal);
        }
        Ok(())
    }

    async fn lower_scheduler(&self, lowered: &Limits) -> Result<(), LowerError> {
        let (reply, answer) = oneshot::channel();
        let msg = scheduler::Msg::SetCeilings {
            ceilings: scheduler::ceilings(lowered),
            reply: reply.into(),
        };
        let deadline = Instant::now() + SCHEDULER_WAIT;
        self.scheduler
            .send_within(msg, deadline)
            .await
            .map_err(|_| LowerError::Busy)?;
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(in_use))) => Err(LowerError::InUse {
                field: in_use.field,
                used: in_use.used,
                requested: in_use.requested,
            }),
            Ok(Err(_)) | Err(_) => Err(LowerError::Busy),
        }
    }

    /// The scheduler's (pending, running), or `None` if it cannot answer.
    async fn scheduler_counts(&self) -> Option<(u32, u32)> {
        let (reply, answer) = oneshot::channel();
        let deadline = Instant::now() + SCHEDULER_WAIT;
        let msg = scheduler::Msg::Counts {
            reply: reply.into(),
        };
        self.scheduler.send_within(msg, deadline).await.ok()?;
        tokio::time::timeout_at(deadline, answer).await.ok()?.ok()
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

/// `a` and `b`, field by field, the lower of each limit the registry sets
/// itself ([`State::set_owned`]); the rest as in `b`.
fn floor(a: &Limits, b: &Limits) -> Limits {
    Limits {
        retained_configurations: a.retained_configurations.min(b.retained_configurations),
        configured_clients: a.configured_clients.min(b.configured_clients),
        clients_per_provider: a.clients_per_provider.min(b.clients_per_provider),
        connections: a.connections.min(b.connections),
        connections_per_client: a.connections_per_client.min(b.connections_per_client),
        connections_per_tenant: a.connections_per_tenant.min(b.connections_per_tenant),
        idle_connections: a.idle_connections.min(b.idle_connections),
        requests_per_tenant: a.requests_per_tenant.min(b.requests_per_tenant),
        provider_workers: a.provider_workers.min(b.provider_workers),
        workers_per_tenant: a.workers_per_tenant.min(b.workers_per_tenant),
        cleanup_jobs: a.cleanup_jobs.min(b.cleanup_jobs),
        metadata_bytes: a.metadata_bytes.min(b.metadata_bytes),
        metadata_per_tenant: a.metadata_per_tenant.min(b.metadata_per_tenant),
        ..*b
    }
}
