//! [`ObjectKey`]: a guest's object key (or listing prefix) in the
//! provider's one bucket.
//!
//! Invariants:
//! - A key is 1 to [`MAX_KEY`] bytes of UTF-8 (S3's own bound).
//! - A key holds no control character; everything else is percent-encoded
//!   by the SDK into the path, so a key never changes the origin or the
//!   bucket a request reaches.

use crate::guest_key::{guest_key, length_within};

/// Longest key, in bytes (S3's limit).
pub const MAX_KEY: usize = 1024;

/// Why a key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ObjectKeyError {
    /// Empty, or longer than [`MAX_KEY`].
    #[error("s3 key is {len} bytes; it must be 1 to {MAX_KEY}")]
    Length {
        /// Its length.
        len: usize,
    },
    /// A control character.
    #[error("s3 key has a control character at byte {index}")]
    Control {
        /// Where.
        index: usize,
    },
}

/// A validated object key such as `reports/2026/q4.csv`.
///
/// # Examples
///
/// ```
/// use provider_pools_adapters::s3::ObjectKey;
///
/// assert!(ObjectKey::parse("reports/q4.csv").is_ok());
/// assert!(ObjectKey::parse("").is_err());
/// assert!(ObjectKey::parse("a\nb").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey(String);

impl ObjectKey {
    /// Validates `key`.
    ///
    /// # Errors
    ///
    /// The [`ObjectKeyError`] naming what is wrong.
    pub fn parse(key: &str) -> Result<Self, ObjectKeyError> {
        length_within(key, MAX_KEY).map_err(|len| ObjectKeyError::Length { len })?;
        if let Some((index, _)) = key.char_indices().find(|(_, c)| c.is_control()) {
            return Err(ObjectKeyError::Control { index });
        }
        Ok(Self(key.to_owned()))
    }
}

guest_key!(ObjectKey);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bounded_and_free_of_control_characters() {
        assert!(ObjectKey::parse("a/b c/ü.txt").is_ok());
        assert_eq!(
            ObjectKey::parse(&"k".repeat(MAX_KEY + 1)),
            Err(ObjectKeyError::Length { len: MAX_KEY + 1 })
        );
        assert_eq!(ObjectKey::parse(""), Err(ObjectKeyError::Length { len: 0 }));
        assert_eq!(
            ObjectKey::parse("ab\u{7f}"),
            Err(ObjectKeyError::Control { index: 2 })
        );
    }
}
