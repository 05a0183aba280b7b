//! [`StoreState`]: the maps and the byte account.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::board::FencedRecord;
use crate::error::ControlPlaneError;
use crate::lease::{FencingToken, LeaseKey, LeaseState};
use crate::name::{NodeId, ServiceGroup, TopicName};
use crate::presence::Registration;
use crate::store::limits::{StoreLimits, StoreStats};
use crate::store::{LEASE_OVERHEAD_BYTES, PRESENCE_OVERHEAD_BYTES};

/// One registration and when it expires (also a record of the file
/// store's V1 document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PresenceRecord {
    pub(crate) registration: Registration,
    pub(crate) expires_at_ms: u64,
}

impl PresenceRecord {
    pub(crate) fn bytes(&self) -> u64 {
        Self::bytes_of(&self.registration)
    }

    /// What a record of `registration` is charged.
    pub(crate) fn bytes_of(registration: &Registration) -> u64 {
        PRESENCE_OVERHEAD_BYTES + registration.text_bytes() as u64
    }

    pub(crate) fn is_live(&self, now_ms: u64) -> bool {
        now_ms < self.expires_at_ms
    }
}

/// One lease slot: its holder, if any, and its last token (also a record of
/// the file store's V1 document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LeaseRecord {
    pub(crate) key: LeaseKey,
    pub(crate) holder: Option<NodeId>,
    pub(crate) token: FencingToken,
    pub(crate) expires_at_ms: u64,
}

impl LeaseRecord {
    pub(crate) fn bytes(&self) -> u64 {
        LEASE_OVERHEAD_BYTES
            + self.key.text_bytes() as u64
            + self
                .holder
                .as_ref()
                .map_or(0, |holder| holder.as_str().len()) as u64
    }

    /// The live holder, if any.
    pub(crate) fn live_holder(&self, now_ms: u64) -> Option<&NodeId> {
        self.holder.as_ref().filter(|_| now_ms < self.expires_at_ms)
    }

    pub(crate) fn state(&self, now_ms: u64) -> LeaseState {
        let holder = self.live_holder(now_ms).cloned();
        let remaining = holder
            .as_ref()
            .map(|_| std::time::Duration::from_millis(self.expires_at_ms.saturating_sub(now_ms)));
        LeaseState {
            key: self.key.clone(),
            holder,
            token: self.token,
            remaining,
        }
    }
}

/// Registrations by service then node, lease slots by key, posts by
/// service, topic then node, fenced records by lease, and the account.
#[derive(Debug, Clone)]
pub(crate) struct StoreState {
    pub(crate) presence: BTreeMap<ServiceGroup, BTreeMap<crate::name::NodeId, PresenceRecord>>,
    pub(crate) leases: BTreeMap<LeaseKey, LeaseRecord>,
    pub(crate) posts: BTreeMap<ServiceGroup, BTreeMap<TopicName, BTreeMap<NodeId, Vec<u8>>>>,
    pub(crate) fenced: BTreeMap<LeaseKey, FencedRecord>,
    limits: StoreLimits,
    registrations: usize,
    post_count: usize,
    bytes: u64,
    peak_bytes: u64,
    rejections: u64,
}

impl StoreState {
    pub(crate) fn new(limits: StoreLimits) -> Self {
        Self {
            presence: BTreeMap::new(),
            leases: BTreeMap::new(),
            posts: BTreeMap::new(),
            fenced: BTreeMap::new(),
            limits,
            registrations: 0,
            post_count: 0,
            bytes: 0,
            peak_bytes: 0,
            rejections: 0,
        }
    }

    pub(crate) fn limits(&self) -> StoreLimits {
        self.limits
    }

    pub(crate) fn stats(&self) -> StoreStats {
        StoreStats {
            registrations: self.registrations,
            lease_slots: self.leases.len(),
            posts: self.post_count,
            fenced_records: self.fenced.len(),
            current_bytes: self.bytes,
            peak_bytes: self.peak_bytes,
            rejections: self.rejections,
        }
    }

