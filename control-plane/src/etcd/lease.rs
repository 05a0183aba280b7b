//! Fenced leases over etcd: the lease key is attached to an etcd lease of
//! the lease's time to live, and its `create_revision` is the fencing
//! token.
//!
//! - acquire: a free lease (no key) is created by a transaction that
//!   succeeds only while the key is absent, together with its epoch key;
//!   the token is that transaction's revision. The live holder re-acquires
//!   with the same token: its etcd lease is kept alive, or, for another
//!   time to live, the key is rebound to a new etcd lease by a transaction
//!   pinned to the key's create and mod revisions (a put keeps the
//!   `create_revision`). Anyone else gets `LeaseHeld`.
//! - renew: the key must carry the grant's holder and token; then the same
//!   keep-alive or rebind.
//! - release: a transaction deletes the key only if its `create_revision`
//!   is still the token; the etcd lease is then revoked.
//! - read: the lease key and the epoch key in one read-only transaction,
//!   plus the etcd lease's time to live.
//!
//! Invariants:
//! - Tokens strictly increase per lease: each acquisition creates the key
//!   anew, at a revision above every earlier one; renewals and rebinds
//!   keep `create_revision`. For one `create_revision` the holder never
//!   changes, so a token names one holder's tenure.
//! - A released or expired lease keeps its last token: the epoch key's
//!   `mod_revision` (it is written only when the lease key is created).
//! - Only the decisive request (the create or rebind transaction, the
//!   keep-alive, the release transaction) can report `OutcomeUnknown`, and
//!   it is never sent twice; extra rounds happen only after etcd refused a
//!   comparison, i.e. after a definite "not applied".

use std::time::Duration;

use crate::error::ControlPlaneError;
use crate::etcd::client::EtcdClient;
use crate::etcd::gateway::Exchange;
use crate::etcd::layout::{etcd_ttl_secs, token, HolderRecord};
use crate::etcd::wire::{
    Bytes64, Compare, DeleteRangeRequest, Int, KeyValue, PutRequest, RangeRequest, RequestOp,
    TxnRequest, TxnResponse,
};
use crate::lease::{FencingToken, LeaseGrant, LeaseKey, LeaseRequest, LeaseState};

/// How many times an acquisition reads and tries again after etcd refused
/// its comparison because the lease changed in between.
const ACQUIRE_ROUNDS: usize = 3;

/// What one conditional write found.
enum Attempt {
    /// The lease is held by the caller with this token.
    Won(FencingToken),
    /// The lease changed under the write; this is its key now.
    Changed(Option<KeyValue>),
}

impl EtcdClient {
    pub(super) async fn etcd_acquire(
        &self,
        request: LeaseRequest,
    ) -> Result<LeaseGrant, ControlPlaneError> {
        request.check()?;
        let key = self.keys.lease(&request.key);
        let wanted = HolderRecord::new(request.holder.clone(), request.ttl);
        let mut current = self.gateway.get(&key, false).await?;
        for _ in 0..ACQUIRE_ROUNDS {
            let attempt = match &current {
                None => self.create(&request.key, &key, &wanted).await?,
                Some(kv) => {
                    let stored = HolderRecord::decode(&kv.value.0)?;
                    if stored.holder != request.holder {
                        return Err(ControlPlaneError::LeaseHeld {
                            holder: stored.holder,
                            token: token(kv.create_revision.0)?,
                        });
                    }
                    self.keep(&key, kv, &stored, &wanted, "acquire").await?
                }
            };
            match attempt {
                Attempt::Won(token) => {
                    return Ok(LeaseGrant {
                        key: request.key,
                        holder: request.holder,
                        token,
                        ttl: request.ttl,
                    })
                }
                Attempt::Changed(now) => current = now,
            }
        }
        // Not acquired (every write was refused), and nobody else was
        // seen holding it at a decisive moment.
        Err(ControlPlaneError::LeaseLost)
    }

