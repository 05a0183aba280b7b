//! Install: create or replace a provider's epoch, in the order the
//! registry's module doc gives (check the expected epoch, validate,
//! reserve, spawn, publish); a refusal before publish drops what was
//! reserved and leaves the old epoch in place.

use std::sync::Arc;

use ractor::ActorCell;

use super::{EpochRecord, ProviderEntry, State};
use crate::budget::{Budget, Exhausted};
use crate::config::EPOCH_OVERHEAD;
use crate::epoch::actor::EpochHandle;
use crate::epoch::published::{EpochParts, PublishedEpoch};
use crate::error::InstallError;
use crate::identity::{Epoch, InstanceId};
use crate::install::{InstallReceipt, Installation};
use crate::supervision::RestartHistory;

impl State {
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
        .map_err(|err| InstallError::Spawn { cause: err.into() })?;

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
}
