//! Pull consumption: a batch of messages from a durable consumer of the
//! provider's stream, each acknowledged explicitly (`ack`, `nak`, `term`).
//!
//! Invariants:
//! - Every fetched payload is charged as the request's `StagedOutput`
//!   before it is handed out; the batch's bytes are bounded twice: the
//!   server is asked for at most `max_batch_bytes`, and the adapter checks.
//! - The connection the batch came on stays checked out — active, charged,
//!   holding the request — until the last message of the batch is acknowledged
//!   or dropped; then it is parked if every acknowledgement succeeded and the
//!   client is healthy, else closed.
//! - An acknowledgement is confirmed by the server (a request to the message's
//!   reply subject), so an `Ok` from `ack` means the server recorded it.
//! - A message dropped without an answer is never acknowledged: the server
//!   redelivers it after the consumer's ack wait.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer::{pull, Consumer};
use async_nats::jetstream::{AckKind, ErrorCode};
use bytes::Bytes;
use futures_util::StreamExt;
use provider_pools_actors::{ProviderPools, RunningRequest, StagedOutput};
use tokio::time::Instant;

use crate::nats::checkout::{self, CheckedOut};
use crate::nats::dialer::{NatsDialer, SUBSCRIPTION_CAPACITY};
use crate::nats::error::{Missing, NatsError};
use crate::nats::names::ConsumerName;
use crate::nats::settings;
use crate::nats::NatsLimits;

/// Most messages one fetch may ask for.
pub const MAX_FETCH: usize = SUBSCRIPTION_CAPACITY / 2;

/// Where a fetched message stands in its stream and consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// The message's sequence number in the stream.
    pub stream_sequence: u64,
    /// The delivery's sequence number in the consumer.
    pub consumer_sequence: u64,
    /// How many times the message has been delivered, this time included.
    pub delivered: u64,
    /// Messages still pending for the consumer after this one.
    pub pending: u64,
}

/// The connection a fetched batch came on, shared by its messages.
struct Link {
    held: Option<CheckedOut>,
    /// An acknowledgement failed or was dropped midway.
    failed: AtomicBool,
    deadline: Instant,
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            held.finish(!self.failed.load(Ordering::Acquire));
        }
    }
}

/// Marks the batch's connection failed unless disarmed: an acknowledgement that
/// fails or is dropped midway leaves the connection unfit for reuse.
struct Unconfirmed<'a> {
    failed: &'a AtomicBool,
    armed: bool,
}

impl Drop for Unconfirmed<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.failed.store(true, Ordering::Release);
        }
    }
}

/// One fetched message: its subject, its charged payload, where it stands,
/// and the means to acknowledge it.
#[must_use = "a message dropped unacknowledged is delivered again after the consumer's ack wait"]
pub struct FetchedMessage {
    subject: String,
    payload: StagedOutput,
    delivery: Delivery,
    reply: String,
    link: Arc<Link>,
}

impl FetchedMessage {
    /// The full subject it was published to.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// Its payload, charged while this message (or the staged output) lives.
    pub fn payload(&self) -> &StagedOutput {
        &self.payload
    }

    /// Where it stands in the stream and the consumer.
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// Acknowledges the message: it was handled and is never delivered
    /// again.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may or may not have acknowledged the message;
    /// the batch's connection is then closed instead of parked.
    ///
    /// # Errors
    ///
    /// [`NatsError::Timeout`] at the fetch's deadline, [`NatsError::Denied`],
    /// [`NatsError::NotFound`] (`Consumer`) when the consumer is gone, and
    /// [`NatsError::Protocol`]; the message may then be delivered again.
    pub async fn ack(self) -> Result<(), NatsError> {
        self.acknowledge(AckKind::Ack).await
    }

    /// Refuses the message for now: the server delivers it again after
    /// `delay` (at once when `None`).
    ///
    /// # Cancel safety
    ///
    /// As [`FetchedMessage::ack`].
    ///
    /// # Errors
    ///
    /// As [`FetchedMessage::ack`]; the message is then delivered again
    /// after the consumer's ack wait.
    pub async fn nak(self, delay: Option<Duration>) -> Result<(), NatsError> {
        self.acknowledge(AckKind::Nak(delay)).await
    }

    /// Stops delivery of the message without acknowledging it as handled.
    ///
    /// # Cancel safety
    ///
    /// As [`FetchedMessage::ack`].
    ///
    /// # Errors
    ///
    /// As [`FetchedMessage::ack`].
    pub async fn term(self) -> Result<(), NatsError> {
        self.acknowledge(AckKind::Term).await
    }

    async fn acknowledge(self, kind: AckKind) -> Result<(), NatsError> {
        let Self { reply, link, .. } = self;
        let Some(held) = link.held.as_ref() else {
            return Err(NatsError::protocol(
                "acknowledging a message",
                "no connection",
            ));
        };
        let mut unconfirmed = Unconfirmed {
            failed: &link.failed,
            armed: true,
        };
        let mut health = held.conn().health();
        let client = held.conn().client()?.clone();
        let outcome = checkout::bounded(link.deadline, &mut health, async {
            client
                .request(reply, Bytes::from(kind))
                .await
                .map(drop)
                .map_err(ack_error)
        })
        .await;
        drop(client);
        unconfirmed.armed = outcome.is_err();
        drop(unconfirmed);
        outcome
    }
}