    pub(super) async fn etcd_renew(
        &self,
        grant: LeaseGrant,
    ) -> Result<LeaseGrant, ControlPlaneError> {
        grant.check()?;
        let key = self.keys.lease(&grant.key);
        let (kv, stored) = self.held(&key, &grant).await?;
        let wanted = HolderRecord::new(grant.holder.clone(), grant.ttl);
        match self.keep(&key, &kv, &stored, &wanted, "renew").await? {
            Attempt::Won(_) => Ok(grant),
            Attempt::Changed(_) => Err(ControlPlaneError::LeaseLost),
        }
    }

    pub(super) async fn etcd_release(&self, grant: LeaseGrant) -> Result<(), ControlPlaneError> {
        let key = self.keys.lease(&grant.key);
        let (kv, _) = self.held(&key, &grant).await?;
        let txn = TxnRequest {
            compare: vec![Compare::created_at(&key, kv.create_revision.0)],
            success: vec![RequestOp::DeleteRange(DeleteRangeRequest {
                key: Bytes64(key.clone()),
                prev_kv: true,
            })],
            failure: Vec::new(),
        };
        let answer = self
            .gateway
            .txn(&txn, Exchange::Decisive("release"))
            .await?;
        if !answer.succeeded {
            return Err(ControlPlaneError::LeaseLost);
        }
        let deleted_lease = answer
            .responses
            .first()
            .and_then(|op| op.response_delete_range.as_ref())
            .and_then(|deleted| deleted.prev_kvs.first())
            .map_or(kv.lease.0, |previous| previous.lease.0);
        self.gateway.revoke_quietly(deleted_lease).await;
        Ok(())
    }

    pub(super) async fn etcd_read_lease(
        &self,
        lease: LeaseKey,
    ) -> Result<Option<LeaseState>, ControlPlaneError> {
        let key = self.keys.lease(&lease);
        let epoch = self.keys.epoch(&lease);
        let txn = TxnRequest {
            compare: Vec::new(),
            success: vec![range_op(&key), range_op(&epoch)],
            failure: Vec::new(),
        };
        let answer = self.gateway.txn(&txn, Exchange::Plain).await?;
        if answer.responses.len() != 2 {
            return Err(ControlPlaneError::Corrupt {
                what: "etcd response",
                reason: format!("{} answers to a read of 2 keys", answer.responses.len()),
            });
        }
        if let Some(kv) = found(&answer, 0, &key) {
            let stored = HolderRecord::decode(&kv.value.0)?;
            let token = token(kv.create_revision.0)?;
            return Ok(Some(match self.gateway.time_to_live(kv.lease.0).await? {
                // Whole seconds, truncated, and never more than granted.
                Some(secs) => LeaseState {
                    key: lease,
                    remaining: Some(Duration::from_secs(secs.unsigned_abs()).min(stored.ttl())),
                    holder: Some(stored.holder),
                    token,
                },
                // Expired or released since the read: free, same token.
                None => LeaseState {
                    key: lease,
                    holder: None,
                    token,
                    remaining: None,
                },
            }));
        }
        match found(&answer, 1, &epoch) {
            Some(epoch) => Ok(Some(LeaseState {
                key: lease,
                holder: None,
                token: token(epoch.mod_revision.0)?,
                remaining: None,
            })),
            None => Ok(None),
        }
    }

    /// The lease key, if it carries the grant's holder and token.
    pub(super) async fn held(
        &self,
        key: &[u8],
        grant: &LeaseGrant,
    ) -> Result<(KeyValue, HolderRecord), ControlPlaneError> {
        let kv = self
            .gateway
            .get(key, false)
            .await?
            .ok_or(ControlPlaneError::LeaseLost)?;
        let stored = HolderRecord::decode(&kv.value.0)?;
        if stored.holder != grant.holder || token(kv.create_revision.0)? != grant.token {
            return Err(ControlPlaneError::LeaseLost);
        }
        Ok((kv, stored))
    }

