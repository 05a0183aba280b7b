//! [`BlobKey`]: a guest-supplied object key, validated before it touches a
//! path.
//!
//! Invariants:
//! - A key is relative: never absolute, never `.` or `..`, never an empty
//!   segment, never a backslash, NUL or control byte.
//! - A key is bounded: at most [`MAX_KEY`] bytes, segments at most
//!   [`MAX_SEGMENT`] bytes, the last one at most [`MAX_NAME`] so that a put's
//!   temporary name fits the file system too; checked before any I/O.

use std::path::{Path, PathBuf};

use crate::guest_key::{guest_key, length_within};

/// Longest key, in bytes.
pub const MAX_KEY: usize = 1024;
/// Longest path segment, in bytes: the file system's own limit (`NAME_MAX`).
pub const MAX_SEGMENT: usize = 255;
/// What a put's temporary name adds to the key's last segment:
/// `.{name}.partial-{pid}-{n}`, a `u32` process id and a `u64` counter.
pub(crate) const TEMP_OVERHEAD: usize = ".".len() + ".partial-".len() + 10 + "-".len() + 20;
/// Longest last segment (the object's own name), in bytes: its temporary
/// name during a put must still fit [`MAX_SEGMENT`].
pub const MAX_NAME: usize = MAX_SEGMENT - TEMP_OVERHEAD;

/// Why a key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlobKeyError {
    /// Empty, or longer than [`MAX_KEY`].
    #[error("blob key is {len} bytes; it must be 1 to {MAX_KEY}")]
    Length {
        /// Its length.
        len: usize,
    },
    /// Starts with `/`.
    #[error("blob key is absolute")]
    Absolute,
    /// Has an empty, `.` or `..` segment.
    #[error("blob key has a `{segment}` segment")]
    Segment {
        /// The refused segment (empty, `.` or `..`).
        segment: &'static str,
    },
    /// A segment is longer than [`MAX_SEGMENT`].
    #[error("blob key segment is {len} bytes, more than {MAX_SEGMENT}")]
    SegmentLength {
        /// Its length.
        len: usize,
    },
    /// The last segment is longer than [`MAX_NAME`]: a put's temporary name
    /// would not fit the file system's segment limit.
    #[error("blob key's last segment is {len} bytes, more than {MAX_NAME}")]
    NameLength {
        /// Its length.
        len: usize,
    },
    /// A backslash, NUL or control byte.
    #[error("blob key has a forbidden byte at {index}")]
    Byte {
        /// Where.
        index: usize,
    },
}

/// A validated, relative object key such as `reports/2026/q4.csv`.
///
/// # Examples
///
/// ```
/// use provider_pools_adapters::blob::BlobKey;
///
/// assert!(BlobKey::parse("reports/q4.csv").is_ok());
/// assert!(BlobKey::parse("../etc/passwd").is_err());
/// assert!(BlobKey::parse("/etc/passwd").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BlobKey(String);

impl BlobKey {
    /// Validates `key`.
    ///
    /// # Errors
    ///
    /// The first [`BlobKeyError`] found.
    pub fn parse(key: &str) -> Result<Self, BlobKeyError> {
        length_within(key, MAX_KEY).map_err(|len| BlobKeyError::Length { len })?;
        if let Some(index) = key.bytes().position(|b| b == b'\\' || b.is_ascii_control()) {
            return Err(BlobKeyError::Byte { index });
        }
        if key.starts_with('/') {
            return Err(BlobKeyError::Absolute);
        }
        for segment in key.split('/') {
            let refused = match segment {
                "" => Some(""),
                "." => Some("."),
                ".." => Some(".."),
                _ => None,
            };
            if let Some(segment) = refused {
                return Err(BlobKeyError::Segment { segment });
            }
            if segment.len() > MAX_SEGMENT {
                return Err(BlobKeyError::SegmentLength { len: segment.len() });
            }
        }
        let name = key.rsplit('/').next().unwrap_or(key);
        if name.len() > MAX_NAME {
            return Err(BlobKeyError::NameLength { len: name.len() });
        }
        Ok(Self(key.to_owned()))
    }

    /// The key as a relative path under `root`.
    pub(crate) fn under(&self, root: &Path) -> PathBuf {
        self.0
            .split('/')
            .fold(root.to_path_buf(), |path, segment| path.join(segment))
    }
}

guest_key!(BlobKey);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_keys_pass_and_escapes_are_refused() {
        assert!(BlobKey::parse("a").is_ok());
        assert!(BlobKey::parse("a/b.c/d-e_f").is_ok());
        assert_eq!(BlobKey::parse(""), Err(BlobKeyError::Length { len: 0 }));
        assert_eq!(BlobKey::parse("/a"), Err(BlobKeyError::Absolute));
        assert_eq!(
            BlobKey::parse("a/../b"),
            Err(BlobKeyError::Segment { segment: ".." })
        );
        assert_eq!(
            BlobKey::parse(".."),
            Err(BlobKeyError::Segment { segment: ".." })
        );
        assert_eq!(
            BlobKey::parse("./a"),
            Err(BlobKeyError::Segment { segment: "." })
        );
        assert_eq!(
            BlobKey::parse("a//b"),
            Err(BlobKeyError::Segment { segment: "" })
        );
        assert_eq!(
            BlobKey::parse("a/"),
            Err(BlobKeyError::Segment { segment: "" })
        );
        assert_eq!(BlobKey::parse("a\\b"), Err(BlobKeyError::Byte { index: 1 }));
        assert_eq!(BlobKey::parse("a\nb"), Err(BlobKeyError::Byte { index: 1 }));
        let long = "x".repeat(MAX_SEGMENT + 1);
        assert_eq!(
            BlobKey::parse(&long),
            Err(BlobKeyError::SegmentLength {
                len: MAX_SEGMENT + 1
            })
        );
        assert!(BlobKey::parse(&"a/".repeat(MAX_KEY / 2 + 1)).is_err());
    }

    #[test]
    fn the_last_segment_leaves_room_for_the_temporary_name() {
        let name = "n".repeat(MAX_NAME);
        assert!(BlobKey::parse(&name).is_ok());
        // The longest temporary name a put can form still fits NAME_MAX.
        let temp = format!(".{name}.partial-{}-{}", u32::MAX, u64::MAX);
        assert_eq!(temp.len(), MAX_SEGMENT);
        let over = "n".repeat(MAX_NAME + 1);
        let err = Err(BlobKeyError::NameLength { len: MAX_NAME + 1 });
        assert_eq!(BlobKey::parse(&over), err);
        // A directory segment may use the whole limit.
        let dir = format!("{}/x", "d".repeat(MAX_SEGMENT));
        assert!(BlobKey::parse(&dir).is_ok());
    }
}
