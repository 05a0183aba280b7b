//! The HTTP transport seam of the HTTP client: [`HttpTransport`], the
//! request it sends ([`SharedHttpControlPlaneRequest`], or the owned
//! [`HttpControlPlaneRequest`] of the original method) and its answer; the
//! built-in transports ([`StdHttpTransport`], [`PooledHttpTransport`],
//! [`BearerHttpTransport`]) and secure endpoint validation ([`Endpoint`]).
//!
//! Invariants:
//! - A request's body is encoded once; built-in transports send the same
//!   immutable [`Bytes`] on every attempt. A transport that implements only
//!   the owned method gets a copy through the default
//!   [`HttpTransport::send_shared`].
//! - `Debug` of a request shows the body's length, never its bytes.
//! - A transport honours the request's deadline itself and bounds the
//!   response body it reads; the client also stops waiting at the deadline
//!   and treats an answer that arrives late as a timeout.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::error::ControlPlaneError;
use crate::future::BoxFuture;

mod bearer_transport;
mod endpoint;
mod pooled_transport;
mod response_reader;
mod std_transport;
mod target;
pub(crate) mod tls_config;

pub use bearer_transport::{BearerHttpTransport, BearerToken, MAX_BEARER_TOKEN_BYTES};
pub use endpoint::{Endpoint, Scheme, MAX_ENDPOINT_BYTES};
pub use pooled_transport::{
    PooledHttpTransport, PooledTransportConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_POOL_IDLE_TIMEOUT,
    DEFAULT_POOL_MAX_IDLE_PER_HOST, MAX_POOL_MAX_IDLE_PER_HOST,
};
/// The workspace's one redaction rule for URL-like text (owned by
/// `provider-pools-redact`, which every crate of the workspace uses).
pub use provider_pools_redact::redact_userinfo;
pub use response_reader::MAX_HEAD_BYTES;
pub use std_transport::StdHttpTransport;
pub use tls_config::MAX_CA_FILE_BYTES;

/// Largest response body a built-in transport reads by default.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;
/// The ceiling of every transport's response-body bound: 64 MiB. A larger
/// `with_max_response_bytes` is refused with
/// [`ControlPlaneError::Invalid`].
pub const MAX_RESPONSE_BYTES_CEILING: usize = 64 * 1024 * 1024;

/// Refuses a response bound of zero or above [`MAX_RESPONSE_BYTES_CEILING`].
fn check_response_bound(bytes: usize) -> Result<usize, crate::ControlPlaneError> {
    if bytes == 0 || bytes > MAX_RESPONSE_BYTES_CEILING {
        return Err(crate::ControlPlaneError::invalid(
            "max_response_bytes",
            format!("{bytes}, must be 1–{MAX_RESPONSE_BYTES_CEILING}"),
        ));
    }
    Ok(bytes)
}

/// The HTTP method of a V1 request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// `GET`
    Get,
    /// `POST`
    Post,
    /// `PUT`
    Put,
    /// `DELETE`
    Delete,
}

impl HttpMethod {
    /// The method as written on the request line.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Delete => "DELETE",
        }
    }
}

/// One V1 request whose body was encoded once and is shared by every
/// attempt.
#[derive(Clone)]
pub struct SharedHttpControlPlaneRequest {
    method: HttpMethod,
    url: String,
    body: Bytes,
    deadline: Instant,
}

impl SharedHttpControlPlaneRequest {
    /// A request to `url` (already validated by the client) with an
    /// encoded JSON `body`.
    pub fn new(method: HttpMethod, url: impl Into<String>, body: Bytes, deadline: Instant) -> Self {
        Self {
            method,
            url: url.into(),
            body,
            deadline,
        }
    }

    /// The method.
    pub fn method(&self) -> HttpMethod {
        self.method
    }

    /// The absolute URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The encoded body, shared.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The instant this attempt must be answered by.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// This request with another attempt deadline; the body is shared, not
    /// copied.
    pub fn with_deadline(&self, deadline: Instant) -> Self {
        Self {
            deadline,
            ..self.clone()
        }
    }

    /// The owned form, for transports that implement only
    /// [`HttpTransport::send`]: the body is copied.
    pub fn to_owned_request(&self) -> HttpControlPlaneRequest {
        HttpControlPlaneRequest {
            method: self.method,
            url: self.url.clone(),
            body: self.body.to_vec(),
            timeout: self.deadline.saturating_duration_since(Instant::now()),
        }
    }
}

impl fmt::Debug for SharedHttpControlPlaneRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedHttpControlPlaneRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("body_len", &self.body.len())
            .finish()
    }
}

/// The owned request of the original transport method.
#[derive(Clone)]
pub struct HttpControlPlaneRequest {
    /// The method.
    pub method: HttpMethod,
    /// The absolute URL.
    pub url: String,
    /// The encoded body.
    pub body: Vec<u8>,
    /// Time left for this attempt when it was handed over.
    pub timeout: Duration,
}

