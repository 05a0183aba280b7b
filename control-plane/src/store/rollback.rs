//! Capturing records of [`StoreState`] and putting them back as they were:
//! how the file client undoes a change it could not persist.
//!
//! Invariants:
//! - Putting back never checks limits: it only ever returns the store to a
//!   state it held before, which fitted.
//! - The record count and the byte account follow every record put back;
//!   the peak stays a high-water mark (a change undone still counted).

use crate::lease::LeaseKey;
use crate::presence::PresenceKey;
use crate::store::state::{LeaseRecord, PresenceRecord, StoreState};

impl StoreState {
    /// The registration of `key`, live or not.
    pub(crate) fn presence_record(&self, key: &PresenceKey) -> Option<&PresenceRecord> {
        self.presence
            .get(&key.service)
            .and_then(|nodes| nodes.get(&key.node))
    }

    /// Makes registration `key` what it was: removes what is there now and
    /// reinstates `previous`, if any.
    pub(crate) fn put_back_presence(
        &mut self,
        key: &PresenceKey,
        previous: Option<PresenceRecord>,
    ) {
        let _current = self.deregister(key);
        if let Some(record) = previous {
            self.reinstate_presence(record);
        }
    }

    /// Reinstates a registration removed by a sweep (or replaced), without
    /// checking limits; its posts are not put back, and a record it
    /// replaces loses its own.
    pub(crate) fn reinstate_presence(&mut self, record: PresenceRecord) {
        let bytes = record.bytes();
        let key = record.registration.key().clone();
        let replaced = self
            .presence
            .entry(key.service.clone())
            .or_default()
            .insert(key.node.clone(), record);
        match replaced {
            Some(old) => {
                self.drop_posts(&key);
                self.account(old.bytes(), bytes);
            }
            None => {
                self.count_registration(1);
                self.account(0, bytes);
            }
        }
    }

    /// Makes lease slot `key` what it was: `previous`, or no slot at all.
    pub(crate) fn put_back_lease(&mut self, key: &LeaseKey, previous: Option<LeaseRecord>) {
        let old_bytes = self.leases.get(key).map_or(0, LeaseRecord::bytes);
        let new_bytes = previous.as_ref().map_or(0, LeaseRecord::bytes);
        match previous {
            Some(record) => {
                self.leases.insert(key.clone(), record);
            }
            None => {
                self.leases.remove(key);
            }
        }
        self.account(old_bytes, new_bytes);
    }
}
