//! Delivering one built request on the connections of its client: the
//! checkout and the hand-back that every adapter on [`HttpConnection`]s
//! shares (buffered and streaming HTTP, Vault, S3).
//!
//! Connection selection, not a retry: a connection that closed before it
//! took the request (hyper hands the request back, so no byte of it was
//! written) is destroyed and the request goes to another idle connection
//! or a fresh dial. Nothing of the request left the process, so the rule
//! that the pools never retry an application operation holds.
//!
//! One delivery is the caller's: a request the caller marked replayable
//! (an idempotent method with a body it holds whole) that a *reused*
//! connection took and then lost — closed or reset before any byte of a
//! response arrived, the keep-alive race of an origin closing an idle
//! connection as the request reaches it — is delivered again, once, on a
//! dialed connection (decision record 0080). An unmarked request fails as
//! [`Sent::Maybe`].
//!
//! Invariants:
//! - A request is written at most once, unless marked replayable: only a
//!   request a connection handed back untouched goes to another
//!   connection; one a connection took ([`Sent::Maybe`]) is never sent
//!   again, except a replayable one, once, as above.
//! - A response head hyper refuses (over `max_head_bytes`, a malformed or
//!   overflowing field) is a failure of the answer, [`Sent::Yes`]: bytes of
//!   it arrived, so the origin saw the request.
//! - Checkout never returns an idle connection already known to be
//!   closed; each one skipped is destroyed.
//! - A fresh connection that hands the request back ends the delivery
//!   with [`Sent::No`] ([`Sent::Maybe`] for a replay): the loop is bounded
//!   by the client's idle connections (each turn that continues destroyed
//!   one), by the one replay and by the caller's deadline.
//! - A connection that fails with the request once the request's deadline
//!   passed failed because of it (the driver closes a connection in use at
//!   its request's deadline): [`Undeliverable::Expired`], a timeout.
//! - Generic over the dialer only so that tests can hold a connection's
//!   driver; every adapter passes the one [`HttpDialer`](crate::http_origin::HttpDialer).

use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http::header::CONNECTION;
use http::HeaderMap;
use http_body_util::Full;
use hyper::body::Incoming;
use provider_pools_actors::{
    ConnectError, Dialer, PooledConnection, ProviderPools, RunningRequest,
};

use tokio::time::Instant;

use crate::http_origin::dialer::HttpConnection;
use crate::http_origin::error::{HttpError, Progress, Sent};

/// A built request as hyper sends it.
pub(crate) type Built = http::Request<Full<Bytes>>;

/// A request a connection took and answered: the connection (now carrying
/// the request's deadline) and the response head.
pub(crate) struct Delivered {
    pub(crate) conn: PooledConnection<HttpConnection>,
    pub(crate) response: http::Response<Incoming>,
}

/// Why a request got no response head.
#[derive(Debug)]
pub(crate) enum Undeliverable {
    /// No connection was reserved; nothing was sent.
    Connect(ConnectError),
    /// A connection failed with the request; `sent` says whether any of
    /// it may have been written. The connection was destroyed.
    Send {
        /// [`Sent::No`] for a fresh connection that handed the request
        /// back, [`Sent::Maybe`] once a connection took it.
        sent: Sent,
        /// hyper's error.
        source: hyper::Error,
    },
    /// The connection failed with the request after the request's
    /// deadline passed: the driver closes a connection in use at that
    /// deadline, so this is the deadline's failure, not the origin's. Any
    /// of the request may have been written.
    Expired,
    /// The origin's response head was longer than `max` bytes; the
    /// connection was destroyed.
    HeadTooLarge {
        /// The connection's `max_head_bytes`.
        max: usize,
        /// hyper's error.
        source: hyper::Error,
    },
    /// hyper refused the origin's response head (a malformed or
    /// overflowing field); the connection was destroyed.
    Head(hyper::Error),
}

impl From<Undeliverable> for HttpError {
    fn from(failure: Undeliverable) -> Self {
        match failure {
            Undeliverable::Connect(e) => Self::Connect(e),
            Undeliverable::Send { sent, source } => Self::Protocol {
                phase: "sending the request",
                sent,
                source: source.into(),
            },
            Undeliverable::Expired => Self::Timeout { sent: Sent::Maybe },
            Undeliverable::HeadTooLarge { max, source } => Self::HeadTooLarge {
                max,
                source: source.into(),
            },
            Undeliverable::Head(source) => Self::Protocol {
                phase: "reading the response head",
                sent: Sent::Yes,
                source: source.into(),
            },
        }
    }
}

