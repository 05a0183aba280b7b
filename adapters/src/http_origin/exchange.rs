//! The parts of one exchange that buffered and streaming calls share:
//! building the request (Host, credential binding), sending it on a pooled
//! connection, and deciding whether that connection may be parked.
//!
//! Invariants:
//! - The body limit is checked before a connection is reserved.
//! - The credential is read from the running request's epoch when the
//!   request is built, and its header value is marked sensitive.
//! - Guest headers never set `Host`, framing headers or the bound header.
//! - `Host` comes from the client's approved origin, parsed once per client
//!   and epoch and kept as the client's adapter state.
//! - A request is sent at most once (`delivery`): only a request a
//!   connection handed back untouched (it closed first) goes to another
//!   connection.
//! - A parked connection carries its driver's closure notice, so the idle
//!   stash drops it as soon as the origin closes it, and its idle deadline
//!   as its driver's: the driver closes it first (see `lifetime.rs`).
//! - A response head is charged to the request's tenant (metadata share
//!   and node budget) from its arrival for as long as it is held; a head
//!   that cannot be charged fails the call as `Staging`.
//! - The connection settings are checked before a connection is reserved.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::{HeaderMap, Method, Version};
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use hyper::body::Incoming;
use provider_pools_actors::{
    HeldMetadata, PooledConnection, PooledStream, ProviderPools, RunningRequest,
};
use tokio::time::Instant;

use crate::http_origin::delivery::{self, asks_close, park_if_reusable, Delivered};
use crate::http_origin::dialer::{HttpConnection, HttpDialer};
use crate::http_origin::error::{HttpError, Progress, ProtocolError};
use crate::http_origin::http2::{self, H2Body, H2Connection};
use crate::http_origin::origin::{ApprovedOrigin, OriginError, RequestTarget};
use crate::http_origin::settings::ConnectionSettings;
use crate::limits::{at_most, LimitError};

/// The provider setting naming the header that carries the credential.
pub const AUTH_HEADER_SETTING: &str = "auth_header";

/// A guest's HTTP request to the slot's approved origin.
pub struct HttpRequest {
    /// The method.
    pub method: Method,
    /// The origin-form target.
    pub target: RequestTarget,
    /// Guest headers; `Host`, `Content-Length`, `Transfer-Encoding` and the
    /// bound credential header are replaced.
    pub headers: HeaderMap,
    /// The request body.
    pub body: Bytes,
    /// The caller's mark that the request may be delivered twice: its
    /// method is idempotent and its body is held whole. A marked request
    /// that a reused connection lost before any byte of a response (the
    /// origin closed the idle connection as the request reached it) is
    /// delivered again, once, on a dialed connection; an unmarked one
    /// fails as [`Sent::Maybe`](crate::http_origin::Sent::Maybe). HTTP/1.1 only: HTTP/2 already moves a
    /// request the peer did not process.
    pub replayable: bool,
}

impl std::fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("target", &self.target)
            .field("headers", &self.headers.len())
            .field("body", &self.body.len())
            .field("replayable", &self.replayable)
            .finish()
    }
}

/// Header names (lowercase) that frame the message or the connection: the
/// adapter sets them itself, so an [`AUTH_HEADER_SETTING`] may not choose
/// one, nor any `proxy-*` name. The node file refuses the same names.
pub const RESERVED_HEADERS: [&str; 9] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "trailer",
    "keep-alive",
    "expect",
];

/// True for a header that frames the message or the connection (and
/// `proxy-*`): never a credential header.
fn is_reserved(name: &HeaderName) -> bool {
    // HeaderName is lowercase.
    RESERVED_HEADERS.contains(&name.as_str()) || name.as_str().starts_with("proxy-")
}

/// Body size limits of one exchange, in bytes. Each is at most
/// [`BodyLimits::CEILING`] (64 MiB); a call with a larger bound is refused
/// with [`HttpError::Limit`] before any dial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// Largest request body sent.
    pub max_request: usize,
    /// Largest response body read.
    pub max_response: usize,
}

