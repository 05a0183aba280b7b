//! Delivering one built request on a stream of its tenant's HTTP/2
//! connections: the HTTP/2 counterpart of [`crate::http::delivery`].
//!
//! A request goes to another connection only when no stream was opened
//! for it (the connection had seen GOAWAY, or broke): nothing of it was
//! written. Once a stream opened, a failure ends the call — `Sent::No`
//! when the peer reset the stream with `REFUSED_STREAM` (RFC 9113, 8.7:
//! not processed), `Sent::Maybe` otherwise; the pools never send it
//! again.

use bytes::Bytes;
use provider_pools_actors::{ProviderPools, RunningRequest, StreamLease};
use tokio::time::Instant;

use crate::http::error::{HttpError, Sent};
use crate::http::exchange::Progress;
use crate::http::http2::{H2Body, H2Connection, H2Dialer};

/// A request on a stream whose response head arrived.
pub(crate) struct Delivered {
    pub(crate) lease: StreamLease<H2Connection>,
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
/// Dropping the future resets the stream in use (if opened) and ends the
/// lease; the connection carries on for its other streams.
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
        let mut lease = pools
            .reserve_stream(running, dialer)
            .await
            .map_err(HttpError::Connect)?;
        let stream = lease.stream();
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
                if lease.is_reused() {
                    continue;
                }
                return Err(sending(Sent::No, refused));
            }
        };
        progress.set(Sent::Maybe);
        if !body.is_empty() {
            send.send_data(body, true)
                .map_err(|source| sending(Sent::Maybe, source))?;
        }
        let response = match response.await {
            Ok(response) => response,
            // The peer says it did not process the stream: the caller may
            // send it again (the pools never do).
            Err(source) if unprocessed(&source) => return Err(sending(Sent::No, source)),
            Err(_) if Instant::now() >= running.deadline() => {
                return Err(HttpError::Timeout { sent: Sent::Maybe })
            }
            Err(source) => return Err(sending(Sent::Maybe, source)),
        };
        progress.answered();
        let response = response.map(|recv| H2Body::new(recv, running.deadline()));
        return Ok(Delivered { lease, response });
    }
}

/// True for a stream the peer reset with `REFUSED_STREAM`: it did not
/// process it (RFC 9113, 8.7). A stream failed by a GOAWAY is not taken
/// as unprocessed:
/// h2 gives the GOAWAY's error also to streams the peer did process when
/// the connection then closes, and telling them apart needs the stream's
/// id, which the error does not carry.
fn unprocessed(error: &h2::Error) -> bool {
    error.is_remote() && error.is_reset() && error.reason() == Some(h2::Reason::REFUSED_STREAM)
}

/// A stream that failed, or was refused, while its request was sent.
fn sending(sent: Sent, source: h2::Error) -> HttpError {
    HttpError::Protocol {
        phase: "sending the request",
        sent,
        source: source.into(),
    }
}
