//! [`LimitError`]: one typed refusal for every size or count bound an
//! adapter is given (`BodyLimits`, `BlobLimits`, `S3Limits`, `VaultLimits`,
//! `NatsLimits`).
//!
//! Invariants:
//! - Every bound has a documented ceiling (the type's `CEILING` constant);
//!   a value above it is refused before any I/O, naming the field.
//! - No adapter allocates a length a peer announced: buffers grow as bytes
//!   arrive, under the bound.

/// A size or count bound above its ceiling.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value} is above its ceiling of {ceiling}")]
pub struct LimitError {
    /// The field, e.g. `max_response`.
    pub field: &'static str,
    /// The value given.
    pub value: u64,
    /// Its ceiling.
    pub ceiling: u64,
}

impl LimitError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        "limit_above_ceiling"
    }
}

/// An object over its size bound: each object adapter's error turns it
/// into its own `TooLarge`.
#[cfg(any(feature = "blob", feature = "s3"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Oversize {
    /// The object's size.
    pub(crate) len: u64,
    /// The bound.
    pub(crate) limit: u64,
}

/// Refuses an object of `len` bytes over `limit`.
#[cfg(any(feature = "blob", feature = "s3"))]
pub(crate) fn object_within(len: u64, limit: u64) -> Result<(), Oversize> {
    if len > limit {
        return Err(Oversize { len, limit });
    }
    Ok(())
}

/// Refuses `value` above `ceiling`.
#[cfg_attr(
    not(any(
        feature = "http",
        feature = "blob",
        feature = "s3",
        feature = "vault",
        feature = "nats"
    )),
    allow(dead_code)
)]
pub(crate) fn at_most(
    field: &'static str,
    value: impl TryInto<u64>,
    ceiling: u64,
) -> Result<(), LimitError> {
    let value = value.try_into().unwrap_or(u64::MAX);
    if value > ceiling {
        return Err(LimitError {
            field,
            value,
            ceiling,
        });
    }
    Ok(())
}
