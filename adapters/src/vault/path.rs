//! A guest's [`SecretPath`] and the segment syntax it shares with mounts,
//! namespaces and transit key names: relative, `/`-separated segments of
//! `[A-Za-z0-9._-]`, none empty, `.` or `..`, within a bound; and
//! [`PathError`], why one was refused.

use std::fmt;

/// Longest secret path accepted, in bytes.
pub const MAX_PATH: usize = 512;
/// Longest mount or namespace accepted, in bytes.
pub const MAX_MOUNT: usize = 128;

/// Why a guest's secret path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty.
    #[error("secret path is empty")]
    Empty,
    /// The path is longer than [`MAX_PATH`].
    #[error("secret path is longer than {MAX_PATH} bytes")]
    TooLong,
    /// The path starts with `/`.
    #[error("secret path must be relative")]
    Absolute,
    /// The path has an empty segment (`a//b`, or a trailing `/`).
    #[error("secret path has an empty segment")]
    EmptySegment,
    /// The path has a `.` or `..` segment.
    #[error("secret path must not contain '.' or '..' segments")]
    DotSegment,
    /// The path has a byte outside `[A-Za-z0-9._-]` and `/`.
    #[error("secret path may hold only ASCII letters, digits, '.', '_', '-' and '/'")]
    Charset,
}

/// A guest's secret path under the slot's KV-v2 mount, e.g. `app/db`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SecretPath(String);

impl SecretPath {
    /// Parses a relative secret path.
    ///
    /// # Errors
    ///
    /// The [`PathError`] naming what was wrong.
    pub fn parse(text: &str) -> Result<Self, PathError> {
        check_segments(text, MAX_PATH)?;
        Ok(Self(text.to_owned()))
    }

    /// The path as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretPath({})", self.0)
    }
}

impl fmt::Display for SecretPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) fn check_segments(text: &str, max: usize) -> Result<(), PathError> {
    if text.is_empty() {
        return Err(PathError::Empty);
    }
    if text.len() > max {
        return Err(PathError::TooLong);
    }
    if text.starts_with('/') {
        return Err(PathError::Absolute);
    }
    for segment in text.split('/') {
        if segment.is_empty() {
            return Err(PathError::EmptySegment);
        }
        if segment == "." || segment == ".." {
            return Err(PathError::DotSegment);
        }
        let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
        if !segment.bytes().all(allowed) {
            return Err(PathError::Charset);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_bounded_segments() {
        assert!(SecretPath::parse("app/db-1/v_2.json").is_ok());
        for (text, error) in [
            ("", PathError::Empty),
            ("/app", PathError::Absolute),
            ("app//db", PathError::EmptySegment),
            ("app/", PathError::EmptySegment),
            ("app/../sys", PathError::DotSegment),
            ("./app", PathError::DotSegment),
            ("app?x=1", PathError::Charset),
            ("app db", PathError::Charset),
            ("app%2f..", PathError::Charset),
            ("ä", PathError::Charset),
        ] {
            assert_eq!(SecretPath::parse(text), Err(error), "{text:?}");
        }
        let long = "a".repeat(MAX_PATH + 1);
        assert_eq!(SecretPath::parse(&long), Err(PathError::TooLong));
    }
}
