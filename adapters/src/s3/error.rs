//! [`S3Error`]: every way an S3 operation fails, with a stable code.
//!
//! Invariants:
//! - No variant holds object bytes, S3's error messages (they may echo the
//!   access key id) or credential material: a service error keeps only its
//!   status and its short error code.
//! - [`S3Error::code`] never changes for a variant; messages may.

use std::error::Error;

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use provider_pools_actors::{AdmitError, ConnectError};

use crate::s3::config::S3ConfigError;
use crate::s3::key::ObjectKeyError;

/// Longest S3 error code kept; longer or unusual codes become `unknown`.
const MAX_CODE: usize = 64;

/// Why an S3 operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum S3Error {
    /// A size or count bound is above its ceiling; refused before any I/O.
    #[error("invalid limits")]
    Limit(#[from] crate::limits::LimitError),
    /// The guest's key or prefix was refused.
    #[error(transparent)]
    Key(#[from] ObjectKeyError),
    /// The provider's configuration or credential is unusable.
    #[error(transparent)]
    Config(#[from] S3ConfigError),
    /// No such object (404, `NoSuchKey`).
    #[error("s3 object not found")]
    NotFound,
    /// The endpoint refused the credential or the access (403,
    /// `AccessDenied`, `SignatureDoesNotMatch`, `InvalidAccessKeyId`).
    #[error("s3 access denied ({code})")]
    Denied {
        /// S3's error code.
        code: String,
    },
    /// Any other S3 error answer.
    #[error("s3 answered {status} ({code})")]
    Service {
        /// The HTTP status.
        status: u16,
        /// S3's error code, or `unknown`.
        code: String,
    },
    /// An object is larger than allowed: a put refused before any dial, or
    /// a get whose object (or body) is over the limit.
    #[error("s3 object is {len} bytes, more than {limit}")]
    TooLarge {
        /// Its size, as far as known.
        len: u64,
        /// The bound.
        limit: u64,
    },
    /// A listing has more entries than allowed.
    #[error("s3 listing has more than {limit} entries")]
    TooMany {
        /// The bound.
        limit: usize,
    },
    /// An answer other than an object body is over its limit.
    #[error("s3 response is over the limit of {max} bytes")]
    ResponseTooLarge {
        /// The bound.
        max: u64,
    },
    /// No connection was reserved: backoff, saturation, a failed dial, or
    /// closed pools. Nothing was sent.
    #[error("no connection")]
    Connect(#[source] ConnectError),
    /// The request's deadline passed.
    #[error("deadline passed during the s3 call")]
    Timeout,
    /// The exchange broke mid-way, or the answer could not be understood;
    /// the connection was destroyed.
    #[error("s3 protocol error while {phase}")]
    Protocol {
        /// A fixed description of the phase.
        phase: &'static str,
    },
    /// The SDK produced a request for another origin than the slot's
    /// endpoint; it was refused before any connection.
    #[error("s3 request refused: {what} is not the approved endpoint")]
    Unapproved {
        /// Which part differed.
        what: &'static str,
    },
    /// A result chunk could not be staged.
    #[error("s3 result not staged")]
    Staging(#[source] AdmitError),
}

impl From<crate::limits::Oversize> for S3Error {
    fn from(crate::limits::Oversize { len, limit }: crate::limits::Oversize) -> Self {
        Self::TooLarge { len, limit }
    }
}

impl S3Error {
    /// The stable code of this error. A refused connection keeps its own
    /// code (`unavailable`, `busy`, `capacity`, `timeout`, `closed`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Limit(e) => e.code(),
            Self::Key(_) => "invalid_key",
            Self::Config(e) => e.code(),
            Self::NotFound => "not_found",
            Self::Denied { .. } => "denied",
            Self::Service { .. } => "service",
            Self::TooLarge { .. } => "too_large",
            Self::TooMany { .. } => "too_many",
            Self::ResponseTooLarge { .. } => "response_too_large",
            Self::Connect(e) => e.code(),
            Self::Timeout => "timeout",
            Self::Protocol { .. } => "protocol",
            Self::Unapproved { .. } => "unapproved_origin",
            Self::Staging(e) => e.code(),
        }
    }

    /// Classifies an SDK error: S3's answer by status and code, the pools'
    /// own failures from the connector's error in the chain.
    pub(crate) fn from_sdk<E>(error: SdkError<E, HttpResponse>) -> Self
    where
        E: ProvideErrorMetadata + Error + 'static,
    {
        if let SdkError::ServiceError(context) = &error {
            let status = context.raw().status().as_u16();
            let code = context.err().code();
            return Self::answered(status, code);
        }
        if let Some(failure) = find_failure(&error) {
            return Self::from_failure(failure, "reading the s3 answer");
        }
        match error {
            SdkError::TimeoutError(_) => Self::Timeout,
            SdkError::ConstructionFailure(_) => Self::Protocol {
                phase: "building the s3 request",
            },
            SdkError::DispatchFailure(_) => Self::Protocol {
                phase: "sending the s3 request",
            },
            _ => Self::Protocol {
                phase: "reading the s3 answer",
            },
        }
    }

    /// An S3 error answer by its status and code.
    fn answered(status: u16, code: Option<&str>) -> Self {
        let code = code
            .filter(|c| {
                !c.is_empty()
                    && c.len() <= MAX_CODE
                    && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')
            })
            .unwrap_or("unknown");
        match (status, code) {
            (404, _) | (_, "NoSuchKey") => Self::NotFound,
            (403, _) | (_, "AccessDenied" | "SignatureDoesNotMatch" | "InvalidAccessKeyId") => {
                Self::Denied {
                    code: code.to_owned(),
                }
            }
            _ => Self::Service {
                status,
                code: code.to_owned(),
            },
        }
    }

    /// The error for a connector or body failure; `body_phase` names where
    /// a broken exchange was.
    pub(crate) fn from_failure(failure: &Failure, body_phase: &'static str) -> Self {
        match failure {
            Failure::Unapproved(what) => Self::Unapproved { what },
            Failure::RequestTooLarge { max } => Self::TooLarge {
                len: max.saturating_add(1),
                limit: *max,
            },
            Failure::RequestBody => Self::Protocol {
                phase: "reading the request body",
            },
            Failure::Connect(e) => Self::Connect(e.clone()),
            Failure::ResponseTooLarge { max } => Self::ResponseTooLarge { max: *max },
            Failure::Protocol { phase, .. } if *phase == "sending the request" => Self::Protocol {
                phase: "sending the s3 request",
            },
            Failure::Protocol { .. } => Self::Protocol { phase: body_phase },
            Failure::Timeout => Self::Timeout,
            Failure::Staging(e) => Self::Staging(e.clone()),
        }
    }
}

/// The connector's failure somewhere in `error`'s source chain.
pub(crate) fn find_failure<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a Failure> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(failure) = error.downcast_ref::<Failure>() {
            return Some(failure);
        }
        next = error.source();
    }
    None
}

/// Why the connector could not carry a request, as the SDK's connector
/// error source; the operations turn it back into an
/// [`S3Error`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The request names another origin than the slot's endpoint.
    #[error("request refused: {0} is not the approved endpoint")]
    Unapproved(&'static str),
    /// The request body is over the limit; nothing was dialed.
    #[error("request body is over the limit of {max} bytes")]
    RequestTooLarge { max: u64 },
    /// The request body could not be read.
    #[error("request body could not be read")]
    RequestBody,
    /// No connection was reserved.
    #[error("no connection")]
    Connect(#[source] ConnectError),
    /// The response body is over the limit; the connection was destroyed.
    #[error("response body is over the limit of {max} bytes")]
    ResponseTooLarge { max: u64 },
    /// The exchange failed mid-way; the connection was destroyed.
    #[error("http protocol error while {phase}")]
    Protocol {
        phase: &'static str,
        #[source]
        source: hyper::Error,
    },
    /// The request's deadline passed.
    #[error("deadline passed during the s3 exchange")]
    Timeout,
    /// A response body chunk could not be charged to the request; the
    /// connection was destroyed.
    #[error("response body not charged")]
    Staging(#[source] AdmitError),
}
