//! [`ControlPlaneError`]: every way a control-plane call fails, typed by
//! what went wrong, with a stable [`ErrorCode`] for wire and metrics.
//!
//! Invariants:
//! - A message never carries a credential or a business payload.
//! - [`ControlPlaneError::OutcomeUnknown`] is only ever reported for a lease
//!   mutation whose request may have reached the server; it is settled by
//!   reading the lease back, never by replaying the mutation.

use std::io;

use crate::name::{NameError, NodeId};
use crate::token::{FencingToken, TokenExhausted};

/// Why a control-plane call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlPlaneError {
    /// The client is offline; no call can succeed.
    #[error("control plane is offline")]
    Offline,
    /// The call ran out of time (its budget, an attempt, or an overdue
    /// answer that may have reported success).
    #[error("control plane call timed out")]
    Timeout,
    /// The transport failed: connect, reset, broken stream.
    #[error("control plane transport failed: {0}")]
    Transport(String),
    /// The server answered with an HTTP status the call does not retry or
    /// whose retries ran out.
    #[error("control plane answered status {status}")]
    Status {
        /// The HTTP status.
        status: u16,
    },
    /// A lease mutation may or may not have applied (a timeout or transport
    /// failure after the request was sent). Read the lease back to settle it.
    #[error("outcome of lease {operation} is unknown; read the lease back")]
    OutcomeUnknown {
        /// `acquire`, `renew`, `release` or (a fenced write) `write_fenced`.
        operation: &'static str,
    },
    /// The lease is held by another node.
    #[error("lease is held by {holder} with token {token}")]
    LeaseHeld {
        /// The current holder.
        holder: NodeId,
        /// The holder's fencing token.
        token: FencingToken,
    },
    /// The caller does not hold the lease with that token (it expired, was
    /// released or was taken over).
    #[error("lease is not held by this node with this token")]
    LeaseLost,
    /// The registration is unknown or has expired.
    #[error("service instance is not registered")]
    NotRegistered,
    /// The lease's fencing epoch is exhausted; it is never reused.
    #[error("lease fencing epoch is exhausted")]
    EpochExhausted,
    /// Time arithmetic overflowed; the call failed closed.
    #[error("{what} overflowed")]
    Overflow {
        /// The quantity that overflowed.
        what: &'static str,
    },
    /// A store limit would be exceeded; nothing changed.
    #[error("{limit} limit reached")]
    LimitExceeded {
        /// The limit: `records` or `retained bytes`.
        limit: &'static str,
    },
    /// Something is larger than allowed.
    #[error("{what} is larger than {limit} bytes")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The limit, in bytes.
        limit: u64,
    },
    /// A value given by the caller is invalid.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field that was wrong.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// An endpoint is not acceptable (plain http off loopback, userinfo, …).
    #[error("insecure endpoint: {reason}")]
    InsecureEndpoint {
        /// Why.
        reason: String,
    },
    /// Persisted or received state is malformed.
    #[error("corrupt {what}: {reason}")]
    Corrupt {
        /// What was read: `state file`, `backup`, `response`, …
        what: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// The peer broke the protocol.
    #[error("control plane protocol error: {0}")]
    Protocol(String),
    /// A storage operation failed.
    #[error("storage {operation} failed")]
    Storage {
        /// The operation: `open`, `write`, `sync`, `rename`, …
        operation: &'static str,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

/// The stable, machine-readable code of a [`ControlPlaneError`], used on the
/// V1 wire and in metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// [`ControlPlaneError::Offline`]
    Offline,
    /// [`ControlPlaneError::Timeout`]
    Timeout,
    /// [`ControlPlaneError::Transport`]
    Transport,
    /// [`ControlPlaneError::Status`]
    Status,
    /// [`ControlPlaneError::OutcomeUnknown`]
    OutcomeUnknown,
    /// [`ControlPlaneError::LeaseHeld`]
    LeaseHeld,
    /// [`ControlPlaneError::LeaseLost`]
    LeaseLost,
    /// [`ControlPlaneError::NotRegistered`]
    NotRegistered,
    /// [`ControlPlaneError::EpochExhausted`]
    EpochExhausted,
    /// [`ControlPlaneError::Overflow`]
    Overflow,
    /// [`ControlPlaneError::LimitExceeded`]
    LimitExceeded,
    /// [`ControlPlaneError::TooLarge`]
    TooLarge,
    /// [`ControlPlaneError::Invalid`]
    Invalid,
    /// [`ControlPlaneError::InsecureEndpoint`]
    InsecureEndpoint,
    /// [`ControlPlaneError::Corrupt`]
    Corrupt,
    /// [`ControlPlaneError::Protocol`]
    Protocol,
    /// [`ControlPlaneError::Storage`]
    Storage,
}

impl ErrorCode {
    /// The code as written on the wire: lowercase with underscores.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Offline => "offline",
            Self::Timeout => "timeout",
            Self::Transport => "transport",
            Self::Status => "status",
            Self::OutcomeUnknown => "outcome_unknown",
            Self::LeaseHeld => "lease_held",
            Self::LeaseLost => "lease_lost",
            Self::NotRegistered => "not_registered",
            Self::EpochExhausted => "epoch_exhausted",
            Self::Overflow => "overflow",
            Self::LimitExceeded => "limit_exceeded",
            Self::TooLarge => "too_large",
            Self::Invalid => "invalid",
            Self::InsecureEndpoint => "insecure_endpoint",
            Self::Corrupt => "corrupt",
            Self::Protocol => "protocol",
            Self::Storage => "storage",
        }
    }

    /// Every code, for exhaustive tables and tests.
    pub const ALL: [ErrorCode; 17] = [
        Self::Offline,
        Self::Timeout,
        Self::Transport,
        Self::Status,
        Self::OutcomeUnknown,
        Self::LeaseHeld,
        Self::LeaseLost,
        Self::NotRegistered,
        Self::EpochExhausted,
        Self::Overflow,
        Self::LimitExceeded,
        Self::TooLarge,
        Self::Invalid,
        Self::InsecureEndpoint,
        Self::Corrupt,
        Self::Protocol,
        Self::Storage,
    ];

    /// The code written as `text`, if it is one.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|code| code.as_str() == text)
    }
}

