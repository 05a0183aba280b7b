//! Webhook ingress: what an HTTP endpoint of the host answers for an
//! inbound event, and a response body that keeps the event's ownership
//! until the acknowledgement is written.
//!
//! The pools start no listener: the host's own HTTP server receives the
//! webhook, takes an [`IngressRequest`] through
//! `ProviderPools::ingress`, and answers with [`refusal_status`] when the
//! pools refuse it, or with an [`AckBody`] once the event was handled.
//!
//! Invariants:
//! - A refused event is answered with a status that tells the sender to
//!   deliver it again later (429 or 503) unless it can never succeed (403,
//!   404); nothing was acknowledged.
//! - An acknowledged event's running capacity is held until its response
//!   body has been written (or dropped), never released before.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::StatusCode;
use hyper::body::{Body, Frame, SizeHint};
use provider_pools_actors::{AdmitError, IngressRequest};

/// The status a webhook endpoint answers when the pools refuse an inbound
/// event: `429 Too Many Requests` for a full queue, a full budget or a busy
/// mailbox; `503 Service Unavailable` when no slot freed in time, the
/// provider is unavailable or the pools are closed; `403 Forbidden` when the
/// dispatch authority denied; `404 Not Found` for an unknown slot.
pub fn refusal_status(error: &AdmitError) -> StatusCode {
    match error {
        AdmitError::Capacity { .. } | AdmitError::Busy => StatusCode::TOO_MANY_REQUESTS,
        AdmitError::Timeout | AdmitError::Unavailable { .. } | AdmitError::Closed => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        AdmitError::Revoked(_) => StatusCode::FORBIDDEN,
        AdmitError::Slot(_) => StatusCode::NOT_FOUND,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A complete response body that owns the acknowledged event's
/// [`IngressRequest`] until the body has been read to its end (written by
/// the server) or dropped.
#[derive(Debug)]
pub struct AckBody {
    data: Option<Bytes>,
    ingress: Option<IngressRequest>,
}

impl AckBody {
    /// A body of `data` acknowledging the event `ingress` owns.
    pub fn new(ingress: IngressRequest, data: Bytes) -> Self {
        Self {
            data: Some(data),
            ingress: Some(ingress),
        }
    }
}

impl Body for AckBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.data.take() {
            Some(data) if !data.is_empty() => Poll::Ready(Some(Ok(Frame::data(data)))),
            _ => {
                // The whole acknowledgement has been handed to the server.
                self.ingress = None;
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.data.as_ref().is_none_or(Bytes::is_empty)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}
