//! [`FileOptions`]: the limits and clock a [`FileClient`] opens with.
//!
//! Invariants:
//! - Limits only ever tighten the defaults: [`StoreLimits::FILE_DECODED`]
//!   for the decoded state, [`MAX_STATE_FILE_BYTES`] for files.

use std::path::Path;
use std::sync::Arc;

use crate::clock::{Clock, SystemClock};
use crate::error::ControlPlaneError;
use crate::file::FileClient;
use crate::store::StoreLimits;

/// The largest state file or backup, in bytes of V1 JSON: 16 MiB.
pub const MAX_STATE_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// How a [`FileClient`] opens: limits that only tighten the defaults, and
/// the clock registrations and leases expire by.
///
/// ```
/// use provider_pools_control_plane::file::FileOptions;
/// use provider_pools_control_plane::StoreLimits;
///
/// let options = FileOptions::new()
///     .with_limits(StoreLimits { max_records: 1_000, max_bytes: 1 << 20 })?
///     .with_max_file_bytes(1 << 20)?;
/// # Ok::<(), provider_pools_control_plane::ControlPlaneError>(())
/// ```
#[derive(Debug, Clone)]
pub struct FileOptions {
    pub(crate) limits: StoreLimits,
    pub(crate) max_file_bytes: u64,
    pub(crate) clock: Arc<dyn Clock>,
}

impl FileOptions {
    /// The defaults: [`StoreLimits::FILE_DECODED`] (262,144 records, 64 MiB
    /// estimated), files of at most [`MAX_STATE_FILE_BYTES`], and wall time
    /// ([`SystemClock`]), the only clock that survives a restart.
    pub fn new() -> Self {
        Self {
            limits: StoreLimits::FILE_DECODED,
            max_file_bytes: MAX_STATE_FILE_BYTES,
            clock: Arc::new(SystemClock),
        }
    }

    /// Tighter limits on the decoded state.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `max_records` or `max_bytes`
    /// when zero or above [`StoreLimits::FILE_DECODED`].
    pub fn with_limits(mut self, limits: StoreLimits) -> Result<Self, ControlPlaneError> {
        self.limits = limits.within(StoreLimits::FILE_DECODED)?;
        Ok(self)
    }

    /// A tighter bound on the state file and backups, in bytes.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `max_file_bytes` when zero or
    /// above [`MAX_STATE_FILE_BYTES`].
    pub fn with_max_file_bytes(mut self, bytes: u64) -> Result<Self, ControlPlaneError> {
        if bytes == 0 || bytes > MAX_STATE_FILE_BYTES {
            return Err(ControlPlaneError::invalid(
                "max_file_bytes",
                format!("{bytes}, must be 1–{MAX_STATE_FILE_BYTES}"),
            ));
        }
        self.max_file_bytes = bytes;
        Ok(self)
    }

    /// Another clock (tests use a [`ManualClock`](crate::clock::ManualClock)).
    /// Expiry instants are persisted, so the clock must keep its meaning
    /// across restarts: wall time does, a process-local clock does not.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Opens the state file at `path` with these options; see
    /// [`FileClient::open`].
    ///
    /// # Errors
    ///
    /// As [`FileClient::open`].
    pub fn open(self, path: impl AsRef<Path>) -> Result<FileClient, ControlPlaneError> {
        FileClient::open_with(path.as_ref(), self)
    }
}

impl Default for FileOptions {
    fn default() -> Self {
        Self::new()
    }
}
