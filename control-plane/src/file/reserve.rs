//! [`Reserve`]: disk space kept beside the state file, in
//! `<state>.reserve`, so that a release or a deregistration can still be
//! written when the disk is full.
//!
//! Every mutation writes a whole new generation beside the state file
//! before it renames it over the old one, so even a shrinking change needs
//! room for a second copy. The reserve holds that room.
//!
//! Invariants:
//! - After every committed mutation that does not draw on it, the reserve
//!   holds at least [`target`] bytes of the state file's length (the
//!   length, plus [`SLACK`], rounded up to [`CHUNK`]): a mutation that
//!   cannot keep that much is refused before its rename, so the state never
//!   grows past what its own release can be written in.
//! - Only a release or a deregistration draws on it, and only when its
//!   staged write fails because the disk is full: the reserve is emptied
//!   (its blocks freed), the write retried once — it fits, being at most
//!   the old length plus [`SLACK`] — and the reserve regrown after the
//!   rename, as far as the space the old generation freed allows.
//! - The reserve's bytes are written and synced, not a sparse `set_len`:
//!   the space is allocated, not promised. (A copy-on-write or compressing
//!   filesystem may not honour that; the file profile requires a local
//!   filesystem such as ext4, xfs or tmpfs.)
//! - A reserve that cannot be made at open (the disk already full) is
//!   logged and left short; the next mutation that needs it retries.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::ControlPlaneError;
use crate::file::staged_file::sibling;

/// How much a release or a deregistration may grow the state file (a
/// released holder of one byte, `"a"`, becomes `null`), with a wide margin.
pub(crate) const SLACK: u64 = 4 * 1024;
/// The reserve grows in steps of this much, so most mutations find it
/// large enough and write nothing to it.
pub(crate) const CHUNK: u64 = 64 * 1024;
/// Bytes written at a time while growing.
const WRITE_BYTES: usize = 64 * 1024;

/// The reserve a state file of `state_len` bytes needs.
pub(crate) fn target(state_len: u64) -> u64 {
    state_len
        .saturating_add(SLACK)
        .div_ceil(CHUNK)
        .saturating_mul(CHUNK)
}

/// Whether `error` says the disk (or the caller's quota) is full.
pub(crate) fn is_full(error: &ControlPlaneError) -> bool {
    matches!(
        error,
        ControlPlaneError::Storage { source, .. }
            if matches!(source.kind(), io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded)
    )
}

/// The reserve file of one state file, and how many bytes it holds.
#[derive(Debug)]
pub(crate) struct Reserve {
    path: PathBuf,
    len: u64,
}

impl Reserve {
    /// The reserve of the state file at `state`, grown for a state file of
    /// `state_len` bytes as far as the disk allows (a shortfall is logged:
    /// the next mutation that needs the reserve retries).
    pub(crate) fn open(state: &Path, state_len: u64) -> Self {
        let path = sibling(state, ".reserve");
        let len = std::fs::metadata(&path).map_or(0, |metadata| metadata.len());
        let mut reserve = Self { path, len };
        if let Err(error) = reserve.ensure(state_len) {
            tracing::warn!(
                path = %reserve.path.display(),
                %error,
                "could not make the full-disk reserve; releases may fail on a full disk until it is made"
            );
        }
        reserve
    }

    /// Where the reserve is.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Grows the reserve to [`target`] of `state_len`, when it is short.
    ///
    /// # Errors
    ///
    /// `Storage` with operation `reserve` when it cannot be grown and
    /// synced (a full disk keeps its kind, `StorageFull`); what was written
    /// stays in the reserve.
    pub(crate) fn ensure(&mut self, state_len: u64) -> Result<(), ControlPlaneError> {
        let wanted = target(state_len);
        if self.len >= wanted {
            return Ok(());
        }
        let storage = |source| ControlPlaneError::Storage {
            operation: "reserve",
            source,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(&self.path)
            .map_err(storage)?;
        let grown = grow(&mut file, self.len, wanted).and_then(|()| file.sync_all());
        // What actually holds blocks now, whether or not growing finished.
        self.len = file.metadata().map_or(self.len, |metadata| metadata.len());
        grown.map_err(storage)
    }

    /// Empties the reserve, freeing its blocks for a release or a
    /// deregistration about to be retried.
    ///
    /// # Errors
    ///
    /// `Storage` with operation `reserve` when it cannot be truncated (a
    /// missing reserve frees nothing and is no error).
    pub(crate) fn draw(&mut self) -> Result<(), ControlPlaneError> {
        let storage = |source| ControlPlaneError::Storage {
            operation: "reserve",
            source,
        };
        let file = match OpenOptions::new().write(true).open(&self.path) {
            Ok(file) => file,
            // Never made (the disk was full from the start): nothing to free.
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                self.len = 0;
                return Ok(());
            }
            Err(error) => return Err(storage(error)),
        };
        file.set_len(0).map_err(storage)?;
        self.len = 0;
        file.sync_all().map_err(storage)
    }
}

/// Writes bytes from `from` up to `to` (zeros: allocated blocks, not a hole).
fn grow(file: &mut File, from: u64, to: u64) -> io::Result<()> {
    file.seek(SeekFrom::Start(from))?;
    let zeros = vec![0; WRITE_BYTES];
    let mut remaining = to.saturating_sub(from);
    while remaining > 0 {
        let step = usize::try_from(remaining).map_or(WRITE_BYTES, |left| left.min(WRITE_BYTES));
        file.write_all(&zeros[..step])?;
        remaining -= step as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_covers_the_state_and_its_slack_in_whole_chunks() {
        assert_eq!(target(0), CHUNK);
        assert_eq!(target(CHUNK - SLACK), CHUNK);
        assert_eq!(target(CHUNK - SLACK + 1), 2 * CHUNK);
        assert!(target(16 * 1024 * 1024) >= 16 * 1024 * 1024 + SLACK);
    }

    #[test]
    fn a_reserve_is_written_then_emptied_when_drawn() {
        let directory = tempfile::tempdir().expect("directory");
        let state = directory.path().join("state.json");
        let mut reserve = Reserve::open(&state, 100_000);
        let on_disk = std::fs::metadata(reserve.path()).expect("reserve").len();
        assert_eq!(on_disk, target(100_000));
        reserve.draw().expect("drawn");
        assert_eq!(std::fs::metadata(reserve.path()).expect("reserve").len(), 0);
        reserve.ensure(10).expect("regrown");
        assert_eq!(
            std::fs::metadata(reserve.path()).expect("reserve").len(),
            CHUNK
        );
    }
}
