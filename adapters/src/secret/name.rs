//! [`SecretName`]: the name of one secret file, validated before it touches
//! a path.
//!
//! Invariants:
//! - A name is one path segment: no `/`, so it can only name an entry of
//!   the configured directory itself.
//! - A name never starts with `.`: no `.`, `..` or hidden entry (such as a
//!   Kubernetes mount's `..data`) can be named.
//! - A name is 1 to [`MAX_NAME`] bytes of ASCII letters, digits, `.`, `_`
//!   and `-`.

use crate::guest_key::{guest_key, length_within};

/// Longest secret name, in bytes.
pub const MAX_NAME: usize = 255;

/// Why a secret name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretNameError {
    /// Empty, or longer than [`MAX_NAME`].
    #[error("secret name is {len} bytes; it must be 1 to {MAX_NAME}")]
    Length {
        /// Its length.
        len: usize,
    },
    /// Starts with `.` (also `.` and `..`).
    #[error("secret name starts with a dot")]
    Dot,
    /// A byte outside `A-Z a-z 0-9 . _ -` (a `/`, say).
    #[error("secret name has a forbidden byte at {index}")]
    Byte {
        /// Where.
        index: usize,
    },
}

/// A validated secret name such as `db-password` or `api.token`.
///
/// Names are not secret: they appear in errors, `Debug` and audit events.
///
/// # Examples
///
/// ```
/// use provider_pools_adapters::secret::SecretName;
///
/// assert!(SecretName::parse("db-password").is_ok());
/// assert!(SecretName::parse("../etc/shadow").is_err());
/// assert!(SecretName::parse("nested/name").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SecretName(String);

impl SecretName {
    /// Validates `name`.
    ///
    /// # Errors
    ///
    /// The first [`SecretNameError`] found.
    pub fn parse(name: &str) -> Result<Self, SecretNameError> {
        length_within(name, MAX_NAME).map_err(|len| SecretNameError::Length { len })?;
        if name.starts_with('.') {
            return Err(SecretNameError::Dot);
        }
        let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
        if let Some(index) = name.bytes().position(|b| !allowed(b)) {
            return Err(SecretNameError::Byte { index });
        }
        Ok(Self(name.to_owned()))
    }
}

guest_key!(SecretName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_plain_segment_passes_and_everything_else_is_refused() {
        for ok in [
            "a",
            "db-password",
            "api.token",
            "A_1.b-2",
            &"x".repeat(MAX_NAME),
        ] {
            assert!(SecretName::parse(ok).is_ok(), "{ok} must pass");
        }
        assert_eq!(
            SecretName::parse(""),
            Err(SecretNameError::Length { len: 0 })
        );
        assert_eq!(
            SecretName::parse(&"x".repeat(MAX_NAME + 1)),
            Err(SecretNameError::Length { len: MAX_NAME + 1 })
        );
        for dot in [".", "..", "..data", ".hidden"] {
            assert_eq!(SecretName::parse(dot), Err(SecretNameError::Dot), "{dot}");
        }
        assert_eq!(
            SecretName::parse("a/b"),
            Err(SecretNameError::Byte { index: 1 })
        );
        assert_eq!(
            SecretName::parse("/abs"),
            Err(SecretNameError::Byte { index: 0 })
        );
        assert_eq!(
            SecretName::parse("a\\b"),
            Err(SecretNameError::Byte { index: 1 })
        );
        assert_eq!(
            SecretName::parse("a\0"),
            Err(SecretNameError::Byte { index: 1 })
        );
        assert_eq!(
            SecretName::parse("a b"),
            Err(SecretNameError::Byte { index: 1 })
        );
        assert_eq!(
            SecretName::parse("é"),
            Err(SecretNameError::Byte { index: 0 })
        );
    }
}
