//! Names a guest may give — a subject under the provider's prefix, a
//! consumer, a key — and their syntax, which the provider settings that
//! scope them (`settings.rs`) keep too.
//!
//! Invariants:
//! - A guest [`Subject`] is relative: the adapter puts it under the
//!   epoch's `subject_prefix`, so a guest can name no subject outside it.
//! - Guest subjects have no wildcards (`*`, `>`), no empty token, no
//!   whitespace or control bytes; consumers, streams and buckets are
//!   `[A-Za-z0-9_-]`; keys are the key-value alphabet `[A-Za-z0-9_=/.-]`
//!   without a leading or trailing `.`.
//! - Parsing here is pure: nothing dials or installs.

use std::fmt;

/// Longest subject (prefix included) or key, in bytes.
pub const MAX_SUBJECT: usize = 256;
/// Longest consumer, stream or bucket name, in bytes.
pub const MAX_NAME: usize = 64;

/// Why a guest name was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NatsNameError {
    /// The name is empty.
    #[error("name is empty")]
    Empty,
    /// The name is too long.
    #[error("name is longer than {max} bytes")]
    TooLong {
        /// The bound.
        max: usize,
    },
    /// A subject has an empty token (`a..b`, a leading or trailing `.`).
    #[error("subject has an empty token")]
    EmptyToken,
    /// A subject has a wildcard (`*` or `>`).
    #[error("subject must not contain a wildcard")]
    Wildcard,
    /// The name has a byte its kind does not allow.
    #[error("name contains a byte that is not allowed")]
    InvalidByte,
}

/// A guest's subject, relative to the provider's `subject_prefix`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Subject(String);

impl Subject {
    /// Parses a relative subject: dot-separated tokens of printable ASCII,
    /// no wildcard, no empty token.
    ///
    /// # Errors
    ///
    /// The [`NatsNameError`] naming what was wrong.
    pub fn parse(text: &str) -> Result<Self, NatsNameError> {
        check_subject(text)?;
        Ok(Self(text.to_owned()))
    }

    /// The relative subject.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The full subject under `prefix`.
    pub(crate) fn under(&self, prefix: &str) -> Result<String, NatsNameError> {
        let full = format!("{prefix}.{}", self.0);
        if full.len() > MAX_SUBJECT {
            return Err(NatsNameError::TooLong { max: MAX_SUBJECT });
        }
        Ok(full)
    }
}

impl fmt::Debug for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Subject({})", self.0)
    }
}

/// A durable pull consumer of the provider's stream.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ConsumerName(String);

impl ConsumerName {
    /// Parses a consumer name: `[A-Za-z0-9_-]`, at most [`MAX_NAME`] bytes.
    ///
    /// # Errors
    ///
    /// The [`NatsNameError`] naming what was wrong.
    pub fn parse(text: &str) -> Result<Self, NatsNameError> {
        check_name(text)?;
        Ok(Self(text.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ConsumerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConsumerName({})", self.0)
    }
}

/// A key of the provider's key-value bucket.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct KvKey(String);

impl KvKey {
    /// Parses a key: `[A-Za-z0-9_=/.-]`, no leading or trailing `.`, at
    /// most [`MAX_SUBJECT`] bytes.
    ///
    /// # Errors
    ///
    /// The [`NatsNameError`] naming what was wrong.
    pub fn parse(text: &str) -> Result<Self, NatsNameError> {
        bounded(text, MAX_SUBJECT)?;
        let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'=' | b'/' | b'-');
        if !text.bytes().all(|b| allowed(b) || b == b'.') {
            return Err(NatsNameError::InvalidByte);
        }
        if text.starts_with('.') || text.ends_with('.') || text.contains("..") {
            return Err(NatsNameError::EmptyToken);
        }
        Ok(Self(text.to_owned()))
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for KvKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KvKey({})", self.0)
    }
}

fn bounded(text: &str, max: usize) -> Result<(), NatsNameError> {
    if text.is_empty() {
        return Err(NatsNameError::Empty);
    }
    if text.len() > max {
        return Err(NatsNameError::TooLong { max });
    }
    Ok(())
}

pub(super) fn check_subject(text: &str) -> Result<(), NatsNameError> {
    bounded(text, MAX_SUBJECT)?;
    for token in text.split('.') {
        if token.is_empty() {
            return Err(NatsNameError::EmptyToken);
        }
        if token.contains(['*', '>']) {
            return Err(NatsNameError::Wildcard);
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(NatsNameError::InvalidByte);
        }
    }
    Ok(())
}

pub(super) fn check_name(text: &str) -> Result<(), NatsNameError> {
    bounded(text, MAX_NAME)?;
    if !text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
    {
        return Err(NatsNameError::InvalidByte);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_relative_tokens_without_wildcards() {
        assert_eq!(
            Subject::parse("a.b-c.d_1").expect("valid").as_str(),
            "a.b-c.d_1"
        );
        for (text, error) in [
            ("", NatsNameError::Empty),
            (".a", NatsNameError::EmptyToken),
            ("a.", NatsNameError::EmptyToken),
            ("a..b", NatsNameError::EmptyToken),
            ("a.*", NatsNameError::Wildcard),
            ("a.>", NatsNameError::Wildcard),
            ("a b", NatsNameError::InvalidByte),
            ("a\r\nPUB x", NatsNameError::InvalidByte),
            ("ä", NatsNameError::InvalidByte),
        ] {
            assert_eq!(Subject::parse(text), Err(error), "{text:?}");
        }
        let long = "a".repeat(MAX_SUBJECT + 1);
        assert_eq!(
            Subject::parse(&long),
            Err(NatsNameError::TooLong { max: MAX_SUBJECT })
        );
    }

    #[test]
    fn consumers_and_keys_keep_to_their_alphabets() {
        assert!(ConsumerName::parse("worker-1_a").is_ok());
        for text in ["a.b", "a b", "a*", "a>", "a/b"] {
            assert_eq!(ConsumerName::parse(text), Err(NatsNameError::InvalidByte));
        }
        assert!(KvKey::parse("tenant/a=b.c-d_e").is_ok());
        assert_eq!(KvKey::parse(".a"), Err(NatsNameError::EmptyToken));
        assert_eq!(KvKey::parse("a."), Err(NatsNameError::EmptyToken));
        assert_eq!(KvKey::parse("a*"), Err(NatsNameError::InvalidByte));
        assert_eq!(KvKey::parse("a b"), Err(NatsNameError::InvalidByte));
    }
}