    /// Creates the absent lease key and its epoch key, attached to a new
    /// etcd lease.
    async fn create(
        &self,
        lease: &LeaseKey,
        key: &[u8],
        wanted: &HolderRecord,
    ) -> Result<Attempt, ControlPlaneError> {
        let value = wanted.encode()?;
        let etcd_lease = self.gateway.grant(etcd_ttl_secs(wanted.ttl())).await?;
        let txn = TxnRequest {
            compare: vec![Compare::created_at(key, 0)],
            success: vec![
                put_op(key, value.clone(), etcd_lease),
                put_op(&self.keys.epoch(lease), value, 0),
            ],
            failure: vec![range_op(key)],
        };
        let answer = self.decisive_txn(&txn, etcd_lease, "acquire").await?;
        if answer.succeeded {
            // The key was created at the transaction's revision.
            return Ok(Attempt::Won(token(answer.header.revision.0)?));
        }
        self.gateway.revoke_quietly(etcd_lease).await;
        Ok(Attempt::Changed(found(&answer, 0, key)))
    }

    /// Keeps the caller's lease key alive for `wanted`'s time to live: a
    /// keep-alive of its etcd lease when the whole seconds match, else a
    /// rebind to a new etcd lease.
    async fn keep(
        &self,
        key: &[u8],
        kv: &KeyValue,
        stored: &HolderRecord,
        wanted: &HolderRecord,
        operation: &'static str,
    ) -> Result<Attempt, ControlPlaneError> {
        let token = token(kv.create_revision.0)?;
        if etcd_ttl_secs(stored.ttl()) == etcd_ttl_secs(wanted.ttl()) {
            return match self
                .gateway
                .keep_alive(kv.lease.0, Exchange::Decisive(operation))
                .await?
            {
                Some(_) => Ok(Attempt::Won(token)),
                // Expired: keep-alive never revives; the key is going.
                None => Ok(Attempt::Changed(self.gateway.get(key, false).await?)),
            };
        }
        let etcd_lease = self.gateway.grant(etcd_ttl_secs(wanted.ttl())).await?;
        let txn = TxnRequest {
            compare: vec![
                Compare::created_at(key, kv.create_revision.0),
                Compare::modified_at(key, kv.mod_revision.0),
            ],
            success: vec![put_op(key, wanted.encode()?, etcd_lease)],
            failure: vec![range_op(key)],
        };
        let answer = self.decisive_txn(&txn, etcd_lease, operation).await?;
        if answer.succeeded {
            self.gateway.revoke_quietly(kv.lease.0).await;
            return Ok(Attempt::Won(token));
        }
        self.gateway.revoke_quietly(etcd_lease).await;
        Ok(Attempt::Changed(found(&answer, 0, key)))
    }

    /// Runs a decisive transaction that would attach `etcd_lease`; when it
    /// certainly did not apply, the etcd lease is revoked. After an unknown
    /// outcome it is left to expire: it may now carry the lease key.
    async fn decisive_txn(
        &self,
        txn: &TxnRequest,
        etcd_lease: i64,
        operation: &'static str,
    ) -> Result<TxnResponse, ControlPlaneError> {
        match self.gateway.txn(txn, Exchange::Decisive(operation)).await {
            Ok(answer) => Ok(answer),
            Err(error) => {
                if !matches!(error, ControlPlaneError::OutcomeUnknown { .. }) {
                    self.gateway.revoke_quietly(etcd_lease).await;
                }
                Err(error)
            }
        }
    }
}

fn range_op(key: &[u8]) -> RequestOp {
    RequestOp::Range(RangeRequest {
        key: Bytes64(key.to_vec()),
        ..RangeRequest::default()
    })
}

fn put_op(key: &[u8], value: Vec<u8>, etcd_lease: i64) -> RequestOp {
    RequestOp::Put(PutRequest {
        key: Bytes64(key.to_vec()),
        value: Bytes64(value),
        lease: Int(etcd_lease),
        prev_kv: false,
    })
}

/// The key `key` in the range answered at position `index`.
fn found(answer: &TxnResponse, index: usize, key: &[u8]) -> Option<KeyValue> {
    answer
        .responses
        .get(index)
        .and_then(|op| op.response_range.as_ref())
        .and_then(|range| range.kvs.iter().find(|kv| kv.key.0 == key))
        .cloned()
}
