//! Streaming HTTP: the response body arrives chunk by chunk while the
//! stream holds the request's running owner and its connection.
//!
//! Invariants:
//! - Until the body ends or the stream is dropped, the stream holds the
//!   connection and the running capacity; a slow consumer keeps both.
//! - `max_response` bounds the sum of all chunks; past it the stream fails
//!   and its connection is destroyed.
//! - Only a body read to its end, with keep-alive allowed by both heads and
//!   the connection ready again, parks the connection; dropping the stream
//!   earlier destroys it (the origin reads EOF).
//! - Each chunk is charged as the request's `StagedOutput` before it is
//!   handed out, and is the consumer's from then on; the first chunk that
//!   cannot be charged ends the stream (`Staging`) and destroys the
//!   connection, never parked.
//! - Past the request's deadline the connection's driver closes the socket
//!   even if nobody reads, and the stream refuses every further read with
//!   `Timeout`; its connection charges and running owner stay with it until
//!   it is dropped (ownership until destruction), so a host should
//!   drop expired activations' streams.

use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use provider_pools_actors::{HeldMetadata, StagedOutput};
use provider_pools_actors::{ProviderPools, RunningRequest};
use tokio::time::Instant;

use crate::http_origin::dialer::HttpDialer;
use crate::http_origin::error::{HttpError, Sent};
use crate::http_origin::exchange::{
    self, BodyLimits, HttpRequest, Opened, ResponseBody, ResponseCarrier,
};

/// A response whose body is read chunk by chunk.
///
/// Field order is drop order: the body, then the connection (destroyed
/// unless parked), then the running owner.
pub struct ResponseStream {
    status: StatusCode,
    headers: HeaderMap,
    body: Option<ResponseBody>,
    conn: Option<ResponseCarrier>,
    /// The response head's charge.
    _head: HeldMetadata,
    running: Option<RunningRequest>,
    keep_alive: bool,
    received: usize,
    max: usize,
    deadline: Instant,
    /// The deadline passed: every read is refused.
    expired: bool,
}

impl std::fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseStream")
            .field("status", &self.status)
            .field("headers", &self.headers.len())
            .field("received", &self.received)
            .field("finished", &self.running.is_none())
            .finish_non_exhaustive()
    }
}

/// Sends `request` to `running`'s approved origin and returns once the
/// response head has arrived.
///
/// # Cancel safety
///
/// Dropping the future destroys the connection in use (it is never parked);
/// a dial in progress counts as cancelled and the client backs off.
///
/// # Errors
///
/// As [`crate::http_origin::call`], except that body errors come from
/// [`ResponseStream::next_chunk`].
pub async fn call_streaming(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    request: HttpRequest,
    limits: BodyLimits,
) -> Result<ResponseStream, HttpError> {
    let Opened {
        conn,
        response,
        head,
        keep_alive,
    } = exchange::open(pools, running, dialer, request, limits).await?;
    let (parts, body) = response.into_parts();
    Ok(ResponseStream {
        status: parts.status,
        headers: parts.headers,
        body: Some(body),
        conn: Some(conn),
        _head: head,
        running: Some(running.clone()),
        keep_alive,
        received: 0,
        max: limits.max_response,
        deadline: running.deadline(),
        expired: false,
    })
}

impl ResponseStream {
    /// The origin's status, unchanged.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The origin's headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// Body bytes received so far.
    pub fn received(&self) -> usize {
        self.received
    }

    /// The next body chunk, charged against the request; `None` once the body ended (the connection was
    /// then parked or destroyed, and the running owner released) or after
    /// an error.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future while it waits for a chunk loses nothing; while
    /// it checks the finished connection for reuse, the connection is
    /// destroyed instead of parked.
    ///
    /// # Errors
    ///
    /// [`HttpError::ResponseTooLarge`], [`HttpError::Protocol`] and
    /// [`HttpError::Staging`] (a chunk over the tenant's metadata share or
    /// the node's budget) end the stream: they destroy the connection and
    /// release the running owner. [`HttpError::Timeout`]
    /// (the request's deadline passed; its driver has closed the socket) is
    /// answered to this and every later read, while the stream keeps its
    /// connection charges and running owner until it is dropped.
    pub async fn next_chunk(&mut self) -> Option<Result<StagedOutput, HttpError>> {
        self.running.as_ref()?;
        if self.expired || Instant::now() >= self.deadline {
            return Some(Err(self.expire()));
        }
        loop {
            let body = self.body.as_mut()?;
            let frame = match tokio::time::timeout_at(self.deadline, body.frame()).await {
                Err(_) => return Some(Err(self.expire())),
                Ok(None) => {
                    self.finish().await;
                    return None;
                }
                // The driver closes the socket at the deadline: its
                // failure then is the deadline's.
                Ok(Some(Err(_))) if Instant::now() >= self.deadline => {
                    return Some(Err(self.expire()))
                }
                Ok(Some(Err(source))) => {
                    return Some(Err(self.fail(HttpError::Protocol {
                        phase: "reading the response body",
                        sent: Sent::Yes,
                        source,
                    })))
                }
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            self.received = self.received.saturating_add(data.len());
            if self.received > self.max {
                let max = self.max;
                return Some(Err(self.fail(HttpError::ResponseTooLarge { max })));
            }
            if !data.is_empty() {
                // Each chunk is charged to the metadata budget and keeps the
                // request's running owner until the consumer drops it.
                let staged = self.running.as_ref()?.stage_output(data);
                // The first chunk that cannot be charged ends the stream:
                // the connection is destroyed, never parked.
                return Some(staged.map_err(|e| self.fail(HttpError::Staging(e))));
            }
        }
    }

    /// The deadline passed: no more reads, but what the stream owns stays
    /// with it until it is dropped.
    fn expire(&mut self) -> HttpError {
        self.expired = true;
        self.body = None;
        HttpError::Timeout { sent: Sent::Yes }
    }

    /// Ends the stream: drops the body (so the driver stops waiting for
    /// it), destroys the connection, releases the owner.
    fn fail(&mut self, error: HttpError) -> HttpError {
        self.body = None;
        self.conn = None;
        self.running = None;
        error
    }

    /// The body ended: parks the connection when reusable, then releases
    /// the running owner.
    async fn finish(&mut self) {
        self.body = None;
        if let Some(conn) = self.conn.take() {
            conn.finish(self.keep_alive, self.deadline).await;
        }
        self.running = None;
    }
}
