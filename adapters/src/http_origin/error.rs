//! [`HttpError`]: every way an HTTP exchange fails, with a stable code.
//!
//! Invariants:
//! - No variant holds request or response bytes, header values or
//!   credential material; the credential binding fails with a fixed reason.
//! - [`HttpError::code`] never changes for a variant; messages may.
//! - [`HttpError::was_sent`] never answers [`Sent::No`] for a request any
//!   byte of which may have been written to a socket.

use std::sync::atomic::{AtomicU8, Ordering};

use provider_pools_actors::{AdmitError, ConnectError};

use crate::http_origin::origin::{OriginError, TargetError};
use crate::limits::LimitError;

/// Whether a failed request may have reached the origin: what a caller
/// needs to decide whether another attempt is safe. The pools never make
/// one themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sent {
    /// No byte of the request left the process: another attempt cannot
    /// repeat it.
    No,
    /// The request was handed to a connection and may have been written,
    /// in part or whole: the origin may have acted on it.
    Maybe,
    /// The origin answered (its response head arrived): it saw the request.
    Yes,
}

/// Why an HTTP exchange failed; [`HttpError::was_sent`] says whether the
/// origin may have seen the request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// No connection was reserved: backoff, saturation, a failed dial, a
    /// deadline, or closed pools. Nothing was sent.
    #[error("no connection")]
    Connect(#[from] ConnectError),
    /// The request body is over the limit; refused before any dial.
    #[error("request body of {len} bytes is over the limit of {max}")]
    RequestTooLarge {
        /// The body's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The origin's response head (HTTP/1.1 status line and headers, or
    /// HTTP/2 header list) is over the provider setting `max_head_bytes`;
    /// the connection (HTTP/1.1) or stream (HTTP/2) was given up.
    #[error("response head is over the limit of {max} bytes")]
    HeadTooLarge {
        /// The limit.
        max: usize,
        /// The protocol library's refusal.
        #[source]
        source: ProtocolError,
    },
    /// The response body is over the limit; its connection was destroyed.
    #[error("response body is over the limit of {max} bytes")]
    ResponseTooLarge {
        /// The limit.
        max: usize,
    },
    /// The origin broke the protocol or the connection failed mid-exchange;
    /// the connection was destroyed.
    #[error("http protocol error while {phase}")]
    Protocol {
        /// `sending the request`, `reading the response head` or
        /// `reading the response body`.
        phase: &'static str,
        /// Whether the request may have reached the origin.
        sent: Sent,
        /// The protocol library's error.
        #[source]
        source: ProtocolError,
    },
    /// The request's deadline passed during the exchange.
    #[error("deadline passed during the http exchange")]
    Timeout {
        /// Whether the request may have reached the origin by then.
        sent: Sent,
    },
    /// The guest's request target was refused.
    #[error("invalid request target")]
    Target(#[from] TargetError),
    /// The configured origin is not an approved `http://host:port`.
    #[error("invalid configured origin")]
    Origin(#[from] OriginError),
    /// The opaque credential binding could not be applied.
    #[error("credential binding failed: {reason}")]
    Binding {
        /// A fixed reason; never the credential.
        reason: &'static str,
    },
    /// A body bound is above its ceiling; refused before any dial.
    #[error("invalid body limits")]
    Limit(#[from] LimitError),
    /// The response bytes could not be charged.
    #[error("response not staged")]
    Staging(#[source] AdmitError),
    /// A provider setting of the http adapter has a value it does not
    /// take; refused before any dial.
    #[error("invalid setting `{setting}`: {reason}")]
    Setting {
        /// The setting's name.
        setting: &'static str,
        /// What it must be.
        reason: &'static str,
    },
}

/// The protocol library's error behind [`HttpError::Protocol`]: hyper's
/// on HTTP/1.1, h2's on HTTP/2.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// hyper's HTTP/1.1 error.
    #[error(transparent)]
    Http1(#[from] hyper::Error),
    /// h2's HTTP/2 error (a stream reset, a GOAWAY, a broken connection).
    #[error(transparent)]
    Http2(#[from] h2::Error),
}

impl HttpError {
    /// The stable code of this error. A refused connection keeps its own
    /// code (`unavailable`, `busy`, `capacity`, `timeout`, `closed`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Connect(e) => e.code(),
            Self::RequestTooLarge { .. } => "request_too_large",
            Self::HeadTooLarge { .. } => "response_head_too_large",
            Self::ResponseTooLarge { .. } => "response_too_large",
            Self::Protocol { .. } => "protocol",
            Self::Timeout { .. } => "timeout",
            Self::Target(_) => "invalid_target",
            Self::Origin(_) => "invalid_origin",
            Self::Binding { .. } => "invalid_binding",
            Self::Limit(e) => e.code(),
            Self::Staging(e) => e.code(),
            Self::Setting { .. } => "invalid_setting",
        }
    }

    /// Whether the request may have reached the origin: [`Sent::No`] when
    /// no byte of it left the process (no connection, a refused request or
    /// configuration, a connection that closed before it took the
    /// request), [`Sent::Maybe`] when a connection took it and failed or
    /// the deadline passed before an answer, [`Sent::Yes`] once bytes of
    /// the origin's response head arrived (a head refused or too large, a
    /// body that failed, was too large or could not be charged).
    pub fn was_sent(&self) -> Sent {
        match self {
            Self::Connect(_)
            | Self::RequestTooLarge { .. }
            | Self::Target(_)
            | Self::Origin(_)
            | Self::Binding { .. }
            | Self::Setting { .. }
            | Self::Limit(_) => Sent::No,
            Self::Protocol { sent, .. } | Self::Timeout { sent } => *sent,
            Self::HeadTooLarge { .. } | Self::ResponseTooLarge { .. } | Self::Staging(_) => {
                Sent::Yes
            }
        }
    }
}

/// How far one exchange got, for the [`Sent`] of a timeout: written by
/// the exchange, read by whoever bounds it with a deadline.
#[derive(Debug, Default)]
pub(crate) struct Progress(AtomicU8);

impl Progress {
    /// Records how far the exchange got.
    pub(crate) fn set(&self, sent: Sent) {
        self.0.store(sent as u8, Ordering::Relaxed);
    }

    /// How far the exchange got.
    pub(crate) fn sent(&self) -> Sent {
        match self.0.load(Ordering::Relaxed) {
            0 => Sent::No,
            1 => Sent::Maybe,
            _ => Sent::Yes,
        }
    }

    /// The error of a deadline that passed now.
    pub(crate) fn timeout(&self) -> HttpError {
        HttpError::Timeout { sent: self.sent() }
    }

    /// The response head arrived.
    pub(crate) fn answered(&self) {
        self.set(Sent::Yes);
    }
}