    pub(crate) fn records(&self) -> usize {
        self.registrations + self.leases.len() + self.post_count + self.fenced.len()
    }

    /// Whether replacing `old_bytes` by `new_bytes` and adding
    /// `new_records` records fits; names the limit when it does not.
    pub(crate) fn fits(
        &self,
        new_records: usize,
        old_bytes: u64,
        new_bytes: u64,
    ) -> Result<(), &'static str> {
        if self.records() + new_records > self.limits.max_records {
            return Err("records");
        }
        if self.bytes - old_bytes + new_bytes > self.limits.max_bytes {
            return Err("retained bytes");
        }
        Ok(())
    }

    /// Counts a refusal for `limit` and names it.
    pub(crate) fn reject(&mut self, limit: &'static str) -> ControlPlaneError {
        self.rejections += 1;
        ControlPlaneError::LimitExceeded { limit }
    }

    /// [`fits`](Self::fits), counting a refusal.
    pub(crate) fn check_fits(
        &mut self,
        new_records: usize,
        old_bytes: u64,
        new_bytes: u64,
    ) -> Result<(), ControlPlaneError> {
        self.fits(new_records, old_bytes, new_bytes)
            .map_err(|limit| self.reject(limit))
    }

    /// Records that `old_bytes` were replaced by `new_bytes`.
    pub(crate) fn account(&mut self, old_bytes: u64, new_bytes: u64) {
        self.bytes = self.bytes - old_bytes + new_bytes;
        self.peak_bytes = self.peak_bytes.max(self.bytes);
    }

    pub(crate) fn count_registration(&mut self, delta: isize) {
        self.registrations = self.registrations.saturating_add_signed(delta);
    }

    pub(crate) fn count_posts(&mut self, delta: isize) {
        self.post_count = self.post_count.saturating_add_signed(delta);
    }

    /// Inserts a decoded registration as it was persisted.
    ///
    /// # Errors
    ///
    /// `LimitExceeded` when it does not fit, `Corrupt` when it repeats a key.
    pub(crate) fn restore_presence(
        &mut self,
        record: PresenceRecord,
    ) -> Result<(), ControlPlaneError> {
        let bytes = record.bytes();
        self.check_fits(1, 0, bytes)?;
        let nodes = self
            .presence
            .entry(record.registration.service().clone())
            .or_default();
        if nodes.contains_key(record.registration.node()) {
            return Err(ControlPlaneError::Corrupt {
                what: "state",
                reason: format!("registration {:?} appears twice", record.registration.key()),
            });
        }
        nodes.insert(record.registration.node().clone(), record);
        self.count_registration(1);
        self.account(0, bytes);
        Ok(())
    }

    /// Inserts a decoded lease slot as it was persisted.
    ///
    /// # Errors
    ///
    /// `LimitExceeded` when it does not fit, `Corrupt` when it repeats a key.
    pub(crate) fn restore_lease(&mut self, record: LeaseRecord) -> Result<(), ControlPlaneError> {
        let bytes = record.bytes();
        self.check_fits(1, 0, bytes)?;
        if self.leases.contains_key(&record.key) {
            return Err(ControlPlaneError::Corrupt {
                what: "state",
                reason: format!("lease {} appears twice", record.key),
            });
        }
        self.leases.insert(record.key.clone(), record);
        self.account(0, bytes);
        Ok(())
    }
}

/// `now + ttl` in milliseconds, failing closed.
pub(crate) fn expiry(
    now_ms: u64,
    ttl: std::time::Duration,
    what: &'static str,
) -> Result<u64, ControlPlaneError> {
    u64::try_from(ttl.as_millis())
        .ok()
        .and_then(|ttl_ms| now_ms.checked_add(ttl_ms))
        .ok_or(ControlPlaneError::Overflow { what })
}
