//! Board operations of [`StoreState`]: posts beside registrations, and
//! records fenced by a lease.
//!
//! Invariants:
//! - A post is stored only beside its registration: every path that
//!   removes or replaces a registration record (deregister, sweep, expiry
//!   found by a heartbeat or a post, `register` again) drops its posts.
//!   The posts of an expired registration not yet swept are stored but
//!   never listed.
//! - Posts and fenced records count against the store's records and
//!   estimated bytes like registrations and lease slots; one that does not
//!   fit, after expired registrations are swept, is refused with
//!   `LimitExceeded`, counted in `rejections`, and changes nothing.
//! - A fenced record is written only while its lease is held, on the
//!   store's clock, by the grant's holder with the grant's token; it is
//!   kept after release and expiry, like the lease slot.
//! - A value over [`MAX_BOARD_VALUE_BYTES`] is refused before the store is
//!   looked at.

use crate::board::{FencedRecord, Post, MAX_BOARD_VALUE_BYTES};
use crate::error::ControlPlaneError;
use crate::lease::{LeaseGrant, LeaseKey};
use crate::name::{ServiceGroup, TopicName};
use crate::presence::PresenceKey;
use crate::store::state::StoreState;
use crate::store::{FENCED_OVERHEAD_BYTES, POST_OVERHEAD_BYTES};

impl StoreState {
    /// Posts `value` on `topic` for the live registration `key`, replacing
    /// its previous post there.
    pub(crate) fn post(
        &mut self,
        key: PresenceKey,
        topic: TopicName,
        value: Vec<u8>,
        now_ms: u64,
    ) -> Result<(), ControlPlaneError> {
        check_value(&value)?;
        match self
            .presence_record(&key)
            .map(|record| record.is_live(now_ms))
        {
            None => return Err(ControlPlaneError::NotRegistered),
            Some(false) => {
                self.deregister(&key);
                return Err(ControlPlaneError::NotRegistered);
            }
            Some(true) => {}
        }
        let old_bytes = self
            .posts
            .get(&key.service)
            .and_then(|topics| topics.get(&topic))
            .and_then(|nodes| nodes.get(&key.node))
            .map(|old| post_bytes(&key, &topic, old.len()));
        let new_bytes = post_bytes(&key, &topic, value.len());
        self.make_room(
            usize::from(old_bytes.is_none()),
            old_bytes.unwrap_or(0),
            new_bytes,
            now_ms,
        )?;
        let replaced = self
            .posts
            .entry(key.service)
            .or_default()
            .entry(topic)
            .or_default()
            .insert(key.node, value);
        if replaced.is_none() {
            self.count_posts(1);
        }
        self.account(old_bytes.unwrap_or(0), new_bytes);
        Ok(())
    }

    /// The posts on `topic` of the live instances of `service`, ordered by
    /// node.
    pub(crate) fn read_posts(
        &self,
        service: &ServiceGroup,
        topic: &TopicName,
        now_ms: u64,
    ) -> Vec<Post> {
        self.posts
            .get(service)
            .and_then(|topics| topics.get(topic))
            .into_iter()
            .flatten()
            .filter(|(node, _)| {
                self.presence
                    .get(service)
                    .and_then(|nodes| nodes.get(*node))
                    .is_some_and(|record| record.is_live(now_ms))
            })
            .map(|(node, value)| Post {
                node: node.clone(),
                value: value.clone(),
            })
            .collect()
    }

    /// Drops every post of registration `key` (it was removed or replaced).
    pub(crate) fn drop_posts(&mut self, key: &PresenceKey) {
        let Some(topics) = self.posts.get_mut(&key.service) else {
            return;
        };
        let (mut dropped, mut freed) = (0, 0);
        topics.retain(|topic, nodes| {
            if let Some(value) = nodes.remove(&key.node) {
                dropped += 1;
                freed += post_bytes(key, topic, value.len());
            }
            !nodes.is_empty()
        });
        if topics.is_empty() {
            self.posts.remove(&key.service);
        }
        self.count_posts(-dropped);
        self.account(freed, 0);
    }

    /// Writes `value` as the record of `grant.key` if the lease is held
    /// now by `grant.holder` with `grant.token`.
    pub(crate) fn write_fenced(
        &mut self,
        grant: LeaseGrant,
        value: Vec<u8>,
        now_ms: u64,
    ) -> Result<(), ControlPlaneError> {
        check_value(&value)?;
        let held = self.leases.get(&grant.key).is_some_and(|record| {
            record.live_holder(now_ms) == Some(&grant.holder) && record.token == grant.token
        });
        if !held {
            return Err(ControlPlaneError::LeaseLost);
        }
        let old_bytes = self
            .fenced
            .get(&grant.key)
            .map(|old| fenced_bytes(&grant.key, old.value.len()));
        let new_bytes = fenced_bytes(&grant.key, value.len());
        self.make_room(
            usize::from(old_bytes.is_none()),
            old_bytes.unwrap_or(0),
            new_bytes,
            now_ms,
        )?;
        self.fenced.insert(
            grant.key,
            FencedRecord {
                token: grant.token,
                value,
            },
        );
        self.account(old_bytes.unwrap_or(0), new_bytes);
        Ok(())
    }

    /// The last record written for `key`.
    pub(crate) fn read_fenced(&self, key: &LeaseKey) -> Option<FencedRecord> {
        self.fenced.get(key).cloned()
    }

    /// Checks a change fits, sweeping expired registrations first when it
    /// does not as things stand.
    fn make_room(
        &mut self,
        new_records: usize,
        old_bytes: u64,
        new_bytes: u64,
        now_ms: u64,
    ) -> Result<(), ControlPlaneError> {
        if self.fits(new_records, old_bytes, new_bytes).is_err() {
            let _swept = self.sweep_expired(now_ms);
        }
        self.check_fits(new_records, old_bytes, new_bytes)
    }
}

/// What a post is charged: its names, its value and the overhead.
fn post_bytes(key: &PresenceKey, topic: &TopicName, value_len: usize) -> u64 {
    POST_OVERHEAD_BYTES
        + (key.service.as_str().len() + key.node.as_str().len() + topic.as_str().len() + value_len)
            as u64
}

/// What a fenced record is charged: its key, its value and the overhead.
fn fenced_bytes(key: &LeaseKey, value_len: usize) -> u64 {
    FENCED_OVERHEAD_BYTES + (key.text_bytes() + value_len) as u64
}

/// Refuses a value over [`MAX_BOARD_VALUE_BYTES`].
fn check_value(value: &[u8]) -> Result<(), ControlPlaneError> {
    if value.len() > MAX_BOARD_VALUE_BYTES {
        return Err(ControlPlaneError::LimitExceeded {
            limit: "board value",
        });
    }
    Ok(())
}