impl BodyLimits {
    /// The largest bound each way: 64 MiB.
    pub const CEILING: Self = Self {
        max_request: 64 << 20,
        max_response: 64 << 20,
    };

    /// Refuses a bound above [`Self::CEILING`].
    ///
    /// # Errors
    ///
    /// [`LimitError`] naming the field.
    pub fn check(&self) -> Result<(), LimitError> {
        at_most(
            "max_request",
            self.max_request,
            Self::CEILING.max_request as u64,
        )?;
        at_most(
            "max_response",
            self.max_response,
            Self::CEILING.max_response as u64,
        )
    }
}

impl Default for BodyLimits {
    /// 1 MiB each way.
    fn default() -> Self {
        Self {
            max_request: 1 << 20,
            max_response: 1 << 20,
        }
    }
}

/// A sent request whose response head has arrived.
pub(crate) struct Opened {
    pub(crate) conn: ResponseCarrier,
    pub(crate) response: http::Response<ResponseBody>,
    /// The response head's charge, held as long as the head is.
    pub(crate) head: HeldMetadata,
    /// Both sides allow keep-alive, judged from the heads (HTTP/1.1 only).
    pub(crate) keep_alive: bool,
}

/// What an exchange holds while its response is read: its HTTP/1.1
/// connection, or its stream on a shared HTTP/2 connection.
pub(crate) enum ResponseCarrier {
    Http1(PooledConnection<HttpConnection>),
    Http2(PooledStream<H2Connection>),
}

impl ResponseCarrier {
    /// After a complete response: an HTTP/1.1 connection is parked when
    /// `keep_alive` and it is ready for the next request (else destroyed);
    /// an HTTP/2 stream ends, its connection staying with its tenant's
    /// other streams or parked with the last.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future destroys an HTTP/1.1 connection (never parked).
    pub(crate) async fn finish(self, keep_alive: bool, deadline: Instant) {
        match self {
            Self::Http1(conn) if keep_alive => park_if_reusable(conn, deadline).await,
            Self::Http1(conn) => drop(conn),
            Self::Http2(stream) => drop(stream),
        }
    }
}

/// A response body: hyper's on HTTP/1.1, a stream's on HTTP/2.
#[derive(Debug)]
pub(crate) enum ResponseBody {
    Http1(Incoming),
    Http2(H2Body),
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = ProtocolError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ProtocolError>>> {
        match self.get_mut() {
            Self::Http1(body) => Pin::new(body).poll_frame(cx).map_err(ProtocolError::from),
            Self::Http2(body) => Pin::new(body).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Self::Http1(body) => body.is_end_stream(),
            Self::Http2(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Http1(body) => body.size_hint(),
            Self::Http2(body) => body.size_hint(),
        }
    }
}

/// Checks the limit, builds the request, reserves a connection and sends.
pub(crate) async fn open(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    request: HttpRequest,
    limits: BodyLimits,
) -> Result<Opened, HttpError> {
    let progress = Progress::default();
    tokio::time::timeout_at(
        running.deadline(),
        send(pools, running, dialer, request, limits, &progress),
    )
    .await
    .map_err(|_| progress.timeout())?
}

/// [`open`] without its deadline, for a caller that bounds a longer
/// exchange with one timer; `progress` says how far it got. The request
/// is delivered by [`delivery::deliver`]: a stale idle connection that
/// hands it back unsent is replaced, a request a connection took is never
/// sent again.
pub(crate) async fn send(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    request: HttpRequest,
    limits: BodyLimits,
    progress: &Progress,
) -> Result<Opened, HttpError> {
    limits.check()?;
    ConnectionSettings::read(|key| running.client().setting(key))?;
    if request.body.len() > limits.max_request {
        return Err(HttpError::RequestTooLarge {
            len: request.body.len(),
            max: limits.max_request,
        });
    }
    let replayable = request.replayable;
    let request = build(running, request)?;
    if http2::enabled(running)? {
        let request = http2::for_http2(running, request)?;
        let http2::Delivered { stream, response } =
            http2::deliver(pools, running, dialer.h2(), request, progress).await?;
        let head = charge_head(running, &response)?;
        return Ok(Opened {
            conn: ResponseCarrier::Http2(stream),
            response: response.map(ResponseBody::Http2),
            head,
            keep_alive: false,
        });
    }
    let request_close = asks_close(request.headers());
    let request = request.map(Full::new);
    let Delivered { conn, response } =
        delivery::deliver(pools, running, dialer, request, replayable, progress).await?;
    let head = charge_head(running, &response)?;
    let keep_alive =
        !request_close && response.version() == Version::HTTP_11 && !asks_close(response.headers());
    Ok(Opened {
        conn: ResponseCarrier::Http1(conn),
        response: response.map(ResponseBody::Http1),
        head,
        keep_alive,
    })
}

/// The size a response head is charged: the status, and each field's
/// name and value with 32 bytes of overhead (RFC 9113's header list
/// measure, used for both protocols).
fn head_size<B>(response: &http::Response<B>) -> usize {
    const FIELD_OVERHEAD: usize = 32;
    response
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + FIELD_OVERHEAD)
        .fold(FIELD_OVERHEAD, usize::saturating_add)
}

