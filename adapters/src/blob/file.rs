//! [`BlobOpener`] and [`BlobFile`]: an open file handle is the pooled,
//! accounted resource of the blob adapter — charged as one of the node's and
//! the client's connections before it is opened, destroyed (closed) before
//! the charge returns. Opening runs as a bounded provider job.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use provider_pools_actors::{
    DialError, DialErrorKind, DialTarget, Dialer, JobError, ProviderPools, RunningRequest,
};

use crate::blob::root::{BlobRoot, PathRefusal};
use crate::blob::BlobKey;

/// What the open is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Read,
    Write,
}

/// Opens one file under the slot's root, on a worker slot.
#[derive(Clone)]
pub(crate) struct BlobOpener {
    pub(crate) pools: ProviderPools,
    /// The request the open runs for: its tenant's worker share pays.
    pub(crate) running: RunningRequest,
    pub(crate) key: BlobKey,
    pub(crate) mode: Mode,
}

/// An open handle, or why there is none. A missing or refused key is the
/// guest's error, not the origin's: it answers without putting the client
/// into backoff.
pub(crate) enum BlobFile {
    /// A file open for reading.
    Reading { file: Option<File>, len: u64 },
    /// A temporary file open for writing; renamed onto `dest` on commit,
    /// removed otherwise.
    Writing {
        file: Option<File>,
        /// `None` once committed.
        temp: Option<PathBuf>,
        dest: PathBuf,
    },
    /// The key does not resolve to a usable path.
    Refused(PathRefusal),
}

impl Drop for BlobFile {
    fn drop(&mut self) {
        if let BlobFile::Writing { file, temp, .. } = self {
            // Close, then remove the uncommitted temporary file.
            drop(file.take());
            if let Some(temp) = temp.take() {
                let _ = fs::remove_file(temp);
            }
        }
    }
}

impl fmt::Debug for BlobFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlobFile::Reading { len, .. } => write!(f, "BlobFile::Reading({len} bytes)"),
            BlobFile::Writing { .. } => f.write_str("BlobFile::Writing"),
            BlobFile::Refused(why) => write!(f, "BlobFile::Refused({why})"),
        }
    }
}

fn origin_failure(e: &io::Error) -> DialError {
    DialError::new(
        DialErrorKind::Other,
        format!("blob root unusable: {}", e.kind()),
    )
}

/// Opens `key` under `root`. Only the root itself failing is the origin's
/// failure (an `Err`, which backs the client off); anything the file system
/// refuses about the key's own path is the request's, a `Refused` handle.
fn open(root: &str, key: &BlobKey, mode: Mode) -> io::Result<BlobFile> {
    let root = BlobRoot::open(root)?;
    Ok(open_under(&root, key, mode)
        .unwrap_or_else(|e| BlobFile::Refused(PathRefusal::Unusable { kind: e.kind() })))
}

fn open_under(root: &BlobRoot, key: &BlobKey, mode: Mode) -> io::Result<BlobFile> {
    match mode {
        Mode::Read => Ok(match root.existing(key)? {
            Ok(path) => {
                let file = File::open(path)?;
                let len = file.metadata()?.len();
                BlobFile::Reading {
                    file: Some(file),
                    len,
                }
            }
            Err(refusal) => BlobFile::Refused(refusal),
        }),
        Mode::Write => Ok(match root.writable(key)? {
            Ok(dest) => {
                static PARTS: AtomicU64 = AtomicU64::new(0);
                // At most `key::TEMP_OVERHEAD` bytes longer than the name,
                // which `BlobKey::parse` keeps within the file system's limit.
                let name = format!(
                    ".{}.partial-{}-{}",
                    dest.file_name().and_then(|n| n.to_str()).unwrap_or("blob"),
                    std::process::id(),
                    PARTS.fetch_add(1, Ordering::Relaxed)
                );
                let temp = dest.with_file_name(name);
                let file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&temp)?;
                BlobFile::Writing {
                    file: Some(file),
                    temp: Some(temp),
                    dest,
                }
            }
            Err(refusal) => BlobFile::Refused(refusal),
        }),
    }
}

impl Dialer for BlobOpener {
    type Conn = BlobFile;

    /// A handle is one key's file, not a reusable connection: a handle
    /// whose requester left is destroyed.
    const PARK_UNCLAIMED: bool = false;

    async fn dial(&self, target: DialTarget<'_>) -> Result<BlobFile, DialError> {
        let (root, key, mode) = (target.target.to_owned(), self.key.clone(), self.mode);
        let job = self
            .pools
            .spawn_blocking_for(&self.running, move || open(&root, &key, mode))
            .await
            .map_err(|e| {
                // No worker slot: our own limit, not the root's failure.
                let kind = match e {
                    JobError::Capacity { .. } | JobError::Busy => DialErrorKind::Saturated,
                    _ => DialErrorKind::Other,
                };
                DialError::new(kind, format!("no worker: {}", e.code()))
            })?;
        match job.join().await {
            Ok(Ok(file)) => Ok(file),
            Ok(Err(e)) => Err(origin_failure(&e)),
            Err(e) => Err(DialError::new(
                DialErrorKind::Other,
                format!("open job: {}", e.code()),
            )),
        }
    }
}