/// Sends `request` on a connection of `running`'s client and waits for
/// the response head; a connection that hands the request back unsent is
/// destroyed and the request taken to another one, and a `replayable`
/// request a reused connection lost before any byte of a response is
/// delivered again, once, on a dialed connection (see the module doc).
/// `progress` says how far it got, for the caller's deadline.
///
/// # Cancel safety
///
/// Dropping the future destroys the connection in use (never parked); a
/// dial in progress is the client's, as with any checkout.
pub(crate) async fn deliver<D>(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &D,
    mut request: Built,
    replayable: bool,
    progress: &Progress,
) -> Result<Delivered, Undeliverable>
where
    D: Dialer<Conn = HttpConnection> + Clone + 'static,
{
    // The copy a replay sends; taken once.
    let mut replay = replayable.then(|| copy(&request));
    // Set once the request went to a dialed connection for its replay:
    // the first delivery may have reached the origin.
    let mut replayed = false;
    // Bounded by the deadline, and by the client's idle connections: each
    // turn that continues destroyed one of them, or took the one replay.
    loop {
        let mut conn = checkout(pools, running, dialer, replayed)
            .await
            .map_err(Undeliverable::Connect)?;
        conn.get().expire_at(Some(running.deadline()));
        conn.get_mut().life_mut().taken();
        let read_before = conn.get().life().bytes_read();
        match hand_over(&mut conn, request, progress).await {
            Ok(response) => {
                progress.answered();
                conn.get_mut().life_mut().answered(response.headers());
                return Ok(Delivered { conn, response });
            }
            Err(Handed::Back(_, source)) if replayed => {
                // The replay's connection closed first; the first delivery
                // may still have reached the origin.
                progress.set(Sent::Maybe);
                return Err(Undeliverable::Send {
                    sent: Sent::Maybe,
                    source,
                });
            }
            Err(Handed::Back(unsent, source)) => {
                if !conn.is_reused() {
                    return Err(Undeliverable::Send {
                        sent: Sent::No,
                        source,
                    });
                }
                // A stale idle connection: destroyed, the request kept.
                drop((conn, source));
                request = *unsent;
            }
            Err(Handed::Taken(_)) if Instant::now() >= running.deadline() => {
                return Err(Undeliverable::Expired)
            }
            Err(Handed::Taken(source)) if source.is_parse() => {
                // hyper refuses a head past `max_head_bytes` as a parse
                // error: more than that many bytes arrived for it.
                let max = conn.get().life().settings().max_head;
                let read = conn.get().life().bytes_read() - read_before;
                return Err(if read > max as u64 {
                    Undeliverable::HeadTooLarge { max, source }
                } else {
                    Undeliverable::Head(source)
                });
            }
            Err(Handed::Taken(source)) => {
                let lost_in_race = conn.is_reused()
                    && conn.get().life().bytes_read() == read_before
                    && lost_unanswered(&source);
                match replay.take() {
                    // The keep-alive race: the origin closed the idle
                    // connection as the request reached it. Delivered
                    // again, once, on a connection dialed for it.
                    Some(again) if lost_in_race => {
                        drop((conn, source));
                        request = again;
                        replayed = true;
                    }
                    _ => {
                        return Err(Undeliverable::Send {
                            sent: Sent::Maybe,
                            source,
                        })
                    }
                }
            }
        }
    }
}

/// A copy of `request` for its one replay: the same head and body.
fn copy(request: &Built) -> Built {
    let mut copy = http::Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    copy
}

/// True for a connection that ended under a request without answering:
/// closed (hyper's incomplete message) or reset by the origin.
fn lost_unanswered(error: &hyper::Error) -> bool {
    if error.is_incomplete_message() {
        return true;
    }
    let io = std::error::Error::source(error).and_then(|e| e.downcast_ref::<std::io::Error>());
    io.is_some_and(|e| {
        matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe
        )
    })
}

