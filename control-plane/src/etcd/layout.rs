//! The key space the control plane owns in etcd and what is stored there.
//!
//! Under the configured prefix `P` (ending in `/`):
//! - `P presence/<service>/<node>`: a registration's JSON, attached to an
//!   etcd lease of the registration's time to live;
//! - `P board/<service>/<topic>/<node>`: an instance's post on a topic,
//!   the raw bytes posted, attached to the etcd lease of that instance's
//!   presence key, so etcd deletes it with the registration;
//! - `P lease/<scope>/<name>`: a held lease's [`HolderRecord`], attached to
//!   an etcd lease of the lease's time to live; its `create_revision` is
//!   the fencing token;
//! - `P lease-epoch/<scope>/<name>`: written (never attached, never
//!   deleted) in the transaction that creates the lease key, so its
//!   `mod_revision` is the last token issued, also once the lease key is
//!   gone;
//! - `P fenced/<scope>/<name>`: a lease's last fenced record, a
//!   [`FencedEnvelope`] (never attached, never deleted: it outlives the
//!   tenure that wrote it).
//!
//! Invariants:
//! - Names hold no `/` (see [`crate::NodeId`]), so `presence/<service>/`
//!   ranges over that service's instances only (`bill` never lists
//!   `billing`), and `board/<service>/<topic>/` over the posts of that
//!   topic only (`dem` never lists `demand`, nor another service's).
//! - The five families never overlap: each is its first segment with its
//!   `/`, and no first segment with its `/` starts another (`lease/` and
//!   `lease-epoch/` differ at their sixth byte; `board/`, `fenced/`,
//!   `lease…` and `presence/` at their first).
//! - A post's node is its key's last segment; a post's value is at most
//!   [`MAX_BOARD_VALUE_BYTES`] bytes, a fenced record's envelope at most
//!   [`MAX_ENVELOPE_BYTES`].

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::board::{FencedRecord, MAX_BOARD_VALUE_BYTES};
use crate::error::ControlPlaneError;
use crate::etcd::wire::Bytes64;
use crate::lease::{FencingToken, LeaseKey};
use crate::name::{NodeId, ServiceGroup, TopicName};
use crate::presence::{check_ttl, PresenceKey};

/// The largest stored [`FencedEnvelope`]: the value in base64 and room for
/// the token and the field names.
pub(super) const MAX_ENVELOPE_BYTES: usize = MAX_BOARD_VALUE_BYTES.div_ceil(3) * 4 + 64;

/// The keys of one deployment, under its prefix.
#[derive(Debug, Clone)]
pub(super) struct Keyspace {
    prefix: String,
}

impl Keyspace {
    /// Keys under `prefix` (checked, ending in `/`).
    pub(super) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    /// `P presence/<service>/<node>`.
    pub(super) fn presence(&self, key: &PresenceKey) -> Vec<u8> {
        format!("{}presence/{}/{}", self.prefix, key.service, key.node).into_bytes()
    }

    /// The range `[start, end)` of one service's registrations.
    pub(super) fn presence_range(&self, service: &ServiceGroup) -> (Vec<u8>, Vec<u8>) {
        let start = format!("{}presence/{service}/", self.prefix).into_bytes();
        let end = range_end(&start);
        (start, end)
    }

    /// `P board/<service>/<topic>/<node>`.
    pub(super) fn post(&self, key: &PresenceKey, topic: &TopicName) -> Vec<u8> {
        format!("{}board/{}/{topic}/{}", self.prefix, key.service, key.node).into_bytes()
    }

    /// The range `[start, end)` of the posts on one service's topic.
    pub(super) fn post_range(
        &self,
        service: &ServiceGroup,
        topic: &TopicName,
    ) -> (Vec<u8>, Vec<u8>) {
        let start = format!("{}board/{service}/{topic}/", self.prefix).into_bytes();
        let end = range_end(&start);
        (start, end)
    }

    /// `P fenced/<scope>/<name>`.
    pub(super) fn fenced(&self, key: &LeaseKey) -> Vec<u8> {
        format!("{}fenced/{}", self.prefix, key.path()).into_bytes()
    }

    /// `P lease/<scope>/<name>`.
    pub(super) fn lease(&self, key: &LeaseKey) -> Vec<u8> {
        format!("{}lease/{}", self.prefix, key.path()).into_bytes()
    }

    /// `P lease-epoch/<scope>/<name>`.
    pub(super) fn epoch(&self, key: &LeaseKey) -> Vec<u8> {
        format!("{}lease-epoch/{}", self.prefix, key.path()).into_bytes()
    }
}

