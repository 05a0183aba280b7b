//! Presence over etcd: a registration is a key attached to its own etcd
//! lease; a heartbeat keeps that lease alive; discovery is a range.
//!
//! Invariants:
//! - Each registration has its own etcd lease, granted for its time to live
//!   (whole seconds, rounded up, at least etcd's minimum). Replacing or
//!   deregistering revokes the lease it displaced.
//! - A heartbeat never revives: once the etcd lease expired (or the key is
//!   gone), it answers `NotRegistered`.
//! - Discovery reads at most the configured number of instances; a service
//!   with more is an error, never a silent truncation. An instance is
//!   listed until etcd revokes its expired lease (etcd checks expiry about
//!   every 500 ms).

use crate::error::ControlPlaneError;
use crate::etcd::client::EtcdClient;
use crate::etcd::layout::etcd_ttl_secs;
use crate::etcd::wire::{Bytes64, Int, PutRequest};
use crate::name::ServiceGroup;
use crate::presence::{PresenceKey, Registration};

impl EtcdClient {
    pub(super) async fn etcd_register(
        &self,
        registration: Registration,
    ) -> Result<(), ControlPlaneError> {
        let value = serde_json::to_vec(&registration)
            .map_err(|error| ControlPlaneError::Protocol(error.to_string()))?;
        let key = self.keys.presence(registration.key());
        let lease = self
            .gateway
            .grant(etcd_ttl_secs(registration.ttl()))
            .await?;
        let put = PutRequest {
            key: Bytes64(key),
            value: Bytes64(value),
            lease: Int(lease),
            prev_kv: true,
        };
        match self.gateway.put(put).await {
            Ok(answer) => {
                if let Some(previous) = answer.prev_kv.filter(|previous| previous.lease.0 != lease)
                {
                    self.gateway.revoke_quietly(previous.lease.0).await;
                }
                Ok(())
            }
            Err(error) => {
                // Whether or not the put applied, the caller learns it
                // failed: revoking leaves nothing behind either way.
                self.gateway.revoke_quietly(lease).await;
                Err(error)
            }
        }
    }

    pub(super) async fn etcd_heartbeat(&self, key: PresenceKey) -> Result<(), ControlPlaneError> {
        let stored = self
            .gateway
            .get(&self.keys.presence(&key), true)
            .await?
            .ok_or(ControlPlaneError::NotRegistered)?;
        if stored.lease.0 == 0 {
            return Err(ControlPlaneError::Corrupt {
                what: "etcd presence key",
                reason: "not attached to an etcd lease".to_owned(),
            });
        }
        match self
            .gateway
            .keep_alive(stored.lease.0, super::gateway::Exchange::Plain)
            .await?
        {
            Some(_) => Ok(()),
            None => Err(ControlPlaneError::NotRegistered),
        }
    }

    pub(super) async fn etcd_deregister(&self, key: PresenceKey) -> Result<(), ControlPlaneError> {
        if let Some(previous) = self.gateway.delete(&self.keys.presence(&key)).await? {
            self.gateway.revoke_quietly(previous.lease.0).await;
        }
        Ok(())
    }

    pub(super) async fn etcd_discover(
        &self,
        service: ServiceGroup,
    ) -> Result<Vec<Registration>, ControlPlaneError> {
        let (start, end) = self.keys.presence_range(&service);
        let limit = self.max_discovered;
        let answer = self
            .gateway
            .range(start, end, i64::try_from(limit + 1).unwrap_or(i64::MAX))
            .await?;
        if answer.count.0 > limit as i64 || answer.kvs.len() > limit {
            return Err(ControlPlaneError::LimitExceeded {
                limit: "discovered instances",
            });
        }
        let mut found = Vec::with_capacity(answer.kvs.len());
        for kv in answer.kvs {
            let registration: Registration =
                serde_json::from_slice(&kv.value.0).map_err(|error| {
                    ControlPlaneError::Corrupt {
                        what: "etcd presence value",
                        reason: error.to_string(),
                    }
                })?;
            if self.keys.presence(registration.key()) != kv.key.0 {
                return Err(ControlPlaneError::Corrupt {
                    what: "etcd presence value",
                    reason: format!("{:?} is stored under another key", registration.key()),
                });
            }
            found.push(registration);
        }
        found.sort_by(|a, b| a.node().cmp(b.node()));
        Ok(found)
    }
}