impl fmt::Debug for FetchedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchedMessage")
            .field("subject", &self.subject)
            .field("payload", &self.payload.bytes().len())
            .field("delivery", &self.delivery)
            .finish_non_exhaustive()
    }
}

/// Fetches at most `max_messages` from the durable pull consumer
/// `consumer` of the epoch's `stream`, waiting at most `expires` for the
/// first one.
///
/// # Cancel safety
///
/// Dropping the future closes the connection in use; messages the server
/// already delivered are redelivered after the consumer's ack wait.
///
/// # Errors
///
/// [`NatsError::Argument`] for a `max_messages` outside `1..=MAX_FETCH`
/// or an `expires` of zero or past the request's deadline, and
/// [`NatsError::Config`] without a valid `stream`, both before any dial;
/// [`NatsError::Connect`] or [`NatsError::Denied`] when no connection was
/// made; [`NatsError::NotFound`] (`Stream` or `Consumer`);
/// [`NatsError::TooLarge`] when the batch passes `max_batch_bytes`;
/// [`NatsError::Staging`] when a payload cannot be charged (the batch is
/// then redelivered after the ack wait); [`NatsError::Timeout`] and
/// [`NatsError::Protocol`] with the connection closed.
pub async fn fetch(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &NatsDialer,
    consumer: &ConsumerName,
    max_messages: usize,
    expires: Duration,
    limits: NatsLimits,
) -> Result<Vec<FetchedMessage>, NatsError> {
    limits.check()?;
    if !(1..=MAX_FETCH).contains(&max_messages) {
        return Err(NatsError::Argument("max_messages must be 1 to MAX_FETCH"));
    }
    let deadline = running.deadline();
    if expires.is_zero() || Instant::now() + expires >= deadline {
        return Err(NatsError::Argument(
            "expires must be positive and end before the request's deadline",
        ));
    }
    let stream = settings::stream(running)?;
    let mut held = CheckedOut::reserve(pools, running, dialer).await?;
    let fetched = held
        .attempt(deadline, async move |conn| {
            let consumer: Consumer<pull::Config> = conn
                .jetstream()?
                .get_consumer_from_stream(consumer.as_str(), stream)
                .await
                .map_err(consumer_error)?;
            let mut batch = consumer
                .fetch()
                .max_messages(max_messages)
                .max_bytes(limits.max_batch_bytes)
                .expires(expires)
                .messages()
                .await
                .map_err(|e| NatsError::protocol("requesting a batch", e))?;
            let mut messages = Vec::with_capacity(max_messages);
            let mut bytes = 0usize;
            while let Some(message) = batch.next().await {
                let message = message.map_err(|e| NatsError::protocol("reading a batch", e))?;
                bytes = bytes.saturating_add(message.message.payload.len());
                NatsError::check_size("fetched batch", bytes, limits.max_batch_bytes)?;
                messages.push(message);
            }
            Ok(messages)
        })
        .await;
    let fetched = match fetched {
        Ok(fetched) => fetched,
        Err(e) => {
            held.finish(e.keeps_connection());
            return Err(e);
        }
    };
    let link = Arc::new(Link {
        held: Some(held),
        failed: AtomicBool::new(false),
        deadline,
    });
    let mut messages = Vec::with_capacity(fetched.len());
    for message in fetched {
        let info = message
            .info()
            .map_err(|e| NatsError::protocol("reading a delivery", e))?;
        let delivery = Delivery {
            stream_sequence: info.stream_sequence,
            consumer_sequence: info.consumer_sequence,
            delivered: u64::try_from(info.delivered).unwrap_or(0),
            pending: info.pending,
        };
        let message = message.message;
        let reply = message
            .reply
            .map(|reply| reply.to_string())
            .ok_or_else(|| NatsError::protocol("reading a delivery", "no reply subject"))?;
        let payload = running
            .stage_output(message.payload)
            .map_err(NatsError::Staging)?;
        messages.push(FetchedMessage {
            subject: message.subject.to_string(),
            payload,
            delivery,
            reply,
            link: Arc::clone(&link),
        });
    }
    Ok(messages)
}

fn consumer_error(e: async_nats::jetstream::stream::ConsumerError) -> NatsError {
    use async_nats::jetstream::stream::ConsumerErrorKind;
    match e.kind() {
        ConsumerErrorKind::JetStream(js) if js.error_code() == ErrorCode::CONSUMER_NOT_FOUND => {
            NatsError::NotFound(Missing::Consumer)
        }
        ConsumerErrorKind::JetStream(js) if js.error_code() == ErrorCode::STREAM_NOT_FOUND => {
            NatsError::NotFound(Missing::Stream)
        }
        ConsumerErrorKind::TimedOut => NatsError::Timeout,
        _ => NatsError::protocol("looking up the consumer", e),
    }
}

fn ack_error(e: async_nats::RequestError) -> NatsError {
    use async_nats::RequestErrorKind;
    match e.kind() {
        RequestErrorKind::TimedOut => NatsError::Timeout,
        RequestErrorKind::NoResponders => NatsError::NotFound(Missing::Consumer),
        _ => NatsError::protocol("acknowledging a message", e),
    }
}
