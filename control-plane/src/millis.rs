//! Serde for a [`Duration`] written as whole milliseconds (`*_ms` fields of
//! the V1 JSON protocol and the file store).

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(
    duration: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    serializer.serialize_u64(millis)
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Duration, D::Error> {
    u64::deserialize(deserializer).map(Duration::from_millis)
}
