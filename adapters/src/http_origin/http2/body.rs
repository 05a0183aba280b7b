//! [`H2Body`]: an HTTP/2 response body as an [`http_body::Body`], giving
//! flow-control capacity back as it is read, and ending at its request's
//! deadline.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use h2::RecvStream;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::http_origin::error::ProtocolError;

/// One response's body on a stream of a shared connection.
#[derive(Debug)]
pub(crate) struct H2Body {
    recv: RecvStream,
    /// The request's deadline: past it, reads fail and the stream is
    /// reset when dropped.
    deadline: Pin<Box<Sleep>>,
    /// The data is over; trailers may follow.
    data_done: bool,
}

impl H2Body {
    pub(crate) fn new(recv: RecvStream, deadline: Instant) -> Self {
        Self {
            recv,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            data_done: false,
        }
    }
}

/// The stream's deadline passed: a cancel, as the peer sees it.
fn expired() -> ProtocolError {
    ProtocolError::Http2(h2::Error::from(h2::Reason::CANCEL))
}

impl Body for H2Body {
    type Data = Bytes;
    type Error = ProtocolError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ProtocolError>>> {
        let this = self.get_mut();
        if this.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(expired())));
        }
        if !this.data_done {
            match std::task::ready!(this.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    // Read: the peer may send as much again. A failure
                    // here is the stream's end, which the next read
                    // reports.
                    let _ = this.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
                None => this.data_done = true,
            }
        }
        match std::task::ready!(this.recv.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(e.into()))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
