//! [`StagedFile`]: a new generation of a file, written beside its
//! destination and renamed over it only once it is complete and synced.
//!
//! Invariants:
//! - A staged file is created exclusively (`create_new`) as
//!   `<destination>.tmp-<pid>-<seq>` in the destination's directory, so the
//!   rename that replaces the destination is atomic.
//! - Everything written is counted: past its limit the write stops with
//!   `TooLarge` and the staged file is removed.
//! - Until [`commit`](StagedFile::commit) renames it, dropping a staged
//!   file removes it; the destination is never touched.
//! - The commit point is the rename: a failure before it leaves the
//!   destination as it was; after it (syncing the directory) the new
//!   generation is in place but its durability unknown.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::ControlPlaneError;
use crate::file::document;
use crate::store::StoreState;

/// Makes staged names unique within the process.
static NEXT_SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// `path` with `suffix` appended to its file name.
pub(crate) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().map(OsString::from).unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Whether `name` is a staged name of `destination`:
/// `<destination>.tmp-<digits>-<digits>`, nothing looser.
fn is_staged_name(destination: &Path, name: &[u8]) -> bool {
    let mut prefix = destination
        .file_name()
        .map(OsString::from)
        .unwrap_or_default();
    prefix.push(".tmp-");
    let Some(numbers) = name.strip_prefix(prefix.as_encoded_bytes()) else {
        return false;
    };
    let mut parts = numbers.split(|byte| *byte == b'-');
    let mut number = || {
        parts
            .next()
            .is_some_and(|part| !part.is_empty() && part.iter().all(u8::is_ascii_digit))
    };
    number() && number() && parts.next().is_none()
}

fn storage(operation: &'static str) -> impl FnOnce(io::Error) -> ControlPlaneError {
    move |source| ControlPlaneError::Storage { operation, source }
}

/// Removes staged generations of `destination` left by a writer that died
/// before renaming them; returns how many. Only the lock owner may call it.
///
/// # Errors
///
/// [`ControlPlaneError::Storage`] when the directory cannot be listed or a
/// leftover cannot be removed.
pub(crate) fn remove_leftovers(destination: &Path) -> Result<usize, ControlPlaneError> {
    let mut removed = 0;
    for entry in fs::read_dir(directory_of(destination)).map_err(storage("list directory"))? {
        let entry = entry.map_err(storage("list directory"))?;
        if is_staged_name(destination, entry.file_name().as_encoded_bytes()) {
            match fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(storage("remove leftover")(error)),
            }
        }
    }
    if removed > 0 {
        tracing::info!(
            removed,
            "removed staged files left by an interrupted writer"
        );
    }
    Ok(removed)
}

/// Why a commit failed, relative to its commit point.
#[derive(Debug)]
pub(crate) enum CommitFailed {
    /// The rename did not happen: the destination is as it was.
    BeforeRename(ControlPlaneError),
    /// The rename happened but the directory could not be synced.
    AfterRename(ControlPlaneError),
}

/// A complete new generation beside its destination, not yet renamed.
#[derive(Debug)]
pub(crate) struct StagedFile {
    file: File,
    path: PathBuf,
    destination: PathBuf,
    /// Bytes written into it.
    len: u64,
    renamed: bool,
}

impl StagedFile {
    fn create(destination: &Path) -> Result<Self, ControlPlaneError> {
        let sequence = NEXT_SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let path = sibling(
            destination,
            &format!(".tmp-{}-{sequence}", std::process::id()),
        );
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(storage("create temporary"))?;
        Ok(Self {
            file,
            path,
            destination: destination.to_path_buf(),
            len: 0,
            renamed: false,
        })
    }

