//! [`FileClient`]: opening a state file and the [`ControlPlane`] calls.
//!
//! Invariants:
//! - Opening locks first, then removes leftover staged files, then decodes:
//!   a client that does not own the file reads and removes nothing.
//! - A file refused on open is left exactly as it was; a version-1 file
//!   read on open is rewritten as version 2 (with its checksum) at once,
//!   and stays readable as it was if that write fails.
//! - The full-disk reserve is made (as far as the disk allows) before the
//!   open answers.
//! - Reads (`discover`, `read_lease`) never touch the disk; every mutation
//!   is staged and committed (or undone) before its call answers.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::client::{BoxFuture, CallResult, ControlPlane};
use crate::clock::Clock;
use crate::error::ControlPlaneError;
use crate::file::document::{self, Format};
use crate::file::lock::StateLock;
use crate::file::options::FileOptions;
use crate::file::reserve::Reserve;
use crate::file::staged_file::{remove_leftovers, CommitFailed, StagedFile};
use crate::lease::{LeaseGrant, LeaseKey, LeaseRequest, LeaseState};
use crate::name::ServiceGroup;
use crate::presence::{PresenceKey, Registration};
use crate::store::{StoreState, StoreStats};

/// A control plane persisted in one JSON state file (see [the module
/// docs](crate::file) for its format and guarantees).
///
/// Beside the state file it keeps `<state>.lock` (the owner's lock) and
/// `<state>.reserve`: about as many bytes as the state file, so that a
/// release or a deregistration can still be written on a full disk. The
/// state needs about twice its size on disk.
///
/// Calls run under a short lock, in the calling task, and a mutation does
/// blocking file I/O there: it writes, syncs and renames the whole state
/// (at most 16 MiB) before it answers. Keep the state small, or call from a
/// thread that may block.
///
/// ```
/// use std::time::Duration;
/// use provider_pools_control_plane::file::FileClient;
/// use provider_pools_control_plane::{ControlPlane, LeaseKey, LeaseName, LeaseRequest, NodeId};
///
/// # let directory = tempfile::tempdir().unwrap();
/// # let path = directory.path().join("control-plane.json");
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let key = LeaseKey::Global(LeaseName::new("scheduler")?);
/// let request = LeaseRequest::new(key.clone(), NodeId::new("node-a")?, Duration::from_secs(10))?;
/// let client = FileClient::open(&path)?;
/// let grant = client.acquire(request.clone()).await?;
/// client.release(grant).await?;
/// drop(client);
///
/// // The token survives a restart and keeps increasing.
/// let client = FileClient::open(&path)?;
/// assert_eq!(client.acquire(request).await?.token.get(), 2);
/// # Ok::<(), provider_pools_control_plane::ControlPlaneError>(())
/// # }).unwrap();
/// ```
pub struct FileClient {
    pub(crate) path: PathBuf,
    pub(crate) state: Mutex<StoreState>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) max_file_bytes: u64,
    pub(crate) reserve: Mutex<Reserve>,
    lock: StateLock,
}

