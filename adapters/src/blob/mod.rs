//! The local blob adapter: objects under a configured root directory.
//!
//! The trusted configuration names the root as the origin's target (an
//! absolute directory path) on a [`OriginKind::Blob`](provider_pools_actors::OriginKind)
//! slot; a guest names a [`BlobKey`]. Operations: [`head`], [`get`]
//! (streamed), [`put`] (atomic), [`delete`], [`list`].
//!
//! Invariants:
//! - A key never leaves the root: keys are validated relative paths (`..`
//!   and absolute keys are refused), resolution canonicalizes under the
//!   root and refuses anything outside it (symlinks included), and writes
//!   never follow a symlink.
//! - Open file handles are the pooled, accounted resources: each is charged
//!   as one of the node's and the client's connections before it is opened,
//!   and closed before the charge returns. Handles are never parked.
//! - Every file-system call runs as a bounded provider job on the worker
//!   slots; every byte returned is staged against the running request.
//! - A missing or refused key answers the guest without putting the client
//!   into backoff; only an unusable root is a failed "dial".
//! - Sizes are bounded by [`BlobLimits`].
//!
//! # Pooled, charged, destroyed
//!
//! - **Pooled:** `BlobFile`, an open file handle, never parked.
//! - **Charged:** the node's and the client's connection charges before the
//!   open job runs; each file-system call on a `provider_workers` slot;
//!   streamed chunks as the request's `StagedOutput`.
//! - **Destroyed:** closed when its `PooledConnection` drops: at the end of
//!   a streamed read, after a put's rename, or when the reader is dropped;
//!   an uncommitted put's temporary file is removed with it.

mod file;
mod key;
mod ops;
mod root;

pub use key::{BlobKey, BlobKeyError, MAX_KEY, MAX_NAME, MAX_SEGMENT};
pub use ops::{delete, get, head, list, put, BlobReader};
pub use root::PathRefusal;

use provider_pools_actors::{AdmitError, ConnectError, JobError};

/// Size bounds of blob operations.
///
/// Each bound is at most [`BlobLimits::CEILING`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobLimits {
    /// Largest object stored or read, in bytes.
    pub max_object: u64,
    /// Most keys one listing returns.
    pub max_list: usize,
    /// Bytes per streamed chunk.
    pub chunk: usize,
}

impl BlobLimits {
    /// The largest bounds: 4 GiB objects, 100,000 listed keys, 16 MiB
    /// chunks.
    pub const CEILING: Self = Self {
        max_object: 4 << 30,
        max_list: 100_000,
        chunk: 16 << 20,
    };

    /// Refuses a bound above [`Self::CEILING`]; every operation calls it
    /// before any I/O.
    ///
    /// # Errors
    ///
    /// [`crate::LimitError`] naming the field.
    pub fn check(&self) -> Result<(), crate::LimitError> {
        crate::limits::at_most("max_object", self.max_object, Self::CEILING.max_object)?;
        crate::limits::at_most("max_list", self.max_list, Self::CEILING.max_list as u64)?;
        crate::limits::at_most("chunk", self.chunk, Self::CEILING.chunk as u64)?;
        Ok(())
    }
}

impl Default for BlobLimits {
    fn default() -> Self {
        Self {
            max_object: 8 * 1024 * 1024,
            max_list: 1_000,
            chunk: 64 * 1024,
        }
    }
}

/// What a blob operation reports about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobMeta {
    /// The key.
    pub key: BlobKey,
    /// Its size in bytes.
    pub len: u64,
}

/// Why a blob operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    /// A size or count bound is above its ceiling; refused before any I/O.
    #[error("invalid limits")]
    Limit(#[from] crate::limits::LimitError),
    /// The key resolves to nothing usable.
    #[error(transparent)]
    Refused(PathRefusal),
    /// The object is larger than allowed.
    #[error("blob is {len} bytes, more than {limit}")]
    TooLarge {
        /// Its size.
        len: u64,
        /// The bound.
        limit: u64,
    },
    /// A listing has more entries than allowed.
    #[error("listing has more than {limit} entries")]
    TooMany {
        /// The bound.
        limit: usize,
    },
    /// The request's client is not a blob origin.
    #[error("the request's origin is not a blob origin")]
    NotBlob,
    /// No handle could be charged or opened.
    #[error(transparent)]
    Connect(ConnectError),
    /// No worker could run the file-system call, or it panicked.
    #[error("blob job failed")]
    Job(#[source] JobError),
    /// A result chunk could not be staged.
    #[error(transparent)]
    Staging(AdmitError),
    /// The file ended before its recorded length.
    #[error("blob was truncated while it was read")]
    Truncated,
    /// The handle was lost to an earlier failure.
    #[error("blob handle is closed")]
    Closed,
    /// An I/O error, by kind only (paths are not echoed).
    #[error("blob i/o failed: {0}")]
    Io(std::io::ErrorKind),
    /// The request's deadline passed before the read ended: no more reads.
    /// A file-system call already running finishes on its worker slot,
    /// which keeps the handle (and its charge) until it is done.
    #[error("the request's deadline passed while the blob was read")]
    Timeout,
}

impl From<crate::limits::Oversize> for BlobError {
    fn from(crate::limits::Oversize { len, limit }: crate::limits::Oversize) -> Self {
        Self::TooLarge { len, limit }
    }
}

impl BlobError {
    pub(crate) fn io(e: std::io::Error) -> Self {
        Self::Io(e.kind())
    }

    /// A stable code for this error, for callers and metrics.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Limit(e) => e.code(),
            Self::Refused(PathRefusal::Missing) => "not_found",
            Self::Refused(PathRefusal::Escapes) => "escapes_root",
            Self::Refused(PathRefusal::NotAFile) => "not_a_file",
            Self::Refused(PathRefusal::Unusable { .. }) => "path_unusable",
            Self::TooLarge { .. } => "too_large",
            Self::TooMany { .. } => "too_many",
            Self::NotBlob => "not_blob",
            Self::Connect(e) => e.code(),
            Self::Job(e) => e.code(),
            Self::Staging(e) => e.code(),
            Self::Truncated => "truncated",
            Self::Closed => "closed",
            Self::Io(_) => "io",
            Self::Timeout => "timeout",
        }
    }
}
