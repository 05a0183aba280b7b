//! Buffered HTTP: one request, the whole response body read under a hard
//! cap and charged as the request's staged output.
//!
//! Invariants:
//! - The response body never grows past `max_response`; past it the
//!   exchange fails and its connection is destroyed, never parked.
//! - Each body chunk is charged to the request's metadata before it is
//!   kept, so the bytes held never exceed the charge; the first chunk that
//!   cannot be charged fails the call (`Staging`) and destroys the
//!   connection. Nothing is allocated for an announced length.
//! - A connection is parked only after the body was read to its end and
//!   both heads allowed keep-alive and the connection is ready again.
//! - Every status passes through unchanged; nothing is retried.

use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Body;
use provider_pools_actors::{HeldMetadata, ProviderPools, RunningRequest, StagedOutput};

use crate::http_origin::dialer::HttpDialer;
use crate::http_origin::error::Progress;
use crate::http_origin::error::{HttpError, Sent};
use crate::http_origin::exchange::{self, BodyLimits, HttpRequest, Opened, ResponseBody};

/// A complete response whose body is charged to the pools' metadata and
/// keeps the request's running capacity until dropped.
pub struct BufferedResponse {
    /// The origin's status, unchanged.
    pub status: StatusCode,
    /// The origin's headers.
    pub headers: HeaderMap,
    /// The body, charged.
    pub body: StagedOutput,
    /// The head's charge (its status and headers), held with them.
    _head: HeldMetadata,
}

impl std::fmt::Debug for BufferedResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferedResponse")
            .field("status", &self.status)
            .field("headers", &self.headers.len())
            .field("body", &self.body)
            .finish()
    }
}

/// Sends `request` to `running`'s approved origin and reads the whole
/// response.
///
/// The exchange — connection, request, response — is bounded by the
/// request's deadline. The request's credential binding (provider setting
/// `auth_header`) is resolved from the running epoch now.
///
/// # Cancel safety
///
/// Dropping the future destroys the connection in use (it is never parked)
/// and loses the response; a dial in progress counts as cancelled and the
/// client backs off.
///
/// # Errors
///
/// [`HttpError::RequestTooLarge`] before any dial; [`HttpError::Connect`]
/// when no connection was reserved; [`HttpError::ResponseTooLarge`],
/// [`HttpError::Protocol`] and [`HttpError::Timeout`] with the connection
/// destroyed; [`HttpError::Origin`] and [`HttpError::Binding`] for a bad
/// configuration; [`HttpError::Staging`] as soon as a body chunk cannot be
/// charged, with the connection destroyed. [`HttpError::was_sent`] says
/// whether the origin may have seen the request: `No` for the errors
/// before a connection took it, `Maybe` for a failed send or a deadline
/// before the answer, `Yes` once the answer's head arrived.
pub async fn call(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    request: HttpRequest,
    limits: BodyLimits,
) -> Result<BufferedResponse, HttpError> {
    // One timer bounds the exchange: connection, request, whole body.
    let progress = Progress::default();
    let (conn, parts, head, keep_alive, bytes) =
        tokio::time::timeout_at(running.deadline(), async {
            let Opened {
                conn,
                response,
                head,
                keep_alive,
            } = exchange::send(pools, running, dialer, request, limits, &progress).await?;
            let (parts, mut body) = response.into_parts();
            let bytes = read_capped(&mut body, limits.max_response, running).await?;
            Ok::<_, HttpError>((conn, parts, head, keep_alive, bytes))
        })
        .await
        .map_err(|_| progress.timeout())??;
    conn.finish(keep_alive, running.deadline()).await;
    Ok(BufferedResponse {
        status: parts.status,
        headers: parts.headers,
        body: bytes,
        _head: head,
    })
}

/// Reads `body` to its end, failing as soon as it would pass `max` bytes
/// or a chunk cannot be charged: each chunk is charged to `running`'s
/// metadata before it is kept, and nothing is allocated for bytes the
/// origin only announced.
async fn read_capped(
    body: &mut ResponseBody,
    max: usize,
    running: &RunningRequest,
) -> Result<StagedOutput, HttpError> {
    let too_large = HttpError::ResponseTooLarge { max };
    let announced = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
    if announced > max {
        return Err(too_large);
    }
    let mut buffer = running.output_buffer();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|source| {
            // The driver closes the socket at the deadline: its failure
            // then is the deadline's.
            if tokio::time::Instant::now() >= running.deadline() {
                HttpError::Timeout { sent: Sent::Yes }
            } else {
                HttpError::Protocol {
                    phase: "reading the response body",
                    sent: Sent::Yes,
                    source,
                }
            }
        })?;
        if let Ok(data) = frame.into_data() {
            if buffer.len().saturating_add(data.len()) > max {
                return Err(too_large);
            }
            buffer.extend(&data).map_err(HttpError::Staging)?;
        }
    }
    Ok(buffer.finish())
}