/// The end of the range of keys starting with `prefix`: the prefix with
/// its last byte below `0xff` incremented and what follows dropped; `[0]`
/// (to the end of the key space) when there is none.
pub(super) fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// What a lease key holds: who holds it, and the time to live its etcd
/// lease was granted for (so a renewal with another time to live rebinds
/// the key to a new etcd lease instead of keeping the old one alive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HolderRecord {
    pub(super) holder: NodeId,
    pub(super) ttl_ms: u64,
}

impl HolderRecord {
    pub(super) fn new(holder: NodeId, ttl: Duration) -> Self {
        Self {
            holder,
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
        }
    }

    pub(super) fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms)
    }

    pub(super) fn encode(&self) -> Result<Vec<u8>, ControlPlaneError> {
        serde_json::to_vec(self).map_err(|error| ControlPlaneError::Protocol(error.to_string()))
    }

    /// Decodes and checks a stored record.
    pub(super) fn decode(bytes: &[u8]) -> Result<Self, ControlPlaneError> {
        let corrupt = |reason: String| ControlPlaneError::Corrupt {
            what: "etcd lease value",
            reason,
        };
        let record: Self =
            serde_json::from_slice(bytes).map_err(|error| corrupt(error.to_string()))?;
        check_ttl("ttl", record.ttl()).map_err(|error| corrupt(error.to_string()))?;
        Ok(record)
    }
}

/// What a fenced key holds: the token it was written with and the value,
/// as JSON (`{"token":7,"value":"<base64>"}`), decoded strictly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FencedEnvelope {
    token: u64,
    value: Bytes64,
}

impl FencedEnvelope {
    pub(super) fn encode(
        token: FencingToken,
        value: Vec<u8>,
    ) -> Result<Vec<u8>, ControlPlaneError> {
        serde_json::to_vec(&Self {
            token: token.get(),
            value: Bytes64(value),
        })
        .map_err(|error| ControlPlaneError::Protocol(error.to_string()))
    }

    /// Decodes and checks a stored envelope: bounded before it is parsed,
    /// unknown fields refused, a positive token, a value within
    /// [`MAX_BOARD_VALUE_BYTES`].
    pub(super) fn decode(bytes: &[u8]) -> Result<FencedRecord, ControlPlaneError> {
        let corrupt = |reason: String| ControlPlaneError::Corrupt {
            what: "etcd fenced value",
            reason,
        };
        if bytes.len() > MAX_ENVELOPE_BYTES {
            return Err(corrupt(format!(
                "{} bytes, at most {MAX_ENVELOPE_BYTES}",
                bytes.len()
            )));
        }
        let envelope: Self =
            serde_json::from_slice(bytes).map_err(|error| corrupt(error.to_string()))?;
        if envelope.token == 0 {
            return Err(corrupt("token 0 is not a fencing token".to_owned()));
        }
        if envelope.value.0.len() > MAX_BOARD_VALUE_BYTES {
            return Err(corrupt(format!(
                "a value of {} bytes, at most {MAX_BOARD_VALUE_BYTES}",
                envelope.value.0.len()
            )));
        }
        Ok(FencedRecord {
            token: FencingToken(envelope.token),
            value: envelope.value.0,
        })
    }
}

/// The whole seconds of the etcd lease for `ttl`: rounded up, at least one
/// (etcd raises it further to its own minimum, 2 s with the default
/// election timeout). Never shorter than `ttl`, so a guard computed from
/// `ttl` is never later than the server's expiry.
pub(super) fn etcd_ttl_secs(ttl: Duration) -> i64 {
    let secs = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
    i64::try_from(secs.max(1)).unwrap_or(i64::MAX)
}