impl FileClient {
    /// Opens the state file at `path` with the default [`FileOptions`]: a
    /// missing file is an empty state, created on the first mutation.
    ///
    /// Blocks while it locks and reads the file.
    ///
    /// # Errors
    ///
    /// - [`ControlPlaneError::Storage`] with operation `lock` (kind
    ///   `WouldBlock`) when another client owns the file, or another
    ///   operation when the file or its directory cannot be used;
    /// - [`ControlPlaneError::Invalid`] naming `path` when it names no
    ///   regular file;
    /// - [`ControlPlaneError::TooLarge`] over 16 MiB,
    ///   [`ControlPlaneError::LimitExceeded`] past the decoded limits,
    ///   [`ControlPlaneError::Corrupt`] for a malformed document or one
    ///   whose checksum does not match its bytes.
    ///
    /// A file refused is left as it is. A version-1 file (written before
    /// the checksum existed) is accepted and rewritten as version 2.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ControlPlaneError> {
        FileOptions::new().open(path)
    }

    pub(crate) fn open_with(path: &Path, options: FileOptions) -> Result<Self, ControlPlaneError> {
        if path.file_name().is_none() {
            return Err(ControlPlaneError::invalid("path", "names no file"));
        }
        let lock = StateLock::acquire(path)?;
        remove_leftovers(path)?;
        let (state, format, state_len) = read_state(path, &options)?;
        let mut reserve = Reserve::open(path, state_len);
        if format == Format::Legacy {
            migrate(path, &state, &mut reserve, options.max_file_bytes);
        }
        Ok(Self {
            path: path.to_path_buf(),
            state: Mutex::new(state),
            clock: options.clock,
            max_file_bytes: options.max_file_bytes,
            reserve: Mutex::new(reserve),
            lock,
        })
    }

    /// The state file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Current and peak estimated bytes, records and rejections.
    pub fn stats(&self) -> StoreStats {
        self.lock().stats()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, StoreState> {
        // A panic under the lock cannot leave a half-made change: a
        // mutation checks before it changes, and a staged write puts the
        // previous records back as it unwinds.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The full-disk reserve; taken only under the state lock.
    pub(crate) fn reserve(&self) -> MutexGuard<'_, Reserve> {
        // Growing or emptying the reserve leaves it usable wherever it
        // stopped: its length is re-read from the file.
        self.reserve.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `read` on the state when the future is first polled.
    fn read<'a, T: Send + 'a>(
        &'a self,
        read: impl FnOnce(&StoreState, u64) -> T + Send + 'a,
    ) -> BoxFuture<'a, CallResult<T>> {
        Box::pin(async move {
            let now_ms = self.clock.now_ms();
            Ok(read(&self.lock(), now_ms))
        })
    }
}

/// The state in `path`, its format and the file's length, or an empty
/// state when there is no file yet.
fn read_state(
    path: &Path,
    options: &FileOptions,
) -> Result<(StoreState, Format, u64), ControlPlaneError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok((StoreState::new(options.limits), Format::Verified, 0));
        }
        Err(source) => {
            return Err(ControlPlaneError::Storage {
                operation: "open",
                source,
            })
        }
    };
    let metadata = file
        .metadata()
        .map_err(|source| ControlPlaneError::Storage {
            operation: "open",
            source,
        })?;
    if !metadata.is_file() {
        return Err(ControlPlaneError::invalid("path", "is not a regular file"));
    }
    let (state, format) = document::decode(
        &mut file,
        options.max_file_bytes,
        options.limits,
        "state file",
    )?;
    Ok((state, format, metadata.len()))
}

/// Rewrites a version-1 state file as version 2, with its checksum. A
/// failure is logged and changes nothing: the file stays a readable
/// version-1 document, and the first mutation writes version 2.
fn migrate(path: &Path, state: &StoreState, reserve: &mut Reserve, max_file_bytes: u64) {
    let migrated = StagedFile::encode(path, state, max_file_bytes, "state file").and_then(|file| {
        file.sync()?;
        reserve.ensure(file.len())?;
        file.commit().map_err(|failed| match failed {
            CommitFailed::BeforeRename(error) | CommitFailed::AfterRename(error) => error,
        })
    });
    match migrated {
        Ok(()) => tracing::info!(
            path = %path.display(),
            "rewrote a version-1 state file as version 2, with its checksum"
        ),
        Err(error) => tracing::warn!(
            path = %path.display(),
            %error,
            "could not rewrite a version-1 state file as version 2; it stays unverified until the next change"
        ),
    }
}

impl fmt::Debug for FileClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileClient")
            .field("path", &self.path)
            .field("lock", &self.lock.path())
            .field("max_file_bytes", &self.max_file_bytes)
            .finish_non_exhaustive()
    }
}

/// Every call runs to completion when its future is first polled: a future
/// dropped before that changes nothing, and none can be dropped halfway.
impl ControlPlane for FileClient {
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(async move { self.stage_register(registration)?.commit() })
    }

    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(async move { self.stage_heartbeat(key)?.commit() })
    }

    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(async move { self.stage_deregister(key)?.commit() })
    }

    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        self.read(move |state, now_ms| state.discover(&service, now_ms))
    }

    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        Box::pin(async move { self.stage_acquire(request)?.commit() })
    }

    fn renew(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        Box::pin(async move { self.stage_renew(grant)?.commit() })
    }

    fn release(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(async move { self.stage_release(grant)?.commit() })
    }

    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        self.read(move |state, now_ms| state.read_lease(&key, now_ms))
    }
}
