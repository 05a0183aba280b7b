//! Connections: owned by the epoch that dialed them, charged before they
//! exist, destroyed before their charge is returned.
//!
//! An adapter implements [`Dialer`]; `ProviderPools::reserve_connection`
//! hands it a parked connection when a fresh one is idle for the slot's
//! client, or dials one in a task of its own (`dial.rs`) — at most one dial
//! in flight per configured client, charged to the node's connections and
//! the client's connections before it starts. A dial belongs to the client:
//! a requester that leaves does not cancel it; it completes into the idle
//! stash or fails on its own. A failed dial, or one the pools cancel
//! themselves, puts the client
//! into exponential backoff (the registry's fixed dial backoff) — unless the
//! adapter reports it [`DialErrorKind::Saturated`] (it ran out of its own
//! bounded resources before reaching the origin); while it
//! lasts, and while another dial is failing, callers get the fixed
//! [`ConnectError::Unavailable`] carrying the last dial error's kind. The
//! pools never retry and never reconnect on their own.
//!
//! Invariants:
//! - Charge before dialing: the node and client connection charges exist
//!   before the dial future is polled.
//! - Destroy before release: a [`PooledConnection`] drops its resource, then
//!   its charges.
//! - Only [`PooledConnection::park`], called by adapter code that verified the
//!   connection is reusable, returns a connection to the idle pool; a dropped
//!   connection (a cancelled activation) is destroyed; a retired epoch and a
//!   full idle pool destroy what is parked.
//! - Idle connections keep node capacity, not an activation; their age is
//!   checked at checkout, and the control owner reclaims expired ones in
//!   bounded scans.
//! - A connection parked with a [`CloseWatch`](crate::CloseWatch) leaves
//!   the idle pool (and its charges) as soon as its socket's owner reports
//!   the close; a checkout never returns one whose close was reported.
//! - A [`Multiplexed`] connection carries several running requests of one
//!   tenant at once (`mux.rs`); it is in its client's table of streams
//!   exactly while it carries one, and parked or destroyed with its last.
//!
//! This module builds on the published epoch. What the published epoch
//! holds sits below it, beside this module: a connection's charges
//! (`epoch/charges.rs`), a parked connection (`IdleConn`, in
//! `epoch/idle.rs`), the closure notice (`epoch/watch.rs`) and the table
//! of multiplexed connections (`epoch/mux_table.rs`).

mod dial;
mod driver;
mod hold;
pub(crate) mod mux;
mod permit;
mod pooled;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::time::Duration;

pub(crate) use dial::{spawn_dial, DialJob};
pub(crate) use driver::DriverSeat;
pub(crate) use hold::{Holdings, RequestHold};
pub use mux::{Multiplexed, PooledStream};
pub(crate) use permit::{DialOutcome, DialPermit};
pub use pooled::PooledConnection;

/// Why a dial failed, as adapters classify it. Kept as the client's last
/// error during backoff, so waiters learn more than "unavailable".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DialErrorKind {
    /// The origin refused or reset the connection.
    Refused,
    /// The dial did not finish in time.
    Timeout,
    /// TLS or authentication failed.
    Handshake,
    /// The origin answered with something the adapter cannot speak.
    Protocol,
    /// The origin accepted the connection but allows no request on it (an
    /// HTTP/2 peer whose SETTINGS allow zero concurrent streams): a failed
    /// dial like any other, so the client backs off instead of dialing
    /// again for each call.
    NoStream,
    /// The dial was cancelled before it finished.
    Cancelled,
    /// The adapter ran out of a local bounded resource (a worker slot for
    /// its driver or file-system job) before it reached the origin. Not the
    /// origin's failure: no backoff, and callers hear `Busy`.
    Saturated,
    /// Anything else.
    Other,
}

impl DialErrorKind {
    /// A stable name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Timeout => "timeout",
            Self::Handshake => "handshake",
            Self::Protocol => "protocol",
            Self::NoStream => "no_stream",
            Self::Cancelled => "cancelled",
            Self::Saturated => "saturated",
            Self::Other => "other",
        }
    }
}

impl std::fmt::Display for DialErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed dial. The message must not contain credential material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dial failed ({kind}): {message}")]
pub struct DialError {
    /// The classification.
    pub kind: DialErrorKind,
    /// A short description for logs.
    pub message: String,
}

impl DialError {
    /// A dial error of `kind`.
    pub fn new(kind: DialErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// What a dial may read: the client's public target, the epoch's public
/// settings and the epoch's credential; and, for a dial the pools run, the
/// seat of the connection's driver (`ProviderPools::spawn_driver`).
#[derive(Clone, Copy)]
pub struct DialTarget<'a> {
    /// The origin's public target, as configured.
    pub target: &'a str,
    /// The epoch's public, protocol-specific settings (for example the
    /// HTTP adapter's `ca_file`).
    pub settings: &'a std::collections::BTreeMap<String, String>,
    /// The epoch's credential, for trusted adapter code only.
    pub credential: &'a crate::credential::Credential,
    /// The dial's room for its connection's driver; none outside the pools.
    driver: Option<&'a DriverSeat>,
}

impl<'a> DialTarget<'a> {
    /// A target for a dial run outside the pools (a dialer's own test):
    /// it has no seat for a driver, so
    /// [`ProviderPools::spawn_driver`](crate::ProviderPools::spawn_driver)
    /// refuses it.
    pub fn new(
        target: &'a str,
        settings: &'a std::collections::BTreeMap<String, String>,
        credential: &'a crate::credential::Credential,
    ) -> Self {
        Self {
            target,
            settings,
            credential,
            driver: None,
        }
    }

