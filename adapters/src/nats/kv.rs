//! Key-value get and put on the provider's bucket.
//!
//! Invariants:
//! - An oversized value is refused before a connection is reserved.
//! - A value read is charged as the request's `StagedOutput`; one over the
//!   limit is refused (the connection stays sound and is parked).
//! - A missing, deleted or purged key is [`Missing::Key`]; the connection
//!   is parked.

use bytes::Bytes;
use provider_pools_actors::{ProviderPools, RunningRequest, StagedOutput};

use crate::nats::checkout::CheckedOut;
use crate::nats::dialer::NatsDialer;
use crate::nats::error::{Missing, NatsError};
use crate::nats::names::KvKey;
use crate::nats::settings;
use crate::nats::NatsLimits;

/// A value read from the bucket.
#[derive(Debug)]
pub struct KvEntry {
    /// The value, charged while this lives.
    pub value: StagedOutput,
    /// The revision that wrote it.
    pub revision: u64,
}

/// Reads `key` from the epoch's `kv_bucket`.
///
/// # Cancel safety
///
/// Dropping the future closes the connection in use; nothing was changed.
///
/// # Errors
///
/// [`NatsError::Config`] without a valid `kv_bucket`, before any dial;
/// [`NatsError::Connect`] or [`NatsError::Denied`] when no connection was
/// made; [`NatsError::NotFound`] (`Bucket` or `Key`);
/// [`NatsError::TooLarge`] for a value over `max_value`;
/// [`NatsError::Staging`] when it cannot be charged; [`NatsError::Denied`],
/// [`NatsError::Timeout`] and [`NatsError::Protocol`] with the connection
/// closed.
pub async fn kv_get(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &NatsDialer,
    key: &KvKey,
    limits: NatsLimits,
) -> Result<KvEntry, NatsError> {
    limits.check()?;
    let bucket = settings::kv_bucket(running)?;
    let held = CheckedOut::reserve(pools, running, dialer).await?;
    held.run(running.deadline(), async move |conn| {
        use async_nats::jetstream::kv::Operation;
        let store = conn.kv(bucket).await?;
        let entry = store
            .entry(key.as_str())
            .await
            .map_err(|e| NatsError::protocol("reading the key", e))?;
        let entry = match entry {
            Some(entry) if entry.operation == Operation::Put => entry,
            _ => return Err(NatsError::NotFound(Missing::Key)),
        };
        NatsError::check_size("value", entry.value.len(), limits.max_value)?;
        let value = running
            .stage_output(entry.value)
            .map_err(NatsError::Staging)?;
        Ok(KvEntry {
            value,
            revision: entry.revision,
        })
    })
    .await
}

/// Writes `value` under `key` in the epoch's `kv_bucket`; returns the new
/// revision.
///
/// # Cancel safety
///
/// Dropping the future closes the connection in use; the value may or
/// may not have been written.
///
/// # Errors
///
/// [`NatsError::TooLarge`] and [`NatsError::Config`] before any dial;
/// [`NatsError::Connect`] or [`NatsError::Denied`] when no connection was
/// made; [`NatsError::NotFound`] (`Bucket`); [`NatsError::Denied`],
/// [`NatsError::Timeout`] and [`NatsError::Protocol`] with the connection
/// closed.
pub async fn kv_put(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &NatsDialer,
    key: &KvKey,
    value: Bytes,
    limits: NatsLimits,
) -> Result<u64, NatsError> {
    limits.check()?;
    NatsError::check_size("value", value.len(), limits.max_value)?;
    let bucket = settings::kv_bucket(running)?;
    let held = CheckedOut::reserve(pools, running, dialer).await?;
    held.run(running.deadline(), async move |conn| {
        use async_nats::jetstream::kv::PutErrorKind;
        let store = conn.kv(bucket).await?;
        store
            .put(key.as_str(), value)
            .await
            .map_err(|e| match e.kind() {
                PutErrorKind::InvalidKey => {
                    NatsError::Name(crate::nats::NatsNameError::InvalidByte)
                }
                _ => put_error(e),
            })
    })
    .await
}

/// A failed put: its source is the publish or its ack.
fn put_error(e: async_nats::jetstream::kv::PutError) -> NatsError {
    use async_nats::jetstream::context::{PublishError, PublishErrorKind};
    let kind = std::error::Error::source(&e)
        .and_then(|source| source.downcast_ref::<PublishError>())
        .map(PublishError::kind);
    match kind {
        Some(PublishErrorKind::StreamNotFound) => NatsError::NotFound(Missing::Bucket),
        Some(PublishErrorKind::TimedOut) => NatsError::Timeout,
        _ => NatsError::protocol("writing the key", e),
    }
}
