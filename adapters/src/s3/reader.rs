//! [`S3Reader`]: a streamed object body, read chunk by chunk off the
//! pooled connection that carried the request.
//!
//! Invariants:
//! - Until the body ends or the reader is dropped, the reader holds the
//!   connection (inside the body) and the request's running owner.
//! - Each chunk is charged as the request's `StagedOutput` before it is
//!   handed out; the first chunk that cannot be charged ends the reader
//!   ([`S3Error::Staging`]): its connection is destroyed, never parked,
//!   and the chunk is dropped, so the bytes held never exceed the charges
//!   (plus hyper's read buffer).
//! - Field order is drop order: the body (and with it the connection) goes
//!   before the running owner.

use aws_sdk_s3::primitives::SdkBody;
use http_body_util::BodyExt;
use provider_pools_actors::{RunningRequest, StagedOutput};

use crate::s3::error::find_failure;
use crate::s3::S3Error;

/// A streamed object.
pub struct S3Reader {
    body: Option<SdkBody>,
    running: Option<RunningRequest>,
    len: u64,
    received: u64,
}

impl S3Reader {
    pub(crate) fn new(running: &RunningRequest, body: SdkBody, len: u64) -> Self {
        Self {
            body: Some(body),
            running: Some(running.clone()),
            len,
            received: 0,
        }
    }

    /// The object's length as announced by the endpoint.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the object is announced empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Body bytes received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The next chunk, charged against the request; `None` once the body
    /// ended (its connection was then parked or destroyed, and the running
    /// owner released) or after an error.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future while it waits for a chunk loses nothing; while
    /// the finished connection is checked for reuse, the connection is
    /// destroyed instead of parked.
    ///
    /// # Errors
    ///
    /// [`S3Error::TooLarge`] past the object limit, [`S3Error::Timeout`]
    /// at the request's deadline, [`S3Error::Protocol`] for a broken
    /// exchange or a body shorter than announced; each destroys the
    /// connection and releases the running owner. [`S3Error::Staging`]
    /// when a chunk cannot be charged, also ending the reader the same
    /// way (the chunks handed out before keep their own charges).
    pub async fn next_chunk(&mut self) -> Option<Result<StagedOutput, S3Error>> {
        loop {
            let body = self.body.as_mut()?;
            let frame = match body.frame().await {
                None => return self.finish(),
                Some(Err(error)) => return Some(Err(self.fail(&*error))),
                Some(Ok(frame)) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            if data.is_empty() {
                continue;
            }
            self.received = self.received.saturating_add(data.len() as u64);
            let running = self.running.as_ref()?;
            return Some(running.stage_output(data).map_err(|e| {
                // The first chunk that cannot be charged ends the read:
                // the connection is destroyed, never parked.
                self.body = None;
                self.running = None;
                S3Error::Staging(e)
            }));
        }
    }

    /// The body ended (the connection is parked or destroyed by now).
    fn finish(&mut self) -> Option<Result<StagedOutput, S3Error>> {
        self.body = None;
        self.running = None;
        if self.received < self.len {
            return Some(Err(S3Error::Protocol {
                phase: "reading a truncated s3 object",
            }));
        }
        None
    }

    fn fail(&mut self, error: &(dyn std::error::Error + 'static)) -> S3Error {
        self.body = None;
        self.running = None;
        match find_failure(error) {
            Some(crate::s3::error::Failure::ResponseTooLarge { max }) => S3Error::TooLarge {
                len: self.received.max(max.saturating_add(1)),
                limit: *max,
            },
            Some(failure) => S3Error::from_failure(failure, "reading the s3 object"),
            None => S3Error::Protocol {
                phase: "reading the s3 object",
            },
        }
    }
}

impl std::fmt::Debug for S3Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Reader")
            .field("len", &self.len)
            .field("received", &self.received)
            .field("finished", &self.running.is_none())
            .finish()
    }
}
