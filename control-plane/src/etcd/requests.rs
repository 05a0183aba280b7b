//! The etcd requests the backend is made of, typed on top of
//! [`Gateway::call`]: reads, puts, deletes, transactions and etcd leases.
//!
//! Invariants:
//! - Each method is one HTTP exchange.
//! - A revoke here is clean-up only (an etcd lease left unused or
//!   replaced): its failure is logged and otherwise ignored, since the
//!   etcd lease expires by itself.

use crate::error::ControlPlaneError;
use crate::etcd::gateway::{Exchange, Gateway};
use crate::etcd::wire::{
    Bytes64, DeleteRangeRequest, DeleteRangeResponse, Int, KeepAliveMessage, KeyValue,
    LeaseGrantRequest, LeaseGrantResponse, LeaseIdRequest, LeaseTtl, PutRequest, PutResponse,
    RangeRequest, RangeResponse, TxnRequest, TxnResponse,
};

impl Gateway {
    /// The key `key`, if present (without its value when `keys_only`).
    pub(super) async fn get(
        &self,
        key: &[u8],
        keys_only: bool,
    ) -> Result<Option<KeyValue>, ControlPlaneError> {
        let request = RangeRequest {
            key: Bytes64(key.to_vec()),
            keys_only,
            ..RangeRequest::default()
        };
        let answer: RangeResponse = self.call("/v3/kv/range", &request, Exchange::Plain).await?;
        Ok(answer.kvs.into_iter().find(|kv| kv.key.0 == key))
    }

    /// The keys in `[start, end)`, at most `limit` of them in key order;
    /// `count` tells how many the range holds.
    pub(super) async fn range(
        &self,
        start: Vec<u8>,
        end: Vec<u8>,
        limit: i64,
    ) -> Result<RangeResponse, ControlPlaneError> {
        let request = RangeRequest {
            key: Bytes64(start),
            range_end: Bytes64(end),
            limit: Int(limit),
            keys_only: false,
        };
        self.call("/v3/kv/range", &request, Exchange::Plain).await
    }

    /// Puts a key (a presence write: never decisive).
    pub(super) async fn put(&self, request: PutRequest) -> Result<PutResponse, ControlPlaneError> {
        self.call("/v3/kv/put", &request, Exchange::Plain).await
    }

    /// Deletes one key, answering what it held.
    pub(super) async fn delete(&self, key: &[u8]) -> Result<Option<KeyValue>, ControlPlaneError> {
        let request = DeleteRangeRequest {
            key: Bytes64(key.to_vec()),
            prev_kv: true,
        };
        let answer: DeleteRangeResponse = self
            .call("/v3/kv/deleterange", &request, Exchange::Plain)
            .await?;
        Ok(answer.prev_kvs.into_iter().next())
    }

    /// Runs a transaction.
    pub(super) async fn txn(
        &self,
        request: &TxnRequest,
        exchange: Exchange,
    ) -> Result<TxnResponse, ControlPlaneError> {
        self.call("/v3/kv/txn", request, exchange).await
    }

    /// Grants an etcd lease of `secs` seconds (etcd may raise it to its
    /// minimum); answers its ID.
    pub(super) async fn grant(&self, secs: i64) -> Result<i64, ControlPlaneError> {
        let answer: LeaseGrantResponse = self
            .call(
                "/v3/lease/grant",
                &LeaseGrantRequest { ttl: Int(secs) },
                Exchange::Plain,
            )
            .await?;
        if !answer.error.is_empty() || answer.id.0 == 0 || answer.ttl.0 < secs {
            return Err(ControlPlaneError::Protocol(format!(
                "etcd granted lease {} for {} s when asked {secs} s: {:.200}",
                answer.id.0, answer.ttl.0, answer.error
            )));
        }
        Ok(answer.id.0)
    }

    /// Keeps the etcd lease `id` alive for its granted TTL; answers that
    /// TTL in seconds, or `None` when the lease is gone (expired or
    /// revoked: keep-alive never revives it).
    pub(super) async fn keep_alive(
        &self,
        id: i64,
        exchange: Exchange,
    ) -> Result<Option<i64>, ControlPlaneError> {
        let message: KeepAliveMessage = self
            .call(
                "/v3/lease/keepalive",
                &LeaseIdRequest { id: Int(id) },
                exchange,
            )
            .await?;
        match (message.result, message.error) {
            (Some(LeaseTtl { ttl }), None) => Ok((ttl.0 > 0).then_some(ttl.0)),
            (_, error) => {
                let error = ControlPlaneError::Protocol(format!(
                    "etcd keep-alive answered no result: {:.200}",
                    error.map(|error| error.to_string()).unwrap_or_default()
                ));
                Err(match exchange {
                    Exchange::Plain => error,
                    // The stream failed after the request was sent.
                    Exchange::Decisive(operation) => {
                        ControlPlaneError::OutcomeUnknown { operation }
                    }
                })
            }
        }
    }

    /// The whole seconds left to the etcd lease `id` (truncated, so never
    /// more than what is left), or `None` when it is gone.
    pub(super) async fn time_to_live(&self, id: i64) -> Result<Option<i64>, ControlPlaneError> {
        let answer: LeaseTtl = self
            .call(
                "/v3/lease/timetolive",
                &LeaseIdRequest { id: Int(id) },
                Exchange::Plain,
            )
            .await?;
        Ok((answer.ttl.0 >= 0).then_some(answer.ttl.0))
    }

    /// Revokes an etcd lease nothing should keep alive any more (and
    /// deletes whatever is still attached to it). Failures are ignored:
    /// the lease expires by itself.
    pub(super) async fn revoke_quietly(&self, id: i64) {
        if id == 0 {
            return;
        }
        let result: Result<serde_json::Value, _> = self
            .call(
                "/v3/lease/revoke",
                &LeaseIdRequest { id: Int(id) },
                Exchange::Plain,
            )
            .await;
        match result {
            Ok(_) | Err(ControlPlaneError::Status { status: 404 }) => {}
            Err(error) => {
                tracing::debug!(lease = id, %error, "etcd lease not revoked; it will expire")
            }
        }
    }
}
