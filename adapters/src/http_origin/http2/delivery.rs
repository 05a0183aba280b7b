//! Delivering one built request on a stream of its tenant's HTTP/2
//! connections: the HTTP/2 counterpart of [`crate::http_origin::delivery`].
//!
//! A request goes to another connection only when the first cannot have
//! processed it: no stream was opened for it (the connection had seen
//! GOAWAY, or broke: nothing was written), or the peer's GOAWAY named a
//! last stream below it (RFC 9113, 6.8: such streams were not processed
//! and may be retried). The second is connection selection as on
//! HTTP/1.1, not a retry of the operation: the peer never acted on it;
//! it is the one case bytes of a request are written twice. Every
//! connection it leaves opens no more streams, so the turns are bounded
//! by the client's connections and the deadline. Any other failure once
//! a stream opened ends the call: `Sent::No` for a `REFUSED_STREAM` reset
//! (8.7), `Sent::Maybe` otherwise.

use bytes::Bytes;
use provider_pools_actors::{PooledStream, ProviderPools, RunningRequest};
use tokio::time::Instant;

use crate::http_origin::error::Progress;
use crate::http_origin::error::{HttpError, Sent};
use crate::http_origin::http2::{H2Body, H2Connection, H2Dialer};
use crate::http_origin::settings::ConnectionSettings;

/// A request on a stream whose response head arrived.
pub(crate) struct Delivered {
    pub(crate) stream: PooledStream<H2Connection>,
    pub(crate) response: http::Response<H2Body>,
}

/// Sends `request` (absolute-form, see [`super::for_http2`]; head, then
/// body) on a stream of `running`'s client
/// and waits for the response head. A connection that refuses the stream
/// before opening it (GOAWAY, or broken) opens no more, and the request
/// goes to another stream.
///
/// # Cancel safety
///
/// Dropping the future resets the stream in use (if opened) and drops its
/// pooled stream; the connection carries on for its other streams.
pub(crate) async fn deliver(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &H2Dialer,
    request: http::Request<Bytes>,
    progress: &Progress,
) -> Result<Delivered, HttpError> {
    let (parts, body) = request.into_parts();
    // Bounded by the deadline, and by the client's connections: each turn
    // that continues found one going away, which opens no more streams.
    loop {
        let mut pooled = pools
            .reserve_stream(running, dialer)
            .await
            .map_err(HttpError::Connect)?;
        let stream = pooled.stream();
        let ready = std::future::poll_fn(|cx| stream.sender.poll_ready(cx)).await;
        let opened = ready.and_then(|()| {
            let head = http::Request::from_parts(parts.clone(), ());
            stream.sender.send_request(head, body.is_empty())
        });
        let (response, mut send) = match opened {
            Ok(opened) => opened,
            Err(refused) => {
                // No stream was opened: nothing of the request was written.
                stream.going_away();
                if pooled.is_reused() {
                    continue;
                }
                return Err(sending(Sent::No, refused));
            }
        };
        progress.set(Sent::Maybe);
        if !body.is_empty() {
            send.send_data(body.clone(), true)
                .map_err(|source| sending(Sent::Maybe, source))?;
        }
        let response = match response.await {
            Ok(response) => response,
            // h2 ended the connection over a header block continued past
            // `max_head_bytes` (a CONTINUATION flood).
            Err(source) if head_too_large(&source) => {
                pooled.stream().going_away();
                let max = settings_max_head(running);
                return Err(HttpError::HeadTooLarge {
                    max,
                    source: source.into(),
                });
            }
            // h2 reset the stream itself over its response head (a header
            // list over `max_head_bytes`, a malformed field): the origin
            // answered, so it saw the request.
            Err(source) if source.is_reset() && !source.is_remote() => {
                return Err(HttpError::Protocol {
                    phase: "reading the response head",
                    sent: Sent::Yes,
                    source: source.into(),
                })
            }
            // Above the last stream of the peer's GOAWAY: never processed;
            // the connection goes away, the request to another.
            Err(source) if beyond_go_away(&source) => {
                pooled.stream().going_away();
                progress.set(Sent::No);
                continue;
            }
            // Refused, unprocessed: the caller may send it again.
            Err(source) if refused(&source) => return Err(sending(Sent::No, source)),
            Err(_) if Instant::now() >= running.deadline() => {
                return Err(HttpError::Timeout { sent: Sent::Maybe })
            }
            Err(source) => return Err(sending(Sent::Maybe, source)),
        };
        progress.answered();
        let response = response.map(|recv| H2Body::new(recv, running.deadline()));
        return Ok(Delivered {
            stream: pooled,
            response,
        });
    }
}

/// True for a stream failed by the peer's GOAWAY: h2 fails a stream with
/// the GOAWAY's own error only when its id is above the last stream the
/// GOAWAY names (streams at or below it end on their own, or with the
/// connection's I/O error).
fn beyond_go_away(error: &h2::Error) -> bool {
    error.is_go_away() && error.is_remote()
}

/// True for a connection h2 itself ended over the peer's header block:
/// CONTINUATION frames past what `max_header_list_size` needs end it with
/// `ENHANCE_YOUR_CALM`, a block still growing past the list size h2
/// ignores with `COMPRESSION_ERROR`.
fn head_too_large(error: &h2::Error) -> bool {
    error.is_go_away()
        && !error.is_remote()
        && matches!(
            error.reason(),
            Some(h2::Reason::ENHANCE_YOUR_CALM | h2::Reason::COMPRESSION_ERROR)
        )
}

/// The `max_head_bytes` of `running`'s client (checked before the
/// exchange began).
fn settings_max_head(running: &RunningRequest) -> usize {
    ConnectionSettings::read(|key| running.client().setting(key))
        .map_or(ConnectionSettings::DEFAULT.max_head, |s| s.max_head)
}

/// True for a stream the peer reset with `REFUSED_STREAM`: not processed.
fn refused(error: &h2::Error) -> bool {
    error.is_reset() && error.is_remote() && error.reason() == Some(h2::Reason::REFUSED_STREAM)
}

/// A stream that failed, or was refused, while its request was sent.
fn sending(sent: Sent, source: h2::Error) -> HttpError {
    HttpError::Protocol {
        phase: "sending the request",
        sent,
        source: source.into(),
    }
}
