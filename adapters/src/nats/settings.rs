//! The provider settings that scope a guest's names: the subject prefix,
//! the stream and the key-value bucket, read from the epoch's settings.
//!
//! Invariants:
//! - A setting is checked with the syntax of its kind of name before use;
//!   a missing or invalid one is [`NatsError::Config`] naming the setting
//!   only, never its value.

use provider_pools_actors::RunningRequest;

use crate::nats::error::NatsError;
use crate::nats::names::{check_name, check_subject, NatsNameError};

/// The provider setting naming the JetStream stream `fetch` reads from.
pub const STREAM_SETTING: &str = "stream";
/// The provider setting naming the subject prefix every guest subject is
/// put under (`orders` makes the guest's `created` into `orders.created`).
pub const SUBJECT_PREFIX_SETTING: &str = "subject_prefix";
/// The provider setting naming the key-value bucket.
pub const KV_BUCKET_SETTING: &str = "kv_bucket";

/// The epoch's setting `key`, checked by `check`; a missing or invalid
/// setting is a configuration error naming the setting only.
fn setting<'r>(
    running: &'r RunningRequest,
    key: &'static str,
    check: fn(&str) -> Result<(), NatsNameError>,
) -> Result<&'r str, NatsError> {
    let value = running.client().setting(key).ok_or(NatsError::Config {
        setting: key,
        reason: "is not set",
    })?;
    check(value).map_err(|_| NatsError::Config {
        setting: key,
        reason: "is not a valid name",
    })?;
    Ok(value)
}

/// The epoch's `subject_prefix`.
pub(crate) fn subject_prefix(running: &RunningRequest) -> Result<&str, NatsError> {
    setting(running, SUBJECT_PREFIX_SETTING, check_subject)
}

/// The epoch's `stream`.
pub(crate) fn stream(running: &RunningRequest) -> Result<&str, NatsError> {
    setting(running, STREAM_SETTING, check_name)
}

/// The epoch's `kv_bucket`.
pub(crate) fn kv_bucket(running: &RunningRequest) -> Result<&str, NatsError> {
    setting(running, KV_BUCKET_SETTING, check_name)
}