impl HttpControlPlaneRequest {
    /// The shared form, the body moved (not copied); the deadline is now
    /// plus `timeout` (a timeout beyond the clock's range is clamped to a
    /// day, far past any attempt the client allows).
    pub fn into_shared(self) -> SharedHttpControlPlaneRequest {
        let now = Instant::now();
        let deadline = now
            .checked_add(self.timeout)
            .unwrap_or_else(|| now + Duration::from_secs(24 * 60 * 60));
        SharedHttpControlPlaneRequest::new(self.method, self.url, Bytes::from(self.body), deadline)
    }
}

impl fmt::Debug for HttpControlPlaneRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpControlPlaneRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("body_len", &self.body.len())
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Reads one response from `bytes` with [`StdHttpTransport`]'s parser, its
/// body at most `max_body` bytes, through a buffer of `buffer` bytes (at
/// least 1) so reads split where the socket's would.
///
/// For the fuzz targets (`fuzz/`) only: not a stable API.
///
/// # Errors
///
/// As the transport's reader: `Malformed`, `TooLarge`, `Io` (the bytes end
/// early).
#[doc(hidden)]
pub fn read_response_for_fuzzing(
    bytes: &[u8],
    max_body: usize,
    buffer: usize,
) -> Result<HttpResponse, TransportError> {
    response_reader::read_response(
        &mut std::io::BufReader::with_capacity(buffer.max(1), bytes),
        max_body,
    )
}

/// A transport's answer: the status and the (bounded) body.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The HTTP status.
    pub status: u16,
    /// The body, at most the transport's response bound.
    pub body: Bytes,
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("body_len", &self.body.len())
            .finish()
    }
}

/// How a transport failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// No connection could be made; the request was not sent.
    #[error("connect failed: {0}")]
    Connect(String),
    /// The connection failed after the request may have been sent.
    #[error("transport failed: {0}")]
    Io(String),
    /// The deadline passed.
    #[error("timed out")]
    Timeout,
    /// The response body exceeded the transport's bound.
    #[error("response larger than {limit} bytes")]
    TooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// The response was not valid HTTP.
    #[error("malformed response: {0}")]
    Malformed(String),
}

impl TransportError {
    /// True when the request certainly never left (a lease mutation that
    /// failed so did not apply).
    pub fn before_send(&self) -> bool {
        matches!(self, Self::Connect(_))
    }
}

/// Sends V1 requests. Implement [`send`](HttpTransport::send); override
/// [`send_shared`](HttpTransport::send_shared) to avoid copying the body.
///
/// # Cancel safety
///
/// The client drops a transport future at the attempt deadline. Once
/// written, a request may still apply remotely.
pub trait HttpTransport: Send + Sync + fmt::Debug {
    /// Sends an owned request (the original V1 method).
    ///
    /// # Cancel safety
    ///
    /// The client drops this future at the attempt's deadline; an
    /// implementation must then drop (close) the connection it was using.
    /// A request already written may still apply remotely.
    ///
    /// # Errors
    ///
    /// [`TransportError::Connect`] only when the request certainly never
    /// left, [`TransportError::Io`] when it may have,
    /// [`TransportError::Timeout`] at the request's deadline,
    /// [`TransportError::TooLarge`] past the transport's body bound and
    /// [`TransportError::Malformed`] for a response that is not HTTP/1.x.
    fn send(
        &self,
        request: HttpControlPlaneRequest,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>>;

    /// Sends a shared request; by default through [`send`](Self::send) with
    /// a copy of the body.
    ///
    /// # Cancel safety
    ///
    /// As [`send`](Self::send).
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send).
    fn send_shared<'a>(
        &'a self,
        request: &'a SharedHttpControlPlaneRequest,
    ) -> BoxFuture<'a, Result<HttpResponse, TransportError>> {
        self.send(request.to_owned_request())
    }

    /// Whether this transport can reach `endpoint`; the client asks once,
    /// when it is built. By default every (validated) endpoint.
    ///
    /// # Errors
    ///
    /// Why this transport cannot serve `endpoint` (for example a
    /// plain-TCP transport and an https endpoint).
    fn check_endpoint(&self, endpoint: &Endpoint) -> Result<(), ControlPlaneError> {
        let _ = endpoint;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_debug_shows_the_body_length_never_its_bytes() {
        let body = Bytes::from_static(b"{\"secret-looking\":\"payload\"}");
        let shared = SharedHttpControlPlaneRequest::new(
            HttpMethod::Post,
            "http://127.0.0.1:1/v1/leases/acquire",
            body.clone(),
            Instant::now(),
        );
        let text = format!("{shared:?}");
        assert!(
            text.contains(&format!("body_len: {}", body.len())),
            "{text}"
        );
        assert!(!text.contains("payload"), "{text}");
        let owned = format!("{:?}", shared.to_owned_request());
        assert!(
            owned.contains("body_len") && !owned.contains("payload"),
            "{owned}"
        );
    }

    #[test]
    fn a_new_deadline_shares_the_body_allocation() {
        let shared = SharedHttpControlPlaneRequest::new(
            HttpMethod::Get,
            "http://127.0.0.1:1/v1/x",
            Bytes::from(vec![7u8; 64]),
            Instant::now(),
        );
        let again = shared.with_deadline(Instant::now() + Duration::from_secs(1));
        assert_eq!(shared.body().as_ptr(), again.body().as_ptr());
    }
}
