//! Install: create or replace a provider's epoch in four named steps —
//! validate (the expected epoch, the service's owner, the configuration and
//! the credential's size), reserve, spawn, publish. Each step hands the
//! next an owned value; a refusal before publish drops what was reserved,
//! which releases it, and leaves the old epoch in place.

use std::sync::Arc;

use ractor::ActorCell;

use super::{EpochRecord, ProviderEntry, State};
use crate::budget::{Budget, Charge, Exhausted};
use crate::config::EPOCH_OVERHEAD;
use crate::epoch::published::{EpochParts, PublishedEpoch};
use crate::epoch::{DrainNotice, EpochHandle};
use crate::error::InstallError;
use crate::identity::{Epoch, InstanceId, ServiceName};
use crate::install::{InstallReceipt, Installation};
use crate::supervision::RestartHistory;

/// An installation that passed every check, with the epoch it will be.
struct Validated {
    request: Installation,
    epoch: Epoch,
}

/// What the new epoch retains, reserved before it is built; dropped on a
/// refusal, which releases it.
struct Reserved {
    /// Shared by every epoch of the provider's installation.
    installation: InstanceId,
    provider_clients: Arc<Budget>,
    charges: [Charge; 4],
    drain_notice: DrainNotice,
}

/// A built epoch with its running actor, not yet published.
struct Spawned {
    published: Arc<PublishedEpoch>,
    handle: EpochHandle,
    installation: InstanceId,
    provider_clients: Arc<Budget>,
    charges: [Charge; 4],
    service: ServiceName,
}

impl State {
    /// Installs or replaces an epoch, in named steps: validate → reserve →
    /// spawn → publish. A refusal in any step before publish drops what the
    /// earlier steps reserved and leaves the old epoch in place.
    pub(crate) async fn install(
        &mut self,
        myself: ActorCell,
        request: Installation,
    ) -> Result<InstallReceipt, InstallError> {
        let validated = self.validate(request)?;
        let reserved = self.reserve(&validated)?;
        let spawned = self.spawn_epoch(validated, reserved, myself).await?;
        Ok(self.publish(spawned))
    }

    /// Checks the expected epoch, the service's owner, the public
    /// configuration and the credential's size.
    fn validate(&self, request: Installation) -> Result<Validated, InstallError> {
        if self.accounts.is_closed() {
            return Err(InstallError::Closed);
        }
        let provider = &request.provider;
        let installed = self
            .providers
            .get(provider)
            .map_or(Epoch::ZERO, |e| e.installed);
        if request.expected != installed {
            return Err(InstallError::EpochMismatch {
                provider: provider.clone(),
                expected: request.expected,
                installed,
            });
        }
        let epoch = installed
            .next()
            .ok_or_else(|| InstallError::EpochExhausted {
                provider: provider.clone(),
            })?;
        let service = &request.config.service;
        if let Some(owner) = self.services.get(service).filter(|o| *o != provider) {
            return Err(InstallError::ServiceTaken {
                service: service.clone(),
                owner: owner.clone(),
            });
        }
        request
            .config
            .validate(self.limits.clients_per_provider as usize)?;
        let len = request.credential.len();
        if len > self.limits.private_config_bytes as usize {
            return Err(InstallError::PrivateConfigTooLarge {
                len,
                limit: self.limits.private_config_bytes,
            });
        }
        Ok(Validated { request, epoch })
    }

    /// Reserves everything the new epoch retains: its configuration, the
    /// provider's and the node's clients, its metadata bytes and the room
    /// for its drain notice.
    fn reserve(&self, validated: &Validated) -> Result<Reserved, InstallError> {
        let request = &validated.request;
        let entry = self.providers.get(&request.provider);
        let origins = u32::try_from(request.config.origins.len()).unwrap_or(u32::MAX);
        let provider_clients = entry.map_or_else(
            || Budget::new("clients_per_provider", self.limits.clients_per_provider),
            |e| Arc::clone(&e.clients),
        );
        let charges = [
            self.accounts.retained.try_reserve(1)?,
            provider_clients.try_reserve(origins)?,
            self.accounts.clients.try_reserve(origins)?,
            self.accounts
                .metadata
                .try_reserve(metadata_bytes(request))?,
        ];
        let drain_notice = self.registry.reserve_drain_notice().ok_or(Exhausted {
            resource: "registry release slots",
            used: self.limits.retained_configurations,
            limit: self.limits.retained_configurations,
            requested: 1,
        })?;
        Ok(Reserved {
            installation: entry.map_or_else(InstanceId::next, |e| e.installation),
            provider_clients,
            charges,
            drain_notice,
        })
    }

    /// Builds the epoch and spawns its actor, linked to the registry.
    async fn spawn_epoch(
        &self,
        validated: Validated,
        reserved: Reserved,
        myself: ActorCell,
    ) -> Result<Spawned, InstallError> {
        let Validated { request, epoch } = validated;
        let Reserved {
            installation,
            provider_clients,
            charges,
            drain_notice,
        } = reserved;
        let service = request.config.service.clone();
        let published = PublishedEpoch::new(EpochParts {
            provider: request.provider,
            epoch,
            installation,
            authority: request.authority,
            config: request.config,
            credential: request.credential,
            drain_notice,
            connections_per_client: self.limits.connections_per_client,
            connections_share: self.limits.connections_share(),
            accounts: Arc::clone(&self.accounts),
        });
        let handle = EpochHandle::spawn(
            Arc::clone(&published),
            Arc::clone(&self.accounts),
            &self.limits,
            myself,
        )
        .await
        .map_err(|err| InstallError::Spawn { cause: err.into() })?;
        Ok(Spawned {
            published,
            handle,
            installation,
            provider_clients,
            charges,
            service,
        })
    }

    /// Publishes the epoch, retiring the old one under the directory's
    /// write lock before the new one is visible, and records it.
    fn publish(&mut self, spawned: Spawned) -> InstallReceipt {
        let Spawned {
            published,
            handle,
            installation,
            provider_clients,
            charges,
            service,
        } = spawned;
        let (provider, epoch) = (published.provider.clone(), published.epoch);

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
        InstallReceipt {
            provider,
            epoch,
            digest: published.digest,
            slots: published.typed_slots(),
        }
    }
}

/// The metadata bytes an epoch of `request` retains: the fixed overhead,
/// its names, its accounted configuration and its credential.
fn metadata_bytes(request: &Installation) -> u32 {
    let names = request.provider.as_str().len() + request.authority.as_str().len();
    EPOCH_OVERHEAD
        .saturating_add(u32::try_from(names).unwrap_or(u32::MAX))
        .saturating_add(request.config.accounted_bytes())
        .saturating_add(u32::try_from(request.credential.len()).unwrap_or(u32::MAX))
}
