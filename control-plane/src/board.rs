//! [`Board`]: small values the instances of a service share through the
//! control plane, beside presence and leases.
//!
//! Two kinds of record, both opaque bytes (the control plane never reads
//! them):
//! - a **post**: one instance's value on a topic, living exactly as long
//!   as that instance's registration. It vanishes when the registration
//!   expires, is deregistered or is replaced; a heartbeat keeps it.
//! - a **fenced record**: one value per lease, written only while the
//!   writer holds that lease with the token it names, and kept (with that
//!   token) after the lease is released or expires, so a new holder can
//!   read what the last one decided.
//!
//! Invariants (every backend keeps them; the conformance tests check them):
//! - A post or record is at most [`MAX_BOARD_VALUE_BYTES`]; a larger one is
//!   refused with `LimitExceeded`, never truncated.
//! - `read_posts` answers at most the backend's discovery bound of posts;
//!   more is `LimitExceeded`, never a silent truncation.
//! - A fenced write by a stale token, a released or expired lease, or
//!   another holder answers `LeaseLost` and changes nothing.

use serde::{Deserialize, Serialize};

use crate::client::{BoxFuture, CallResult, ControlPlane};
use crate::lease::{FencingToken, LeaseGrant, LeaseKey};
use crate::name::{NodeId, ServiceGroup, TopicName};
use crate::presence::PresenceKey;

/// Largest post or fenced record, in bytes.
pub const MAX_BOARD_VALUE_BYTES: usize = 64 * 1024;

/// One instance's live post on a topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Post {
    /// The instance's node.
    pub node: NodeId,
    /// The value as posted.
    pub value: Vec<u8>,
}

/// A lease's last fenced record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FencedRecord {
    /// The token it was written with.
    pub token: FencingToken,
    /// The value as written.
    pub value: Vec<u8>,
}

/// Posts under presence and records fenced by a lease.
///
/// # Cancel safety
///
/// As [`ControlPlane`]: a dropped call may have applied; each call is
/// idempotent (posting or writing the same value again is harmless).
pub trait Board: ControlPlane {
    /// Posts `value` on `topic` for the live registration `key`, replacing
    /// that instance's previous post there. The post lives as long as the
    /// registration.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the backend started the call means it
    /// never runs. Once started, a dropped post may have applied; posting
    /// again is harmless (it replaces the same post).
    ///
    /// # Errors
    ///
    /// `NotRegistered` when the registration is absent or expired;
    /// `LimitExceeded` past [`MAX_BOARD_VALUE_BYTES`] or the store's
    /// bounds; transport and backend errors.
    fn post(
        &self,
        key: PresenceKey,
        topic: TopicName,
        value: Vec<u8>,
    ) -> BoxFuture<'_, CallResult<()>>;

    /// The live posts on `topic` by instances of `service`, ordered by
    /// node.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    ///
    /// # Errors
    ///
    /// `LimitExceeded` past the backend's discovery bound; `Corrupt` for a
    /// stored post that does not decode; transport and backend errors.
    fn read_posts(
        &self,
        service: ServiceGroup,
        topic: TopicName,
    ) -> BoxFuture<'_, CallResult<Vec<Post>>>;

    /// Writes `value` as the record of `grant.key`, if and only if that
    /// lease is held now by `grant.holder` with `grant.token`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the backend started the call means it
    /// never runs. Once started, a dropped write may have applied: read it
    /// back with [`read_fenced`](Board::read_fenced), or write again
    /// (harmless while the lease is held).
    ///
    /// # Errors
    ///
    /// `LeaseLost` when it is not (and nothing is written);
    /// `LimitExceeded` past [`MAX_BOARD_VALUE_BYTES`]; `OutcomeUnknown`
    /// when the write may have applied without an answer (read it back);
    /// transport and backend errors.
    fn write_fenced(&self, grant: LeaseGrant, value: Vec<u8>) -> BoxFuture<'_, CallResult<()>>;

    /// The last record written for `key`, with its token; `None` if none
    /// was ever written.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    ///
    /// # Errors
    ///
    /// `Corrupt` for a stored record that does not decode; transport and
    /// backend errors.
    fn read_fenced(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<FencedRecord>>>;
}

impl<T: Board + ?Sized> Board for std::sync::Arc<T> {
    fn post(
        &self,
        key: PresenceKey,
        topic: TopicName,
        value: Vec<u8>,
    ) -> BoxFuture<'_, CallResult<()>> {
        (**self).post(key, topic, value)
    }

    fn read_posts(
        &self,
        service: ServiceGroup,
        topic: TopicName,
    ) -> BoxFuture<'_, CallResult<Vec<Post>>> {
        (**self).read_posts(service, topic)
    }

    fn write_fenced(&self, grant: LeaseGrant, value: Vec<u8>) -> BoxFuture<'_, CallResult<()>> {
        (**self).write_fenced(grant, value)
    }

    fn read_fenced(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<FencedRecord>>> {
        (**self).read_fenced(key)
    }
}
