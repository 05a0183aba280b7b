//! Backup and restore of a [`FileClient`]'s state: one bounded file streamed
//! into a staged generation, validated, synced, then renamed into place.
//!
//! Invariants:
//! - The staged generation is decoded back under the client's caps, its
//!   checksum verified first, before it replaces anything: a corrupt,
//!   altered or oversized file never does.
//! - A version-1 backup (no checksum) is restored as a version-2 state
//!   file: the restored state is encoded afresh, and that generation is
//!   decoded back before it replaces the state file.
//! - A restored state file is covered by the full-disk reserve before its
//!   rename, as every other write.
//! - Both run under the state lock: no mutation interleaves, so a backup
//!   is exactly the state file of one instant.
//! - A restore replaces the state file before the state in memory, and
//!   only once the file is in place; any failure before that leaves both
//!   as they were.
//! - A restore never moves a fencing token back: every lease slot of the
//!   live state must be in the backup with a token at least as high.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::error::ControlPlaneError;
use crate::file::document::{self, Format};
use crate::file::staged_file::{CommitFailed, StagedFile};
use crate::file::FileClient;
use crate::store::StoreState;

impl FileClient {
    /// Writes a backup of the state to `destination`, replacing it
    /// atomically once the new copy is complete, valid and synced.
    ///
    /// Blocks, and holds the state lock, while it copies at most 16 MiB.
    /// A backup interrupted by a crash may leave a
    /// `<destination>.tmp-<pid>-<seq>` file beside the destination.
    ///
    /// # Errors
    ///
    /// - [`ControlPlaneError::Invalid`] naming `destination` when it names
    ///   no file or is the state file;
    /// - [`ControlPlaneError::TooLarge`], [`ControlPlaneError::Corrupt`] or
    ///   [`ControlPlaneError::LimitExceeded`] when the copy does not
    ///   validate;
    /// - [`ControlPlaneError::Storage`] when reading, writing, syncing or
    ///   renaming fails.
    ///
    /// The destination is unchanged unless the backup succeeded (or only
    /// the final directory sync failed).
    pub fn backup_to(&self, destination: impl AsRef<Path>) -> Result<(), ControlPlaneError> {
        let destination = destination.as_ref();
        if destination.file_name().is_none() || destination == self.path {
            return Err(ControlPlaneError::invalid(
                "destination",
                "must name a file other than the state file",
            ));
        }
        let state = self.lock();
        let mut staged = match File::open(&self.path) {
            Ok(mut source) => {
                StagedFile::copy_from(destination, &mut source, self.max_file_bytes, "state file")?
            }
            // Nothing was ever written: the backup is the (empty) state.
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                StagedFile::encode(destination, &state, self.max_file_bytes, "backup")?
            }
            Err(source) => {
                return Err(ControlPlaneError::Storage {
                    operation: "open",
                    source,
                })
            }
        };
        let _valid = document::decode(
            staged.rewound()?,
            self.max_file_bytes,
            state.limits(),
            "backup",
        )?;
        staged.sync()?;
        staged.commit().map_err(|failed| match failed {
            CommitFailed::BeforeRename(error) | CommitFailed::AfterRename(error) => error,
        })
    }

    /// Replaces the state, on disk then in memory, by the backup at
    /// `backup`.
    ///
    /// Blocks, and holds the state lock, while it copies at most 16 MiB.
    ///
    /// # Errors
    ///
    /// - [`ControlPlaneError::TooLarge`] over 16 MiB,
    ///   [`ControlPlaneError::Corrupt`] (naming `backup`) or
    ///   [`ControlPlaneError::LimitExceeded`] when it does not decode under
    ///   the caps;
    /// - [`ControlPlaneError::Invalid`] naming `backup` when it is not a
    ///   regular file, or when it would move a lease's fencing token back
    ///   (a lease of the live state missing or with a lower token);
    /// - [`ControlPlaneError::Storage`] when reading, writing, syncing or
    ///   renaming fails.
    ///
    /// On any error but a failed directory sync after the rename (where the
    /// restored state is in place in the file and in memory), the state is
    /// unchanged in memory and on disk.
    pub fn restore_from(&self, backup: impl AsRef<Path>) -> Result<(), ControlPlaneError> {
        let mut state = self.lock();
        let mut source =
            File::open(backup.as_ref()).map_err(|source| ControlPlaneError::Storage {
                operation: "open backup",
                source,
            })?;
        let is_file = source
            .metadata()
            .map_err(|source| ControlPlaneError::Storage {
                operation: "open backup",
                source,
            })?
            .is_file();
        if !is_file {
            return Err(ControlPlaneError::invalid(
                "backup",
                "is not a regular file",
            ));
        }
        let mut staged =
            StagedFile::copy_from(&self.path, &mut source, self.max_file_bytes, "backup")?;
        let (restored, format) = document::decode(
            staged.rewound()?,
            self.max_file_bytes,
            state.limits(),
            "backup",
        )?;
        keeps_every_token(&state, &restored)?;
        if format == Format::Legacy {
            staged = StagedFile::encode(&self.path, &restored, self.max_file_bytes, "backup")?;
            let _same = document::decode(
                staged.rewound()?,
                self.max_file_bytes,
                state.limits(),
                "backup",
            )?;
        }
        staged.sync()?;
        self.reserve().ensure(staged.len())?;
        match staged.commit() {
            Ok(()) => {
                *state = restored;
                Ok(())
            }
            Err(CommitFailed::BeforeRename(error)) => Err(error),
            Err(CommitFailed::AfterRename(error)) => {
                *state = restored;
                Err(error)
            }
        }
    }
}

/// Refuses a restore that would let a lease's fencing token go back.
fn keeps_every_token(live: &StoreState, restored: &StoreState) -> Result<(), ControlPlaneError> {
    for (key, record) in &live.leases {
        match restored.leases.get(key) {
            Some(restored) if restored.token >= record.token => {}
            Some(restored) => {
                return Err(ControlPlaneError::invalid(
                    "backup",
                    format!(
                        "lease {key} would go back from token {} to {}",
                        record.token, restored.token
                    ),
                ))
            }
            None => {
                return Err(ControlPlaneError::invalid(
                    "backup",
                    format!(
                        "lease {key} (token {}) is missing; its tokens would start again",
                        record.token
                    ),
                ))
            }
        }
    }
    Ok(())
}
