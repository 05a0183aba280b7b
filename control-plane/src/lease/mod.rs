//! Leases: one holder at a time per [`LeaseKey`], each acquisition stamped
//! with a [`FencingToken`] that strictly increases per lease.
//!
//! - [`LeadershipGuard`] turns a grant into "safe until": the instant the
//!   acquiring request was sent, plus the time to live, minus a skew margin,
//!   on the monotonic clock. It reports loss before that instant passes.
//! - [`settle`](crate::client::settle) (beside the client trait it reads
//!   through) resolves a mutation whose outcome is unknown by reading the
//!   lease back; nothing ever replays a lease mutation.
//! - [`FencingGate`] lets a protected resource refuse any token lower than
//!   the highest it has seen.
//!
//! Invariants:
//! - Tokens of one lease strictly increase across acquisitions; a renewal
//!   keeps its token; a released lease keeps its last token, so the next
//!   acquisition is larger still.
//! - An exhausted token (`u64::MAX`) is never reused: acquisition fails with
//!   [`EpochExhausted`](crate::ControlPlaneError::EpochExhausted).

pub(crate) mod answers;
mod fence;
mod guard;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::token::FencingToken;
pub use fence::{FencingGate, StaleToken};
pub use guard::{LeadershipGuard, LeadershipLost, SkewMargin, DEFAULT_SKEW_MARGIN};

use crate::error::ControlPlaneError;
use crate::name::{LeaseName, NodeId, ServiceGroup};
use crate::presence::check_ttl;

/// Which lease: the leadership of one service, or a named global lease.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(
    tag = "scope",
    content = "name",
    rename_all = "lowercase",
    deny_unknown_fields
)]
pub enum LeaseKey {
    /// A lease shared by the whole control plane.
    Global(LeaseName),
    /// The leadership of one service.
    Service(ServiceGroup),
}

impl LeaseKey {
    /// `global/NAME` or `service/NAME`: the lease's path on the V1 wire and
    /// its key suffix in etcd.
    pub fn path(&self) -> String {
        match self {
            Self::Global(name) => format!("global/{name}"),
            Self::Service(name) => format!("service/{name}"),
        }
    }

    /// Bytes of text this key holds.
    pub fn text_bytes(&self) -> usize {
        match self {
            Self::Global(name) => name.as_str().len(),
            Self::Service(name) => name.as_str().len(),
        }
    }
}

impl fmt::Display for LeaseKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path())
    }
}

/// A request to hold a lease for a time to live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRequest {
    /// The lease.
    pub key: LeaseKey,
    /// Who asks.
    pub holder: NodeId,
    /// How long the lease lives without renewal.
    #[serde(with = "crate::millis", rename = "ttl_ms")]
    pub ttl: Duration,
}

impl LeaseRequest {
    /// A checked request.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `ttl` outside 1 ms – 24 h.
    pub fn new(key: LeaseKey, holder: NodeId, ttl: Duration) -> Result<Self, ControlPlaneError> {
        check_ttl("ttl", ttl)?;
        Ok(Self { key, holder, ttl })
    }

    /// Checks a request built field by field (or decoded).
    ///
    /// # Errors
    ///
    /// As [`LeaseRequest::new`].
    pub fn check(&self) -> Result<(), ControlPlaneError> {
        check_ttl("ttl", self.ttl)
    }
}

/// A lease held: who, with which token, for how long from the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseGrant {
    /// The lease.
    pub key: LeaseKey,
    /// The holder.
    pub holder: NodeId,
    /// The fencing token of this acquisition.
    pub token: FencingToken,
    /// The time to live granted; renewals extend by it.
    #[serde(with = "crate::millis", rename = "ttl_ms")]
    pub ttl: Duration,
}

impl LeaseGrant {
    /// Checks a grant built field by field (or decoded).
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `ttl` outside 1 ms – 24 h.
    pub fn check(&self) -> Result<(), ControlPlaneError> {
        check_ttl("ttl", self.ttl)
    }
}

/// A lease as read back: its holder if any and the last token issued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseState {
    /// The lease.
    pub key: LeaseKey,
    /// The live holder, if the lease is held and not expired.
    pub holder: Option<NodeId>,
    /// The last token issued for this lease (the holder's, when held).
    pub token: FencingToken,
    /// Time left before the holder's lease expires, when held.
    #[serde(default, with = "optional_millis", rename = "remaining_ms")]
    pub remaining: Option<Duration>,
}

impl LeaseState {
    /// True when `holder` holds the lease with `token`.
    pub fn is_held_by(&self, holder: &NodeId, token: FencingToken) -> bool {
        self.holder.as_ref() == Some(holder) && self.token == token
    }
}

mod optional_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        duration: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match duration {
            Some(duration) => crate::millis::serialize(duration, serializer),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(deserializer)?.map(Duration::from_millis))
    }
}
