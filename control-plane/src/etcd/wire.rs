//! The JSON of etcd's v3 gateway: the `etcdserverpb` messages as
//! grpc-gateway writes them.
//!
//! Invariants:
//! - Keys and values are base64 ([`Bytes64`]); 64-bit integers are JSON
//!   strings on the way out and strings or numbers on the way in ([`Int`]).
//! - A field at its zero value may be absent (proto3): every response field
//!   defaults, and the callers treat zero as "none" (no key, no lease).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Bytes written as base64.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Bytes64(pub(super) Vec<u8>);

impl Bytes64 {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Bytes64 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD
            .decode(text.as_bytes())
            .map(Bytes64)
            .map_err(|error| de::Error::custom(format!("bad base64: {error}")))
    }
}

/// A 64-bit integer: a JSON string out, a string or number in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Int(pub(super) i64);

impl Int {
    fn is_zero(&self) -> bool {
        self.0 == 0
    }
}

impl Serialize for Int {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IntVisitor;

        impl Visitor<'_> for IntVisitor {
            type Value = Int;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a 64-bit integer as a string or a number")
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Int, E> {
                Ok(Int(value))
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Int, E> {
                i64::try_from(value)
                    .map(Int)
                    .map_err(|_| E::custom("integer out of range"))
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<Int, E> {
                value
                    .parse()
                    .map(Int)
                    .map_err(|_| E::custom("not a 64-bit integer"))
            }
        }

        deserializer.deserialize_any(IntVisitor)
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// What every response carries.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Header {
    /// The store revision the request was served at (after its writes).
    #[serde(default)]
    pub(super) revision: Int,
}

/// One key as stored.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct KeyValue {
    #[serde(default)]
    pub(super) key: Bytes64,
    #[serde(default)]
    pub(super) create_revision: Int,
    #[serde(default)]
    pub(super) mod_revision: Int,
    #[serde(default)]
    pub(super) value: Bytes64,
    /// The etcd lease the key is attached to; zero for none.
    #[serde(default)]
    pub(super) lease: Int,
}

/// `POST /v3/kv/range`, also a transaction operation.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct RangeRequest {
    pub(super) key: Bytes64,
    #[serde(skip_serializing_if = "Bytes64::is_empty")]
    pub(super) range_end: Bytes64,
    #[serde(skip_serializing_if = "Int::is_zero")]
    pub(super) limit: Int,
    #[serde(skip_serializing_if = "is_false")]
    pub(super) keys_only: bool,
}

/// The answer to a range.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct RangeResponse {
    #[serde(default)]
    pub(super) kvs: Vec<KeyValue>,
    /// How many keys the range holds, beyond the limit too.
    #[serde(default)]
    pub(super) count: Int,
}

/// `POST /v3/kv/put`, also a transaction operation.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct PutRequest {
    pub(super) key: Bytes64,
    pub(super) value: Bytes64,
    #[serde(skip_serializing_if = "Int::is_zero")]
    pub(super) lease: Int,
    #[serde(skip_serializing_if = "is_false")]
    pub(super) prev_kv: bool,
}

/// The answer to a put.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct PutResponse {
    #[serde(default)]
    pub(super) prev_kv: Option<KeyValue>,
}

/// `POST /v3/kv/deleterange`, also a transaction operation.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct DeleteRangeRequest {
    pub(super) key: Bytes64,
    #[serde(skip_serializing_if = "is_false")]
    pub(super) prev_kv: bool,
}

/// The answer to a delete.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct DeleteRangeResponse {
    #[serde(default)]
    pub(super) prev_kvs: Vec<KeyValue>,
}

/// One condition of a transaction: the key's create or mod revision, or
/// the etcd lease it is attached to, equals a value (a create revision of
/// zero means "absent"; an absent key is attached to lease zero).
#[derive(Debug, Clone, Serialize)]
pub(super) struct Compare {
    result: &'static str,
    target: &'static str,
    key: Bytes64,
    #[serde(skip_serializing_if = "Option::is_none")]
    create_revision: Option<Int>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mod_revision: Option<Int>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease: Option<Int>,
}

impl Compare {
    /// `create_revision(key) == revision`; zero tests absence.
    pub(super) fn created_at(key: &[u8], revision: i64) -> Self {
        Self {
            result: "EQUAL",
            target: "CREATE",
            key: Bytes64(key.to_vec()),
            create_revision: Some(Int(revision)),
            mod_revision: None,
            lease: None,
        }
    }

    /// `mod_revision(key) == revision`.
    pub(super) fn modified_at(key: &[u8], revision: i64) -> Self {
        Self {
            result: "EQUAL",
            target: "MOD",
            key: Bytes64(key.to_vec()),
            create_revision: None,
            mod_revision: Some(Int(revision)),
            lease: None,
        }
    }

    /// `lease(key) == etcd_lease`: the key is attached to that etcd lease
    /// (etcd 3.3 or newer); never true of an absent key for a non-zero
    /// lease.
    pub(super) fn attached_to(key: &[u8], etcd_lease: i64) -> Self {
        Self {
            result: "EQUAL",
            target: "LEASE",
            key: Bytes64(key.to_vec()),
            create_revision: None,
            mod_revision: None,
            lease: Some(Int(etcd_lease)),
        }
    }
}

