//! [`PooledBody`]: a response body the SDK reads straight off a pooled
//! connection, holding that connection until the body ends or is dropped.
//!
//! Invariants:
//! - The body holds its `PooledConnection` until the last frame; dropping
//!   the body earlier destroys the connection (never parked).
//! - At the end of the body the connection is parked only when both heads
//!   allowed keep-alive and the connection is ready for another request
//!   within the reuse wait; otherwise it is destroyed.
//! - The sum of data frames never passes the body's limit, and no frame is
//!   awaited past the request's deadline; either failure destroys the
//!   connection.
//! - A body the SDK buffers whole has each data frame charged to the
//!   request before the SDK gets it; the first frame that cannot be
//!   charged fails the body and destroys the connection.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use provider_pools_actors::{PooledConnection, RunningRequest, StagedOutput};
use tokio::time::{Instant, Sleep};

use crate::http_origin::delivery::{park_ready, reuse_wait_until};
use crate::http_origin::HttpConnection;
use crate::s3::error::Failure;

/// Chunks of answers the SDK buffers whole, each charged to the request
/// before the SDK got it; shared by an operation's connector and its
/// bodies, returned when the operation drops its connector.
pub(crate) type Charged = Arc<Mutex<Vec<StagedOutput>>>;

/// A response body on a pooled connection. The `Mutex` only makes the
/// body `Sync`, as the SDK's body type requires; it is never locked
/// (every access goes through `get_mut`).
pub(crate) struct PooledBody(Mutex<Reading>);

struct Reading {
    /// `None` once the body ended or failed.
    body: Option<Incoming>,
    /// `None` once parked or destroyed.
    conn: Option<PooledConnection<HttpConnection>>,
    keep_alive: bool,
    received: u64,
    max: u64,
    deadline: Pin<Box<Sleep>>,
    /// Set while the finished connection is checked for reuse.
    parking: Option<Pin<Box<Sleep>>>,
    /// Where each data frame is charged before it is handed on, when the
    /// SDK buffers this body.
    charge: Option<(RunningRequest, Charged)>,
}

impl PooledBody {
    pub(crate) fn new(
        body: Incoming,
        conn: PooledConnection<HttpConnection>,
        keep_alive: bool,
        max: u64,
        deadline: Instant,
        charge: Option<(RunningRequest, Charged)>,
    ) -> Self {
        Self(Mutex::new(Reading {
            body: Some(body),
            conn: Some(conn),
            keep_alive,
            received: 0,
            max,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            charge,
            parking: None,
        }))
    }

    fn reading(self: Pin<&mut Self>) -> &mut Reading {
        self.get_mut()
            .0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Reading {
    /// Ends the body: the connection is destroyed (never parked).
    fn fail(&mut self, failure: Failure) -> Poll<Option<Result<Frame<Bytes>, Failure>>> {
        self.body = None;
        self.parking = None;
        self.conn = None;
        Poll::Ready(Some(Err(failure)))
    }

    /// The body ended: waits, within the reuse wait, for the connection to
    /// take another request, then parks it; destroys it otherwise.
    fn poll_park(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let reusable = match (self.conn.as_mut(), self.parking.as_mut()) {
            (Some(conn), Some(wait)) => {
                let sender = conn.get_mut().sender();
                match sender.poll_ready(cx) {
                    Poll::Ready(Ok(())) => sender.is_ready(),
                    Poll::Ready(Err(_)) => false,
                    // Not ready within the wait: destroyed.
                    Poll::Pending => {
                        ready!(wait.as_mut().poll(cx));
                        false
                    }
                }
            }
            _ => false,
        };
        self.parking = None;
        match self.conn.take() {
            Some(conn) if reusable => park_ready(conn),
            other => drop(other),
        }
        Poll::Ready(())
    }
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = Failure;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Failure>>> {
        let reading = self.reading();
        if reading.parking.is_some() {
            ready!(reading.poll_park(cx));
            return Poll::Ready(None);
        }
        let Some(body) = reading.body.as_mut() else {
            return Poll::Ready(None);
        };
        match Pin::new(body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    reading.received = reading.received.saturating_add(data.len() as u64);
                    if reading.received > reading.max {
                        let max = reading.max;
                        return reading.fail(Failure::ResponseTooLarge { max });
                    }
                    if let Some((running, charged)) = &reading.charge {
                        // Charged before the SDK keeps it; the frame's
                        // bytes are shared, not copied.
                        match running.stage_output(data.clone()) {
                            Ok(staged) => charged
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push(staged),
                            Err(e) => return reading.fail(Failure::Staging(e)),
                        }
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            // The driver closes the connection at the request's deadline.
            Poll::Ready(Some(Err(_))) if reading.deadline.is_elapsed() => {
                reading.fail(Failure::Timeout)
            }
            Poll::Ready(Some(Err(source))) => reading.fail(Failure::Protocol {
                phase: "reading the response body",
                source,
            }),
            Poll::Ready(None) => {
                reading.body = None;
                if reading.keep_alive && reading.conn.is_some() {
                    let wait = reuse_wait_until(reading.deadline.deadline());
                    reading.parking = Some(Box::pin(tokio::time::sleep_until(wait)));
                    ready!(reading.poll_park(cx));
                } else {
                    reading.conn = None;
                }
                Poll::Ready(None)
            }
            Poll::Pending => {
                ready!(reading.deadline.as_mut().poll(cx));
                reading.fail(Failure::Timeout)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        // Never claims the end early: the last poll is what parks the
        // connection.
        false
    }

    fn size_hint(&self) -> SizeHint {
        let Ok(reading) = self.0.try_lock() else {
            return SizeHint::default();
        };
        match &reading.body {
            Some(body) => body.size_hint(),
            None => SizeHint::with_exact(0),
        }
    }
}

impl std::fmt::Debug for PooledBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledBody").finish_non_exhaustive()
    }
}
