//! Presence operations of [`StoreState`].

use crate::error::ControlPlaneError;
use crate::name::ServiceGroup;
use crate::presence::{PresenceKey, Registration};
use crate::store::state::{expiry, PresenceRecord, StoreState};

impl StoreState {
    /// Creates or replaces a registration; a replacement that does not fit
    /// leaves the previous one unchanged, one that does drops its posts.
    pub(crate) fn register(
        &mut self,
        registration: Registration,
        now_ms: u64,
    ) -> Result<(), ControlPlaneError> {
        let expires_at_ms = expiry(now_ms, registration.ttl(), "registration expiry")?;
        let record = PresenceRecord {
            registration,
            expires_at_ms,
        };
        let new_bytes = record.bytes();
        let _swept = self.make_room_for(&record.registration, now_ms);
        let old_bytes = self.presence_bytes(record.registration.key());
        if let Err(limit) = self.fits(
            usize::from(old_bytes.is_none()),
            old_bytes.unwrap_or(0),
            new_bytes,
        ) {
            return Err(self.reject(limit));
        }
        let key = record.registration.key().clone();
        let replaced = self
            .presence
            .entry(key.service.clone())
            .or_default()
            .insert(key.node.clone(), record);
        match replaced {
            Some(_) => self.drop_posts(&key),
            None => self.count_registration(1),
        }
        self.account(old_bytes.unwrap_or(0), new_bytes);
        Ok(())
    }

    /// Sweeps expired registrations when `registration` would not fit as it
    /// stands, and hands back what was swept (the file client puts it back
    /// if the change cannot be persisted). Expired registrations are swept
    /// lazily, only when room is short.
    pub(crate) fn make_room_for(
        &mut self,
        registration: &Registration,
        now_ms: u64,
    ) -> Vec<PresenceRecord> {
        let old_bytes = self.presence_bytes(registration.key());
        let fits = self.fits(
            usize::from(old_bytes.is_none()),
            old_bytes.unwrap_or(0),
            PresenceRecord::bytes_of(registration),
        );
        match fits {
            Ok(()) => Vec::new(),
            Err(_) => self.sweep_expired(now_ms),
        }
    }

    /// Extends a live registration by its time to live.
    pub(crate) fn heartbeat(
        &mut self,
        key: &PresenceKey,
        now_ms: u64,
    ) -> Result<(), ControlPlaneError> {
        let live = self
            .presence
            .get(&key.service)
            .and_then(|nodes| nodes.get(&key.node))
            .map(|record| record.is_live(now_ms));
        match live {
            None => Err(ControlPlaneError::NotRegistered),
            Some(false) => {
                self.deregister(key);
                Err(ControlPlaneError::NotRegistered)
            }
            Some(true) => {
                let record = self
                    .presence
                    .get_mut(&key.service)
                    .and_then(|nodes| nodes.get_mut(&key.node))
                    .ok_or(ControlPlaneError::NotRegistered)?;
                record.expires_at_ms =
                    expiry(now_ms, record.registration.ttl(), "registration expiry")?;
                Ok(())
            }
        }
    }

    /// Removes a registration if present, with its posts, and hands it
    /// back (without its posts).
    pub(crate) fn deregister(&mut self, key: &PresenceKey) -> Option<PresenceRecord> {
        self.drop_posts(key);
        let nodes = self.presence.get_mut(&key.service)?;
        let removed = nodes.remove(&key.node);
        if nodes.is_empty() {
            self.presence.remove(&key.service);
        }
        if let Some(record) = &removed {
            self.count_registration(-1);
            self.account(record.bytes(), 0);
        }
        removed
    }

    /// The live instances of `service`, ordered by node.
    pub(crate) fn discover(&self, service: &ServiceGroup, now_ms: u64) -> Vec<Registration> {
        self.presence
            .get(service)
            .into_iter()
            .flat_map(|nodes| nodes.values())
            .filter(|record| record.is_live(now_ms))
            .map(|record| record.registration.clone())
            .collect()
    }

    /// Removes every expired registration and hands them back.
    pub(crate) fn sweep_expired(&mut self, now_ms: u64) -> Vec<PresenceRecord> {
        let expired: Vec<PresenceKey> = self
            .presence
            .values()
            .flat_map(|nodes| nodes.values())
            .filter(|record| !record.is_live(now_ms))
            .map(|record| record.registration.key().clone())
            .collect();
        expired
            .iter()
            .filter_map(|key| self.deregister(key))
            .collect()
    }

    fn presence_bytes(&self, key: &PresenceKey) -> Option<u64> {
        self.presence
            .get(&key.service)
            .and_then(|nodes| nodes.get(&key.node))
            .map(PresenceRecord::bytes)
    }
}