impl ControlPlaneError {
    /// This error's stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Offline => ErrorCode::Offline,
            Self::Timeout => ErrorCode::Timeout,
            Self::Transport(_) => ErrorCode::Transport,
            Self::Status { .. } => ErrorCode::Status,
            Self::OutcomeUnknown { .. } => ErrorCode::OutcomeUnknown,
            Self::LeaseHeld { .. } => ErrorCode::LeaseHeld,
            Self::LeaseLost => ErrorCode::LeaseLost,
            Self::NotRegistered => ErrorCode::NotRegistered,
            Self::EpochExhausted => ErrorCode::EpochExhausted,
            Self::Overflow { .. } => ErrorCode::Overflow,
            Self::LimitExceeded { .. } => ErrorCode::LimitExceeded,
            Self::TooLarge { .. } => ErrorCode::TooLarge,
            Self::Invalid { .. } => ErrorCode::Invalid,
            Self::InsecureEndpoint { .. } => ErrorCode::InsecureEndpoint,
            Self::Corrupt { .. } => ErrorCode::Corrupt,
            Self::Protocol(_) => ErrorCode::Protocol,
            Self::Storage { .. } => ErrorCode::Storage,
        }
    }

    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field,
            reason: reason.into(),
        }
    }
}

impl From<NameError> for ControlPlaneError {
    /// [`ControlPlaneError::Invalid`] with the name's field and reason.
    fn from(error: NameError) -> Self {
        Self::Invalid {
            field: error.field,
            reason: error.reason,
        }
    }
}

impl From<TokenExhausted> for ControlPlaneError {
    /// [`ControlPlaneError::EpochExhausted`].
    fn from(_: TokenExhausted) -> Self {
        Self::EpochExhausted
    }
}