/// Why a connection gave no response head.
enum Handed {
    /// It closed before taking the request, which comes back untouched.
    Back(Box<Built>, hyper::Error),
    /// It took the request, so some of it may have been written.
    Taken(hyper::Error),
}

/// Hands `request` to `conn` and waits for the response head.
async fn hand_over(
    conn: &mut PooledConnection<HttpConnection>,
    request: Built,
    progress: &Progress,
) -> Result<http::Response<Incoming>, Handed> {
    let sender = conn.get_mut().sender();
    if let Err(source) = sender.ready().await {
        // Not ready means closed: it never saw the request.
        return Err(Handed::Back(Box::new(request), source));
    }
    progress.set(Sent::Maybe);
    match sender.try_send_request(request).await {
        Ok(response) => Ok(response),
        Err(mut failed) => match failed.take_message() {
            // hyper gives the request back only when its dispatcher never
            // started writing it.
            Some(request) => {
                progress.set(Sent::No);
                Err(Handed::Back(Box::new(request), failed.into_error()))
            }
            None => Err(Handed::Taken(failed.into_error())),
        },
    }
}

/// A connection that can take a request: idle connections already seen
/// closed are destroyed by the checkout itself, and one whose sender says
/// it is closed, or that is about to retire (its idle deadline near, its
/// age reached), is destroyed here and the next one taken, before
/// anything is sent. With `dialed_only` every idle connection is
/// destroyed so: a replay goes to a dialed connection (one that idled
/// cannot have met the origin's idle close).
async fn checkout<D>(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &D,
    dialed_only: bool,
) -> Result<PooledConnection<HttpConnection>, ConnectError>
where
    D: Dialer<Conn = HttpConnection> + Clone + 'static,
{
    // Bounded by the deadline and the client's idle connections: each turn
    // that continues destroyed one; a dialed connection ends the loop.
    loop {
        let conn = pools.reserve_connection(running, dialer).await?;
        let unusable =
            || dialed_only || conn.get().is_closed() || conn.get().life().is_stale(Instant::now());
        if !conn.is_reused() || !unusable() {
            return Ok(conn);
        }
    }
}

/// Longest wait for a connection to accept its next request after a
/// complete response; past it the connection is not parked.
pub(crate) const REUSE_WAIT: Duration = Duration::from_secs(1);

/// True when a `Connection` header asks to close.
pub(crate) fn asks_close(headers: &HeaderMap) -> bool {
    headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("close"))
}

/// After a complete response on a keep-alive connection: parks it when the
/// connection is ready for the next request, else destroys it.
///
/// A connection that is ready at once (the common case) is parked without
/// arming a timer; otherwise the wait is bounded by [`REUSE_WAIT`] and the
/// request's deadline.
///
/// Dropping the future destroys the connection (it is never parked).
pub(crate) async fn park_if_reusable(
    mut conn: PooledConnection<HttpConnection>,
    deadline: Instant,
) {
    let sender = conn.get_mut().sender();
    let now = std::future::poll_fn(|cx| Poll::Ready(sender.poll_ready(cx))).await;
    let ready = match now {
        Poll::Ready(ready) => ready.is_ok(),
        Poll::Pending => {
            let wait = reuse_wait_until(deadline);
            matches!(
                tokio::time::timeout_at(wait, sender.ready()).await,
                Ok(Ok(()))
            )
        }
    };
    if ready && sender.is_ready() {
        park_ready(conn);
    }
}

/// Parks `conn`, verified ready for its next request, until its idle
/// deadline (its driver closes it then: see `lifetime.rs`), or destroys
/// it when it has no life left to idle.
pub(crate) fn park_ready(mut conn: PooledConnection<HttpConnection>) {
    let Some(until) = conn.get_mut().life_mut().park(Instant::now()) else {
        return;
    };
    conn.get().expire_at(Some(until));
    let watch = conn.get().watch().clone();
    conn.park_watched(&watch);
}

/// Until when a connection is given, after a complete response, to accept
/// its next request: [`REUSE_WAIT`] from now, within `deadline`.
pub(crate) fn reuse_wait_until(deadline: Instant) -> Instant {
    deadline.min(Instant::now() + REUSE_WAIT)
}

#[cfg(test)]
mod tests;