/// Charges `response`'s head to `running`'s tenant while it is held.
///
/// # Errors
///
/// [`HttpError::Staging`] when the tenant's metadata share or the node's
/// budget has no room; the caller's connection is then destroyed.
fn charge_head<B>(
    running: &RunningRequest,
    response: &http::Response<B>,
) -> Result<HeldMetadata, HttpError> {
    running
        .hold_metadata(head_size(response))
        .map_err(HttpError::Staging)
}

/// The `Host` header of a client's approved origin, parsed once per client
/// and epoch (kept as the client's adapter state).
struct OriginHost(HeaderValue);

fn host_header(running: &RunningRequest) -> Result<HeaderValue, HttpError> {
    let kept = running.client().adapter_state(|lease| {
        let origin = ApprovedOrigin::parse(lease.target())?;
        HeaderValue::try_from(origin.host_header())
            .map(OriginHost)
            .map_err(|_| OriginError::InvalidHost)
    })?;
    Ok(kept.0.clone())
}

/// Builds the hyper request: origin-form URI, `Host` from the approved
/// origin, the credential binding.
fn build(
    running: &RunningRequest,
    request: HttpRequest,
) -> Result<http::Request<Bytes>, HttpError> {
    let HttpRequest {
        method,
        target,
        mut headers,
        body,
        replayable: _,
    } = request;
    for name in [HOST, CONTENT_LENGTH, TRANSFER_ENCODING] {
        headers.remove(name);
    }
    headers.insert(HOST, host_header(running)?);
    if let Some(name) = running.client().setting(AUTH_HEADER_SETTING) {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| HttpError::Binding {
            reason: "auth_header is not a valid header name",
        })?;
        if is_reserved(&name) {
            return Err(HttpError::Binding {
                reason: "auth_header names a reserved header",
            });
        }
        let credential = running.client().credential_for_adapter();
        if credential.is_empty() {
            return Err(HttpError::Binding {
                reason: "the epoch's credential is empty",
            });
        }
        let mut value = HeaderValue::from_bytes(credential.expose_to_adapter()).map_err(|_| {
            HttpError::Binding {
                reason: "the epoch's credential is not a valid header value",
            }
        })?;
        value.set_sensitive(true);
        headers.remove(&name);
        headers.insert(name, value);
    }
    let mut built = http::Request::new(body);
    *built.method_mut() = method;
    *built.uri_mut() = target.uri();
    *built.headers_mut() = headers;
    Ok(built)
}
