//! [`StateLock`]: the exclusive advisory lock that makes one client the
//! only owner of a state file.
//!
//! Invariants:
//! - The lock is an OS file lock (`flock` on Unix, `LockFileEx` on Windows)
//!   on `<state>.lock`, held as long as the client lives; the kernel drops
//!   it when the process dies, so a crashed owner never locks out its
//!   restart.
//! - The lock file itself stays on disk: removing it could let two clients
//!   lock two different files under one name.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use crate::error::ControlPlaneError;
use crate::file::staged_file::sibling;

/// The held lock on a state file.
#[derive(Debug)]
pub(crate) struct StateLock {
    _file: File,
    path: PathBuf,
}

impl StateLock {
    /// Takes the lock beside `state_path` without waiting.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Storage`] with operation `lock` and kind
    /// `WouldBlock` when another client holds it; `open lock` when the lock
    /// file cannot be opened.
    pub(crate) fn acquire(state_path: &Path) -> Result<Self, ControlPlaneError> {
        let path = sibling(state_path, ".lock");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|source| ControlPlaneError::Storage {
                operation: "open lock",
                source,
            })?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file, path }),
            Err(TryLockError::WouldBlock) => Err(ControlPlaneError::Storage {
                operation: "lock",
                source: io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "the state file is owned by another client",
                ),
            }),
            Err(TryLockError::Error(source)) => Err(ControlPlaneError::Storage {
                operation: "lock",
                source,
            }),
        }
    }

    /// The lock file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}