    /// Writes `state` as a checksummed document straight into a new staged
    /// generation of `destination`, refusing past `limit` bytes.
    ///
    /// # Errors
    ///
    /// `TooLarge` naming `what` past the limit; `Storage` when creating or
    /// writing fails (a full disk keeps its kind, `StorageFull`). The
    /// staged file is removed either way.
    pub(crate) fn encode(
        destination: &Path,
        state: &StoreState,
        limit: u64,
        what: &'static str,
    ) -> Result<Self, ControlPlaneError> {
        let mut staged = Self::create(destination)?;
        let mut writer = LimitedWriter {
            inner: BufWriter::new(&mut staged.file),
            written: 0,
            limit,
            exceeded: false,
        };
        let encoded = document::write(&mut writer, state);
        if writer.exceeded {
            return Err(ControlPlaneError::TooLarge { what, limit });
        }
        encoded.map_err(storage("write"))?;
        writer.inner.flush().map_err(storage("write"))?;
        let written = writer.written;
        drop(writer);
        staged.len = written;
        Ok(staged)
    }

    /// Copies `source` into a new staged generation of `destination`,
    /// refusing a source over `limit` bytes before or while copying.
    ///
    /// # Errors
    ///
    /// `TooLarge` naming `what` over the limit; `Storage` when reading or
    /// writing fails. The staged file is removed either way.
    pub(crate) fn copy_from(
        destination: &Path,
        source: &mut File,
        limit: u64,
        what: &'static str,
    ) -> Result<Self, ControlPlaneError> {
        let length = source.metadata().map_err(storage("read"))?.len();
        if length > limit {
            return Err(ControlPlaneError::TooLarge { what, limit });
        }
        let mut staged = Self::create(destination)?;
        let mut writer = BufWriter::new(&mut staged.file);
        let copied = io::copy(&mut source.take(limit.saturating_add(1)), &mut writer)
            .map_err(storage("copy"))?;
        if copied > limit {
            return Err(ControlPlaneError::TooLarge { what, limit });
        }
        writer.flush().map_err(storage("write"))?;
        drop(writer);
        staged.len = copied;
        Ok(staged)
    }

    /// The staged generation, rewound, to be read back and validated.
    ///
    /// # Errors
    ///
    /// `Storage` when the file cannot be rewound.
    pub(crate) fn rewound(&mut self) -> Result<&mut File, ControlPlaneError> {
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(storage("read"))?;
        Ok(&mut self.file)
    }

    /// Flushes the staged generation to stable storage.
    ///
    /// # Errors
    ///
    /// `Storage` with operation `sync`.
    pub(crate) fn sync(&self) -> Result<(), ControlPlaneError> {
        self.file.sync_all().map_err(storage("sync"))
    }

    /// Bytes in the staged generation.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Where the staged generation is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the staged generation over its destination, then syncs the
    /// directory so the rename itself is durable.
    ///
    /// # Errors
    ///
    /// [`CommitFailed`], saying whether the rename happened.
    pub(crate) fn commit(mut self) -> Result<(), CommitFailed> {
        fs::rename(&self.path, &self.destination)
            .map_err(|error| CommitFailed::BeforeRename(storage("rename")(error)))?;
        self.renamed = true;
        File::open(directory_of(&self.destination))
            .and_then(|directory| directory.sync_all())
            .map_err(|error| CommitFailed::AfterRename(storage("sync directory")(error)))
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if self.renamed {
            return;
        }
        if let Err(error) = fs::remove_file(&self.path) {
            // The next open removes it.
            tracing::warn!(path = %self.path.display(), %error, "could not remove a staged file");
        }
    }
}

/// Counts bytes on their way to `inner` and refuses past `limit`.
struct LimitedWriter<W> {
    inner: W,
    written: u64,
    limit: u64,
    exceeded: bool,
}

impl<W: Write> Write for LimitedWriter<W> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let after = self.written.saturating_add(buffer.len() as u64);
        if after > self.limit {
            self.exceeded = true;
            return Err(io::Error::other("past the size limit"));
        }
        let written = self.inner.write(buffer)?;
        self.written = self.written.saturating_add(written as u64);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
