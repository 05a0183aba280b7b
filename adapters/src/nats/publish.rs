//! JetStream publish: one message under the provider's subject prefix,
//! stored by a stream before the call returns.
//!
//! Invariants:
//! - An oversized payload is refused before a connection is reserved.
//! - The call returns only with the stream's acknowledgement (stream and
//!   sequence); nothing is retried, so a failure may leave the message
//!   stored or not, exactly as the server decided.

use bytes::Bytes;
use provider_pools_actors::{ProviderPools, RunningRequest};

use crate::nats::checkout::CheckedOut;
use crate::nats::dialer::NatsDialer;
use crate::nats::error::{Missing, NatsError};
use crate::nats::names::Subject;
use crate::nats::settings;
use crate::nats::NatsLimits;

/// The stream's acknowledgement of a published message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishAck {
    /// The stream that stored the message.
    pub stream: String,
    /// Its sequence number in that stream.
    pub sequence: u64,
    /// True when the stream recognised it as a duplicate.
    pub duplicate: bool,
}

/// Publishes `payload` to `subject` (under the epoch's `subject_prefix`)
/// and waits for the stream's acknowledgement.
///
/// # Cancel safety
///
/// Dropping the future closes the connection in use (never parked); the
/// message may or may not have been stored.
///
/// # Errors
///
/// [`NatsError::TooLarge`] before any dial; [`NatsError::Config`] without
/// a valid `subject_prefix`; [`NatsError::Connect`] or
/// [`NatsError::Denied`] when no connection was made;
/// [`NatsError::NotFound`] (`Stream`) when no stream takes the subject;
/// [`NatsError::Denied`] for a subject the credential may not publish to;
/// [`NatsError::Timeout`] and [`NatsError::Protocol`] with the connection
/// closed.
pub async fn publish(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &NatsDialer,
    subject: &Subject,
    payload: Bytes,
    limits: NatsLimits,
) -> Result<PublishAck, NatsError> {
    limits.check()?;
    NatsError::check_size("payload", payload.len(), limits.max_payload)?;
    let subject = subject.under(settings::subject_prefix(running)?)?;
    let held = CheckedOut::reserve(pools, running, dialer).await?;
    held.run(running.deadline(), async move |conn| {
        let max = conn.client()?.max_payload();
        NatsError::check_size("payload", payload.len(), max)?;
        let pending = conn
            .jetstream()?
            .publish(subject, payload)
            .await
            .map_err(publish_error)?;
        let ack = pending.await.map_err(publish_error)?;
        Ok(PublishAck {
            stream: ack.stream,
            sequence: ack.sequence,
            duplicate: ack.duplicate,
        })
    })
    .await
}

pub(crate) fn publish_error(e: async_nats::jetstream::context::PublishError) -> NatsError {
    use async_nats::jetstream::context::PublishErrorKind;
    match e.kind() {
        PublishErrorKind::StreamNotFound => NatsError::NotFound(Missing::Stream),
        PublishErrorKind::TimedOut => NatsError::Timeout,
        _ => NatsError::protocol("publishing", e),
    }
}
