//! [`BlobRoot`]: the configured root directory, and the resolution of keys
//! to paths that cannot leave it. Blocking: runs inside provider jobs.
//!
//! Invariants:
//! - Every path handed out canonicalizes to a place under the canonical
//!   root: `..` is refused by the key, symlinks escaping the root by
//!   resolution.
//! - Writes never go through a symlink, and directories are created only
//!   under an ancestor that resolves inside the root.

use std::fs;
use std::io;
use std::path::PathBuf;

use crate::blob::BlobKey;

/// Why a key does not resolve to a usable path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathRefusal {
    /// Nothing is stored under the key.
    #[error("no blob under this key")]
    Missing,
    /// The key resolves outside the root (through a symlink).
    #[error("blob key resolves outside the blob root")]
    Escapes,
    /// The key names a directory or another non-file.
    #[error("blob key does not name a regular file")]
    NotAFile,
    /// The file system refused the key's path (for example a segment that
    /// names a file where a directory is needed): the request's own error,
    /// never the origin's.
    #[error("blob key's path is unusable: {kind}")]
    Unusable {
        /// The file system's error, by kind only (paths are not echoed).
        kind: io::ErrorKind,
    },
}

/// The canonical root directory of one blob origin.
#[derive(Debug, Clone)]
pub(crate) struct BlobRoot(PathBuf);

/// A resolution: a path, a refusal, or an I/O error of the root itself.
pub(crate) type Resolved = io::Result<Result<PathBuf, PathRefusal>>;

impl BlobRoot {
    /// Opens the configured root `target` (an absolute directory path).
    pub(crate) fn open(target: &str) -> io::Result<Self> {
        let root = fs::canonicalize(target)?;
        if !fs::metadata(&root)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "blob root is not a directory",
            ));
        }
        Ok(Self(root))
    }

    /// The path of an existing regular file stored under `key`.
    pub(crate) fn existing(&self, key: &BlobKey) -> Resolved {
        let path = key.under(&self.0);
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Err(PathRefusal::Missing)),
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        let canonical = match fs::canonicalize(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Err(PathRefusal::Missing)),
            other => other?,
        };
        if !canonical.starts_with(&self.0) {
            return Ok(Err(PathRefusal::Escapes));
        }
        if !fs::metadata(&canonical)?.is_file() {
            return Ok(Err(PathRefusal::NotAFile));
        }
        Ok(Ok(canonical))
    }

    /// A path to write `key` to: its directories exist under the root, and
    /// it is not a symlink or a directory.
    pub(crate) fn writable(&self, key: &BlobKey) -> Resolved {
        let path = key.under(&self.0);
        let Some(parent) = path.parent() else {
            return Ok(Err(PathRefusal::NotAFile));
        };
        // The deepest existing ancestor must already resolve inside the root.
        let mut ancestor = parent;
        while fs::symlink_metadata(ancestor).is_err() {
            match ancestor.parent() {
                Some(up) => ancestor = up,
                None => return Ok(Err(PathRefusal::Escapes)),
            }
        }
        if !fs::canonicalize(ancestor)?.starts_with(&self.0) {
            return Ok(Err(PathRefusal::Escapes));
        }
        fs::create_dir_all(parent)?;
        if !fs::canonicalize(parent)?.starts_with(&self.0) {
            return Ok(Err(PathRefusal::Escapes));
        }
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => Ok(Err(PathRefusal::Escapes)),
            Ok(meta) if !meta.is_file() => Ok(Err(PathRefusal::NotAFile)),
            _ => Ok(Ok(path)),
        }
    }

    /// The directory a listing of `prefix` reads (the root without one).
    pub(crate) fn directory(&self, prefix: Option<&BlobKey>) -> Resolved {
        let Some(prefix) = prefix else {
            return Ok(Ok(self.0.clone()));
        };
        let path = prefix.under(&self.0);
        let canonical = match fs::canonicalize(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Err(PathRefusal::Missing)),
            other => other?,
        };
        if !canonical.starts_with(&self.0) {
            return Ok(Err(PathRefusal::Escapes));
        }
        Ok(Ok(canonical))
    }
}
