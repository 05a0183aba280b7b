//! The secret files: resolving a name under the configured directory, and
//! reading a file into a prepaid, zeroizing buffer. Blocking: every
//! function here runs inside a `control_blocking` job.
//!
//! Invariants:
//! - The file opened resolves under the canonical directory: a symlink that
//!   leads outside is refused; the final component is opened with
//!   `O_NOFOLLOW`, so a symlink swapped in after resolution is refused too.
//! - Only a regular file is read; opening never blocks (`O_NONBLOCK`), so a
//!   pipe named like a secret cannot hold a worker.
//! - A read holds a shared `flock` on the file: a writer that updates the
//!   file in place under an exclusive lock is waited for, never read torn.
//! - A read never reads more than the prepaid size plus one byte (to see
//!   growth), into a buffer allocated once at that size and zeroized on
//!   drop; the material is copied into an exact allocation, also zeroizing.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;

use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use zeroize::Zeroizing;

use crate::secret::{SecretError, SecretName};

/// An open secret file and the size it had when opened.
#[derive(Debug)]
pub(crate) struct Opened {
    file: File,
    len: u64,
}

impl Opened {
    /// The file's size when it was opened: what a reload prepays for.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }
}

fn errno(e: Errno) -> SecretError {
    match e {
        Errno::LOOP => SecretError::Escapes,
        Errno::ACCESS | Errno::PERM => SecretError::PermissionDenied,
        Errno::NOENT => SecretError::NotFound,
        other => SecretError::Io(io::Error::from(other).kind()),
    }
}

/// Opens the file stored under `name` in the directory `dir` (the origin's
/// absolute target), without reading any of it.
pub(crate) fn open(dir: &str, name: &SecretName) -> Result<Opened, SecretError> {
    let dir = Path::new(dir);
    if !dir.is_absolute() {
        return Err(SecretError::Directory(io::ErrorKind::InvalidInput));
    }
    let root = fs::canonicalize(dir).map_err(|e| SecretError::Directory(e.kind()))?;
    if !fs::metadata(&root)
        .map_err(|e| SecretError::Directory(e.kind()))?
        .is_dir()
    {
        return Err(SecretError::Directory(io::ErrorKind::NotADirectory));
    }
    // `name` is one segment: only the entry itself can be a symlink.
    let canonical = fs::canonicalize(root.join(name.as_str())).map_err(|e| SecretError::io(&e))?;
    if canonical == root {
        return Err(SecretError::NotAFile);
    }
    if !canonical.starts_with(&root) {
        return Err(SecretError::Escapes);
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = File::from(rustix::fs::open(&canonical, flags, Mode::empty()).map_err(errno)?);
    let meta = file.metadata().map_err(|e| SecretError::io(&e))?;
    if !meta.is_file() {
        return Err(SecretError::NotAFile);
    }
    Ok(Opened {
        file,
        len: meta.len(),
    })
}

/// Reads the whole of `opened` under a shared lock, refusing a file that
/// grew past the size it was opened with, and takes a number from `number`
/// while the lock is still held. Returns the material in an exact,
/// zeroizing allocation; the source buffer is zeroized before this returns.
pub(crate) fn read(
    opened: Opened,
    number: impl FnOnce() -> u64,
) -> Result<(Zeroizing<Vec<u8>>, u64), SecretError> {
    let Opened { file, len } = opened;
    loop {
        match rustix::fs::flock(&file, FlockOperation::LockShared) {
            Err(Errno::INTR) => continue,
            other => break other.map_err(errno)?,
        }
    }
    let prepaid = usize::try_from(len).map_err(|_| SecretError::Grew { prepaid: len })?;
    // One byte more than prepaid, to see growth; never reallocated.
    let mut source = Zeroizing::new(vec![0u8; prepaid + 1]);
    let mut filled = 0;
    while filled < source.len() {
        match (&file).read(&mut source[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(SecretError::io(&e)),
        }
    }
    if filled > prepaid {
        return Err(SecretError::Grew { prepaid: len });
    }
    let mut material = Zeroizing::new(Vec::with_capacity(filled));
    material.extend_from_slice(&source[..filled]);
    let read = number();
    // Closing the file releases the lock; `source` is zeroized on drop.
    drop(file);
    Ok((material, read))
}