/// A revision as a fencing token: revisions start at 1.
pub(super) fn token(revision: i64) -> Result<FencingToken, ControlPlaneError> {
    u64::try_from(revision)
        .ok()
        .filter(|&revision| revision > 0)
        .map(FencingToken)
        .ok_or_else(|| ControlPlaneError::Corrupt {
            what: "etcd response",
            reason: format!("revision {revision} is not positive"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::name::LeaseName;

    #[test]
    fn a_service_range_covers_its_instances_only() {
        let keys = Keyspace::new("/p/");
        let (start, end) = keys.presence_range(&ServiceGroup::new("bill").expect("valid"));
        assert_eq!(
            (&start[..], &end[..]),
            (&b"/p/presence/bill/"[..], &b"/p/presence/bill0"[..])
        );
        let inside = keys.presence(&PresenceKey {
            service: ServiceGroup::new("bill").expect("valid"),
            node: NodeId::new("node-a").expect("valid"),
        });
        let billing = keys.presence(&PresenceKey {
            service: ServiceGroup::new("billing").expect("valid"),
            node: NodeId::new("node-a").expect("valid"),
        });
        assert!(start <= inside && inside < end);
        assert!(!(start <= billing && billing < end));
    }

    #[test]
    fn range_end_increments_the_last_byte_below_0xff() {
        assert_eq!(range_end(b"ab"), b"ac");
        assert_eq!(range_end(&[b'a', 0xff, 0xff]), b"b");
        assert_eq!(range_end(&[0xff]), vec![0]);
    }

    #[test]
    fn lease_and_epoch_keys_are_distinct() {
        let keys = Keyspace::new("/p/");
        let key = LeaseKey::Global(LeaseName::new("leader").expect("valid"));
        assert_eq!(keys.lease(&key), b"/p/lease/global/leader");
        assert_eq!(keys.epoch(&key), b"/p/lease-epoch/global/leader");
    }

    #[test]
    fn a_topic_range_covers_its_posts_only() {
        let keys = Keyspace::new("/p/");
        let topic = |name: &str| TopicName::new(name).expect("valid");
        let instance = |service: &str| PresenceKey {
            service: ServiceGroup::new(service).expect("valid"),
            node: NodeId::new("node-a").expect("valid"),
        };
        let (start, end) =
            keys.post_range(&ServiceGroup::new("bill").expect("valid"), &topic("dem"));
        assert_eq!(
            (&start[..], &end[..]),
            (&b"/p/board/bill/dem/"[..], &b"/p/board/bill/dem0"[..])
        );
        let inside = keys.post(&instance("bill"), &topic("dem"));
        assert_eq!(inside, b"/p/board/bill/dem/node-a");
        assert!(start <= inside && inside < end);
        for outside in [
            keys.post(&instance("bill"), &topic("demand")),
            keys.post(&instance("bill"), &topic("de")),
            keys.post(&instance("billing"), &topic("dem")),
            keys.presence(&instance("bill")),
        ] {
            assert!(!(start <= outside && outside < end), "{outside:?}");
        }
    }

    #[test]
    fn no_key_family_starts_another() {
        let keys = Keyspace::new("/p/");
        let lease = LeaseKey::Global(LeaseName::new("leader").expect("valid"));
        assert_eq!(keys.fenced(&lease), b"/p/fenced/global/leader");
        let families: [&[u8]; 5] = [
            b"/p/presence/",
            b"/p/board/",
            b"/p/lease/",
            b"/p/lease-epoch/",
            b"/p/fenced/",
        ];
        for (i, a) in families.iter().enumerate() {
            for (j, b) in families.iter().enumerate() {
                assert!(i == j || !b.starts_with(a), "{a:?} starts {b:?}");
            }
        }
    }

    #[test]
    fn a_fenced_envelope_is_decoded_strictly() {
        let bytes = FencedEnvelope::encode(FencingToken(7), b"plan".to_vec()).expect("encodes");
        assert_eq!(bytes, br#"{"token":7,"value":"cGxhbg=="}"#);
        let record = FencedEnvelope::decode(&bytes).expect("decodes");
        assert_eq!(
            (record.token, &record.value[..]),
            (FencingToken(7), &b"plan"[..])
        );
        let oversized = FencedEnvelope::encode(FencingToken(1), vec![0; MAX_BOARD_VALUE_BYTES + 1])
            .expect("encodes");
        for bad in [
            &b"{}"[..],
            br#"{"token":0,"value":""}"#,
            br#"{"token":1,"value":"!!"}"#,
            br#"{"token":1,"value":"","extra":1}"#,
            br#"{"token":-1,"value":""}"#,
            &oversized[..],
            &vec![b' '; MAX_ENVELOPE_BYTES + 1][..],
        ] {
            let error = FencedEnvelope::decode(bad).expect_err("corrupt");
            assert!(
                error.to_string().starts_with("corrupt etcd fenced value"),
                "{error}"
            );
        }
    }

    #[test]
    fn etcd_ttls_round_up_to_whole_seconds() {
        assert_eq!(etcd_ttl_secs(Duration::from_millis(1)), 1);
        assert_eq!(etcd_ttl_secs(Duration::from_millis(2_000)), 2);
        assert_eq!(etcd_ttl_secs(Duration::from_millis(2_001)), 3);
    }

    #[test]
    fn a_stored_record_is_checked() {
        let record = HolderRecord::new(NodeId::new("a").expect("valid"), Duration::from_secs(2));
        let bytes = record.encode().expect("encodes");
        assert_eq!(HolderRecord::decode(&bytes).expect("decodes"), record);
        for bad in [
            &b"{}"[..],
            br#"{"holder":"a/b","ttl_ms":5}"#,
            br#"{"holder":"a","ttl_ms":0}"#,
        ] {
            let error = HolderRecord::decode(bad).expect_err("corrupt");
            assert!(
                error.to_string().starts_with("corrupt etcd lease value"),
                "{error}"
            );
        }
        assert!(token(0).is_err() && token(-3).is_err());
        assert_eq!(token(7).expect("positive"), FencingToken(7));
    }
}
