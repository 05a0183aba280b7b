//! The registry actor's state and its named operations.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use ractor::{ActorCell, ActorId, RpcReplyPort};

use crate::budget::{Budget, Charge, Exhausted};
use crate::config::EPOCH_OVERHEAD;
use crate::epoch::actor::EpochHandle;
use crate::epoch::published::{EpochParts, PublishedEpoch};
use crate::error::InstallError;
use crate::identity::{Epoch, InstanceId, ProviderId, ServiceName};
use crate::install::{InstallReceipt, Installation};
use crate::ledger::Ledger;
use crate::limits::Limits;
use crate::mailbox::Mailbox;
use crate::registry::{Directory, Msg};

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
}

pub(crate) struct State {
    limits: Limits,
    ledger: Arc<Ledger>,
    directory: Arc<Directory>,
    mailbox: Mailbox<Msg>,
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
    ) -> Self {
        Self {
            limits,
            ledger,
            directory,
            mailbox,
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
        });
        let handle = EpochHandle::spawn(Arc::clone(&published), myself)
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

    /// An epoch actor terminated or failed.
    pub(crate) fn epoch_actor_stopped(&mut self, actor: ActorId, failure: Option<String>) {
        let Some(instance) = self.by_actor.remove(&actor) else {
            return;
        };
        if let Some(record) = self.epochs.get_mut(&instance) {
            record.actor_stopped = true;
            if let Some(reason) = failure
                .as_deref()
                .or((!record.drained).then_some("stopped before draining"))
            {
                tracing::error!(
                    provider = %record.published.provider,
                    epoch = %record.published.epoch,
                    reason,
                    "epoch actor lost; its reservations stay until its leases drain"
                );
            }
        }
        self.collect(instance);
    }

    /// Closes admission and retires every published epoch.
    pub(crate) fn retire(&mut self) {
        self.ledger.close();
        for epoch in self.directory.clear() {
            if let Some(record) = self.epochs.get_mut(&epoch.instance) {
                record.handle.retire();
            }
        }
        self.refresh_configured();
    }

    /// Retires, then answers `reply` once nothing is retained.
    pub(crate) fn shutdown(&mut self, myself: &ActorCell, reply: RpcReplyPort<()>) {
        self.retire();
        self.shutdown_waiters.push(reply);
        self.finish_shutdown(myself);
    }

    /// Completes shutdown if it was asked for and nothing is retained.
    pub(crate) fn finish_shutdown(&mut self, myself: &ActorCell) {
        if self.shutdown_waiters.is_empty() || !self.epochs.is_empty() {
            return;
        }
        if self.ledger.complete() {
            tracing::info!("provider pools shut down clean");
        }
        for waiter in self.shutdown_waiters.drain(..) {
            let _ = waiter.send(());
        }
        myself.stop(Some("shut down".into()));
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
