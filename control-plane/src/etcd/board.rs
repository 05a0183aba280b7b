//! [`Board`](crate::Board) over etcd: a post is a key attached to its
//! instance's etcd lease; a fenced record is a plain key written by a
//! transaction pinned to the lease key's creation revision.
//!
//! - post: reads the presence key to learn its etcd lease, then one
//!   transaction puts `board/<service>/<topic>/<node>` attached to that
//!   etcd lease if the presence key is still attached to it (a `LEASE`
//!   comparison); refused, the registration is gone or was replaced in
//!   between: `NotRegistered`.
//! - read_posts: one range over `board/<service>/<topic>/`, at most the
//!   discovery bound plus one key, so more is an error, never a silent
//!   truncation.
//! - write_fenced: reads the lease key and checks it carries the grant's
//!   holder and token (as renew and release do), then one transaction puts
//!   `fenced/<scope>/<name>` if the lease key's `create_revision` is still
//!   the token; refused: `LeaseLost`.
//! - read_fenced: one read of `fenced/<scope>/<name>`.
//!
//! Invariants:
//! - A post shares its registration's etcd lease as it stood when the post
//!   applied: a heartbeat keeps both; expiry, deregistration and
//!   replacement (which revoke that etcd lease) delete both. A registration
//!   replaced by `register` has a new etcd lease and no post: re-post after
//!   re-registering.
//! - A fenced write applies only while the lease key created at the
//!   grant's token exists. One `create_revision` names one tenure and one
//!   holder (see the lease module), so the comparison pins the holder the
//!   read checked; no other node can hold the lease (or get a token)
//!   before that key is gone.
//! - The fenced transaction is the only decisive request here: once sent,
//!   a failure without an answer is `OutcomeUnknown` (read the record
//!   back); it is never sent twice.
//! - A value over [`MAX_BOARD_VALUE_BYTES`] is refused before any request.

use crate::board::{FencedRecord, Post, MAX_BOARD_VALUE_BYTES};
use crate::error::ControlPlaneError;
use crate::etcd::client::EtcdClient;
use crate::etcd::gateway::Exchange;
use crate::etcd::layout::FencedEnvelope;
use crate::etcd::wire::{Bytes64, Compare, Int, PutRequest, RequestOp, TxnRequest};
use crate::lease::{LeaseGrant, LeaseKey};
use crate::name::{NodeId, ServiceGroup, TopicName};
use crate::presence::PresenceKey;

impl EtcdClient {
    pub(super) async fn etcd_post(
        &self,
        key: PresenceKey,
        topic: TopicName,
        value: Vec<u8>,
    ) -> Result<(), ControlPlaneError> {
        check_value(&value)?;
        let presence = self.keys.presence(&key);
        let stored = self
            .gateway
            .get(&presence, true)
            .await?
            .ok_or(ControlPlaneError::NotRegistered)?;
        let etcd_lease = stored.lease.0;
        if etcd_lease == 0 {
            return Err(ControlPlaneError::Corrupt {
                what: "etcd presence key",
                reason: "not attached to an etcd lease".to_owned(),
            });
        }
        let txn = TxnRequest {
            compare: vec![Compare::attached_to(&presence, etcd_lease)],
            success: vec![RequestOp::Put(PutRequest {
                key: Bytes64(self.keys.post(&key, &topic)),
                value: Bytes64(value),
                lease: Int(etcd_lease),
                prev_kv: false,
            })],
            failure: Vec::new(),
        };
        let answer = self.gateway.txn(&txn, Exchange::Plain).await?;
        if answer.succeeded {
            Ok(())
        } else {
            Err(ControlPlaneError::NotRegistered)
        }
    }

    pub(super) async fn etcd_read_posts(
        &self,
        service: ServiceGroup,
        topic: TopicName,
    ) -> Result<Vec<Post>, ControlPlaneError> {
        let (start, end) = self.keys.post_range(&service, &topic);
        let limit = self.max_discovered;
        let answer = self
            .gateway
            .range(
                start.clone(),
                end,
                i64::try_from(limit + 1).unwrap_or(i64::MAX),
            )
            .await?;
        if answer.count.0 > limit as i64 || answer.kvs.len() > limit {
            return Err(ControlPlaneError::LimitExceeded {
                limit: "discovered instances",
            });
        }
        let mut posts = Vec::with_capacity(answer.kvs.len());
        for kv in answer.kvs {
            let corrupt = |reason: String| ControlPlaneError::Corrupt {
                what: "etcd post",
                reason,
            };
            let node = kv
                .key
                .0
                .strip_prefix(&start[..])
                .and_then(|node| std::str::from_utf8(node).ok())
                .ok_or_else(|| corrupt("a key outside its topic's range".to_owned()))?;
            let node = NodeId::new(node).map_err(|error| corrupt(error.to_string()))?;
            if kv.value.0.len() > MAX_BOARD_VALUE_BYTES {
                return Err(corrupt(format!(
                    "{} bytes posted by {node}, at most {MAX_BOARD_VALUE_BYTES}",
                    kv.value.0.len()
                )));
            }
            posts.push(Post {
                node,
                value: kv.value.0,
            });
        }
        posts.sort_by(|a, b| a.node.cmp(&b.node));
        Ok(posts)
    }

    pub(super) async fn etcd_write_fenced(
        &self,
        grant: LeaseGrant,
        value: Vec<u8>,
    ) -> Result<(), ControlPlaneError> {
        check_value(&value)?;
        let lease = self.keys.lease(&grant.key);
        let (kv, _) = self.held(&lease, &grant).await?;
        let txn = TxnRequest {
            compare: vec![Compare::created_at(&lease, kv.create_revision.0)],
            success: vec![RequestOp::Put(PutRequest {
                key: Bytes64(self.keys.fenced(&grant.key)),
                value: Bytes64(FencedEnvelope::encode(grant.token, value)?),
                lease: Int(0),
                prev_kv: false,
            })],
            failure: Vec::new(),
        };
        let answer = self
            .gateway
            .txn(&txn, Exchange::Decisive("write_fenced"))
            .await?;
        if answer.succeeded {
            Ok(())
        } else {
            Err(ControlPlaneError::LeaseLost)
        }
    }

    pub(super) async fn etcd_read_fenced(
        &self,
        key: LeaseKey,
    ) -> Result<Option<FencedRecord>, ControlPlaneError> {
        match self.gateway.get(&self.keys.fenced(&key), false).await? {
            Some(kv) => FencedEnvelope::decode(&kv.value.0).map(Some),
            None => Ok(None),
        }
    }
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