    /// The charges and deadline for this dial's driver, once.
    pub(crate) fn take_driver_seat(&self) -> Option<(Box<dyn Send>, tokio::time::Instant)> {
        self.driver.and_then(DriverSeat::take)
    }
}

impl std::fmt::Debug for DialTarget<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DialTarget")
            .field(
                "target",
                &provider_pools_redact::redact_userinfo(self.target),
            )
            .finish_non_exhaustive()
    }
}

/// Opens connections for one protocol adapter.
///
/// The connection type must own the real resource: dropping it closes the
/// socket (a facade over a detached driver is not enough). A connection
/// that needs a task to run it starts it with
/// [`ProviderPools::spawn_driver`](crate::ProviderPools::spawn_driver):
/// one driver per connection, holding the connection's charges, no
/// provider worker slot.
///
/// A dial belongs to the client, not to the request that asked for it: the
/// pools run it in a task of their own, bounded by the queue age in force
/// when it starts, so the dialer is cloned into that task (`Clone +
/// 'static`; an `Arc` around shared state is the usual shape).
pub trait Dialer: Send + Sync {
    /// The owned connection.
    type Conn: Send + 'static;

    /// Whether a fresh connection whose requester left before the dial
    /// completed is parked in the client's idle stash (true by default: a
    /// fresh connection is reusable). An adapter whose "connection" belongs
    /// to one request's content (the blob opener's per-key file handle)
    /// says false: such a connection is destroyed instead, and no backoff
    /// is recorded, since the dial succeeded.
    const PARK_UNCLAIMED: bool = true;

    /// Opens one connection.
    ///
    /// # Cancel safety
    ///
    /// Must be cancel safe: a dropped future must drop whatever it opened.
    /// The pools drop a dial only when they cancel it themselves (the
    /// runtime shutting down under it) and count that as a failed dial; a
    /// requester that leaves does not drop it.
    ///
    /// # Errors
    ///
    /// [`DialError`] when no connection was opened; its
    /// [`DialErrorKind`] decides the client's backoff (`Saturated` starts
    /// none) and what waiters are told. Its message must not contain
    /// credential bytes.
    fn dial(
        &self,
        target: DialTarget<'_>,
    ) -> impl Future<Output = Result<Self::Conn, DialError>> + Send;
}

/// Why no connection was reserved. Nothing is retried.
///
/// Backoff, the node-wide `connections` limit, a full epoch mailbox and a
/// closed registry answer at once; a request whose client is at
/// `connections_per_client`, or whose tenant is at its
/// `connections_per_tenant` share, waits for a connection of that client
/// within its own deadline and answers [`ConnectError::Timeout`] when none
/// frees in time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The client is in backoff after failed dials (a real failure to
    /// connect, or a dial the pools cancelled), or the dial this request
    /// waited on failed.
    #[error("origin unavailable after a {kind} dial failure; retry after {retry_after:?}")]
    Unavailable {
        /// The last dial error's kind.
        kind: DialErrorKind,
        /// Time left in the backoff window.
        retry_after: Duration,
    },
    /// The epoch actor's mailbox is full.
    #[error("connection pool is busy")]
    Busy,
    /// The node-wide `connections` limit is reached (answered at once: no
    /// release of one client is promised to another).
    #[error("connection capacity exhausted: {resource} has {used} of {limit} in use")]
    Capacity {
        /// `connections`.
        resource: &'static str,
        /// Use when refused.
        used: u32,
        /// The limit.
        limit: u32,
    },
    /// The request's deadline passed, also while it waited for a
    /// connection of a saturated client or for its tenant's share.
    #[error("deadline passed before a connection was ready")]
    Timeout,
    /// The pools or the epoch are gone.
    #[error("provider pools are closed")]
    Closed,
    /// A multiplexed connection dialed for the request opens no stream:
    /// its peer allows none (HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS` of
    /// zero). The connection was destroyed, never parked; nothing of the
    /// request was sent.
    #[error("the peer allows no stream on a new connection")]
    NoStream,
    /// The request was admitted under its provider's cluster share, and
    /// that share lapsed (its node lost contact past the share's expiry,
    /// for instance while the process was stopped) before the request was
    /// sent: what the provider runs is above the fallback, so the request
    /// is not started. Nothing of it was sent; admitting it again waits
    /// for the fallback's room.
    #[error("provider {provider}'s cluster share lapsed before the request was sent")]
    ShareLapsed {
        /// The provider.
        provider: crate::identity::ProviderId,
    },
    /// The dial this request asked for ran and failed (also when it did not
    /// connect within its own dial deadline, the queue age in force when it
    /// started: kind [`DialErrorKind::Timeout`]); the client is now in
    /// backoff, unless the kind is [`DialErrorKind::Saturated`].
    #[error(transparent)]
    Dial(DialError),
}

impl ConnectError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Dial(e) if e.kind == DialErrorKind::Saturated => "busy",
            Self::Dial(e) if e.kind == DialErrorKind::NoStream => "no_stream",
            Self::Unavailable { .. } | Self::Dial(_) => "unavailable",
            Self::Busy => "busy",
            Self::Capacity { .. } => "capacity",
            Self::Timeout => "timeout",
            Self::Closed => "closed",
            Self::NoStream => "no_stream",
            Self::ShareLapsed { .. } => "share_lapsed",
        }
    }
}

impl From<crate::budget::Exhausted> for ConnectError {
    fn from(e: crate::budget::Exhausted) -> Self {
        Self::Capacity {
            resource: e.resource,
            used: e.used,
            limit: e.limit,
        }
    }
}
