//! [`HttpError`]: every way an HTTP exchange fails, with a stable code.
//!
//! Invariants:
//! - No variant holds request or response bytes, header values or
//!   credential material; the credential binding fails with a fixed reason.
//! - [`HttpError::code`] never changes for a variant; messages may.

use provider_pools_actors::{AdmitError, ConnectError};

use crate::http::origin::{OriginError, TargetError};
use crate::limits::LimitError;

/// Why an HTTP exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// No connection was reserved: backoff, saturation, a failed dial, a
    /// deadline, or closed pools. Nothing was sent.
    #[error("no connection: {0}")]
    Connect(#[from] ConnectError),
    /// The request body is over the limit; refused before any dial.
    #[error("request body of {len} bytes is over the limit of {max}")]
    RequestTooLarge {
        /// The body's length.
        len: usize,
        /// The limit.
        max: usize,
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
        /// `sending the request` or `reading the response body`.
        phase: &'static str,
        /// hyper's error.
        #[source]
        source: hyper::Error,
    },
    /// The request's deadline passed during the exchange.
    #[error("deadline passed during the http exchange")]
    Timeout,
    /// The guest's request target was refused.
    #[error("invalid request target: {0}")]
    Target(#[from] TargetError),
    /// The configured origin is not an approved `http://host:port`.
    #[error("invalid configured origin: {0}")]
    Origin(#[from] OriginError),
    /// The opaque credential binding could not be applied.
    #[error("credential binding failed: {reason}")]
    Binding {
        /// A fixed reason; never the credential.
        reason: &'static str,
    },
    /// A body bound is above its ceiling; refused before any dial.
    #[error("invalid body limits: {0}")]
    Limit(#[from] LimitError),
    /// The response bytes could not be charged.
    #[error("response not staged: {0}")]
    Staging(AdmitError),
}

impl HttpError {
    /// The stable code of this error. A refused connection keeps its own
    /// code (`unavailable`, `busy`, `capacity`, `timeout`, `closed`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Connect(e) => e.code(),
            Self::RequestTooLarge { .. } => "request_too_large",
            Self::ResponseTooLarge { .. } => "response_too_large",
            Self::Protocol { .. } => "protocol",
            Self::Timeout => "timeout",
            Self::Target(_) => "invalid_target",
            Self::Origin(_) => "invalid_origin",
            Self::Binding { .. } => "invalid_binding",
            Self::Limit(e) => e.code(),
            Self::Staging(e) => e.code(),
        }
    }
}
