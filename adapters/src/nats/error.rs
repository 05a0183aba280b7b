//! [`NatsError`]: every way a NATS operation fails, with a stable code.
//!
//! Invariants:
//! - No variant holds payload bytes or credential material: a refused
//!   credential is [`NatsError::Denied`], with no detail from the client.
//! - [`NatsError::code`] never changes for a variant; messages may.

use std::fmt;

use provider_pools_actors::{AdmitError, ConnectError, DialErrorKind};

use crate::nats::names::NatsNameError;
use crate::nats::target::NatsTargetError;

/// The dial error message that marks a credential the server refused; a
/// [`ConnectError`] carrying it becomes [`NatsError::Denied`].
pub(crate) const DENIED_DIAL: &str = "the nats server refused the credential";

/// What was not found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Missing {
    /// No stream takes the subject, or the configured stream does not exist.
    Stream,
    /// The consumer does not exist on the stream.
    Consumer,
    /// The key-value bucket does not exist.
    Bucket,
    /// The key has no value (never put, deleted or purged).
    Key,
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Stream => "stream",
            Self::Consumer => "consumer",
            Self::Bucket => "key-value bucket",
            Self::Key => "key",
        })
    }
}

/// Why a NATS operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NatsError {
    /// A size or count bound is above its ceiling; refused before any I/O.
    #[error("invalid limits")]
    Limit(#[from] crate::limits::LimitError),
    /// The stream, consumer, bucket or key does not exist. The connection
    /// stays reusable.
    #[error("no such {0}")]
    NotFound(Missing),
    /// The server refused the credential at connect (the client then backs
    /// off), or refused this operation (a permissions violation; the
    /// connection was destroyed).
    #[error("the nats server denied the credential or the operation")]
    Denied,
    /// A payload or value is over the limit. Refused before any dial when
    /// it is the caller's; a fetched batch over the limit is refused after.
    #[error("{what} of {len} bytes is over the limit of {max}")]
    TooLarge {
        /// `payload`, `value` or `fetched batch`.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// No connection was reserved: backoff, saturation, a failed dial, a
    /// deadline, or closed pools. Nothing was sent.
    #[error("no connection")]
    Connect(#[source] ConnectError),
    /// The request's deadline passed mid-operation; the connection was
    /// destroyed.
    #[error("deadline passed during the nats operation")]
    Timeout,
    /// The server or the connection failed mid-operation (a disconnect, a
    /// server error, a reply the adapter cannot read); the connection was
    /// destroyed.
    #[error("nats protocol error while {phase}: {reason}")]
    Protocol {
        /// What the adapter was doing.
        phase: &'static str,
        /// What went wrong; never payload or credential bytes.
        reason: String,
    },
    /// The provider's configuration cannot serve this operation.
    #[error("nats setting `{setting}` {reason}")]
    Config {
        /// The setting (or `target`, `credential`).
        setting: &'static str,
        /// A fixed reason.
        reason: &'static str,
    },
    /// The configured target is not an approved `nats://` or `tls://` server.
    #[error("invalid nats target")]
    Target(#[from] NatsTargetError),
    /// A guest name was refused.
    #[error("invalid name")]
    Name(#[from] NatsNameError),
    /// An argument is outside its bounds (for example `max_messages`).
    #[error("invalid argument: {0}")]
    Argument(&'static str),
    /// Result bytes could not be charged.
    #[error("result not staged")]
    Staging(#[source] AdmitError),
}

impl NatsError {
    /// [`NatsError::TooLarge`] when `len` bytes of `what` are over `max`.
    pub(crate) fn check_size(what: &'static str, len: usize, max: usize) -> Result<(), Self> {
        if len > max {
            return Err(Self::TooLarge { what, len, max });
        }
        Ok(())
    }

    /// The stable code of this error. A refused connection keeps its own
    /// code (`unavailable`, `busy`, `capacity`, `timeout`, `closed`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Limit(e) => e.code(),
            Self::NotFound(_) => "not_found",
            Self::Denied => "denied",
            Self::TooLarge { .. } => "too_large",
            Self::Connect(e) => e.code(),
            Self::Timeout => "timeout",
            Self::Protocol { .. } => "protocol",
            Self::Config { .. } => "invalid_config",
            Self::Target(_) => "invalid_target",
            Self::Name(_) => "invalid_name",
            Self::Argument(_) => "invalid_argument",
            Self::Staging(e) => e.code(),
        }
    }

    /// True when the connection that saw this error may be reused.
    pub(crate) fn keeps_connection(&self) -> bool {
        matches!(
            self,
            Self::NotFound(_) | Self::TooLarge { .. } | Self::Staging(_)
        )
    }

    pub(crate) fn protocol(phase: &'static str, reason: impl fmt::Display) -> Self {
        Self::Protocol {
            phase,
            reason: reason.to_string(),
        }
    }
}

impl From<ConnectError> for NatsError {
    fn from(e: ConnectError) -> Self {
        match e {
            ConnectError::Dial(dial)
                if dial.kind == DialErrorKind::Handshake && dial.message == DENIED_DIAL =>
            {
                Self::Denied
            }
            other => Self::Connect(other),
        }
    }
}