/// One operation of a transaction branch.
#[derive(Debug, Clone, Serialize)]
pub(super) enum RequestOp {
    #[serde(rename = "request_range")]
    Range(RangeRequest),
    #[serde(rename = "request_put")]
    Put(PutRequest),
    #[serde(rename = "request_delete_range")]
    DeleteRange(DeleteRangeRequest),
}

/// The answer to one operation of the branch that ran.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ResponseOp {
    #[serde(default)]
    pub(super) response_range: Option<RangeResponse>,
    #[serde(default)]
    pub(super) response_delete_range: Option<DeleteRangeResponse>,
}

/// `POST /v3/kv/txn`: if every comparison holds, `success` runs, else
/// `failure`, atomically at one revision.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct TxnRequest {
    pub(super) compare: Vec<Compare>,
    pub(super) success: Vec<RequestOp>,
    pub(super) failure: Vec<RequestOp>,
}

/// The answer to a transaction.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct TxnResponse {
    #[serde(default)]
    pub(super) header: Header,
    #[serde(default)]
    pub(super) succeeded: bool,
    #[serde(default)]
    pub(super) responses: Vec<ResponseOp>,
}

/// `POST /v3/lease/grant`; an ID of zero lets etcd choose.
#[derive(Debug, Clone, Serialize)]
pub(super) struct LeaseGrantRequest {
    #[serde(rename = "TTL")]
    pub(super) ttl: Int,
}

/// The granted lease; etcd may raise the TTL to its minimum.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct LeaseGrantResponse {
    #[serde(default, rename = "ID")]
    pub(super) id: Int,
    #[serde(default, rename = "TTL")]
    pub(super) ttl: Int,
    #[serde(default)]
    pub(super) error: String,
}

/// `POST /v3/lease/keepalive`, `/v3/lease/revoke` and
/// `/v3/lease/timetolive`: one lease by ID.
#[derive(Debug, Clone, Serialize)]
pub(super) struct LeaseIdRequest {
    #[serde(rename = "ID")]
    pub(super) id: Int,
}

/// One message of the keep-alive stream: a result or an error.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct KeepAliveMessage {
    #[serde(default)]
    pub(super) result: Option<LeaseTtl>,
    #[serde(default)]
    pub(super) error: Option<serde_json::Value>,
}

/// A lease's time to live in whole seconds: the renewed TTL of a
/// keep-alive (zero: the lease is gone) or the remaining time of a
/// time-to-live query (truncated; `-1`: the lease is gone).
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct LeaseTtl {
    #[serde(default, rename = "TTL")]
    pub(super) ttl: Int,
}

/// The body of a refused request.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct GatewayError {
    #[serde(default)]
    pub(super) message: String,
    #[serde(default)]
    pub(super) code: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transaction_is_written_as_the_gateway_reads_it() {
        let txn = TxnRequest {
            compare: vec![Compare::created_at(b"k", 0)],
            success: vec![RequestOp::Put(PutRequest {
                key: Bytes64(b"k".to_vec()),
                value: Bytes64(b"v".to_vec()),
                lease: Int(7),
                prev_kv: false,
            })],
            failure: vec![RequestOp::Range(RangeRequest {
                key: Bytes64(b"k".to_vec()),
                ..RangeRequest::default()
            })],
        };
        assert_eq!(
            serde_json::to_string(&txn).expect("encodes"),
            r#"{"compare":[{"result":"EQUAL","target":"CREATE","key":"aw==","create_revision":"0"}],"success":[{"request_put":{"key":"aw==","value":"dg==","lease":"7"}}],"failure":[{"request_range":{"key":"aw=="}}]}"#
        );
    }

    #[test]
    fn a_lease_comparison_names_its_target_and_lease() {
        assert_eq!(
            serde_json::to_string(&Compare::attached_to(b"k", 42)).expect("encodes"),
            r#"{"result":"EQUAL","target":"LEASE","key":"aw==","lease":"42"}"#
        );
    }

    #[test]
    fn absent_fields_default_and_integers_come_as_strings_or_numbers() {
        let answer: TxnResponse = serde_json::from_str(
            r#"{"header":{"revision":"12"},"responses":[{"response_range":{"kvs":[{"key":"aw==","create_revision":3,"mod_revision":"4","value":"dg==","lease":"99"}],"count":"1"}}]}"#,
        )
        .expect("decodes");
        assert_eq!((answer.header.revision, answer.succeeded), (Int(12), false));
        let range = answer.responses[0].response_range.as_ref().expect("range");
        let kv = &range.kvs[0];
        assert_eq!(
            (
                kv.create_revision,
                kv.mod_revision,
                kv.lease,
                &kv.value.0[..]
            ),
            (Int(3), Int(4), Int(99), &b"v"[..])
        );
        let gone: KeepAliveMessage =
            serde_json::from_str(r#"{"result":{"header":{},"ID":"5"}}"#).expect("decodes");
        assert_eq!(gone.result.expect("result").ttl, Int(0));
        assert!(serde_json::from_str::<Int>(r#""12x""#).is_err());
        assert!(serde_json::from_str::<Bytes64>(r#""!!""#).is_err());
    }
}
