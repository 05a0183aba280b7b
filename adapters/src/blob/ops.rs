//! The blob operations: head, get (streamed), put, delete, list. Every file
//! system call runs as a bounded provider job; every open handle is a pooled,
//! accounted connection; every byte returned is staged against the request.

use std::fs;
use std::io::{Read, Write};

use provider_pools_actors::{
    Bytes, JobError, OriginKind, PooledConnection, ProviderPools, RunningRequest, StagedOutput,
};

use crate::blob::file::{BlobFile, BlobOpener, Mode};
use crate::blob::root::{BlobRoot, PathRefusal};
use crate::blob::{BlobError, BlobKey, BlobLimits, BlobMeta};

/// Runs blocking file-system work for `running` on a worker slot (charged to
/// its tenant's worker share first) and waits for it.
async fn on_worker<T, F>(
    pools: &ProviderPools,
    running: &RunningRequest,
    work: F,
) -> Result<T, BlobError>
where
    F: FnOnce() -> Result<T, BlobError> + Send + 'static,
    T: Send + 'static,
{
    let job = pools
        .spawn_blocking_for(running, work)
        .await
        .map_err(BlobError::Job)?;
    job.join().await.map_err(BlobError::Job)?
}

/// [`on_worker`], waiting no later than `deadline`: past it the work runs
/// on to its end, owning what it was given, and the caller hears
/// [`BlobError::Timeout`].
async fn on_worker_until<T, F>(
    pools: &ProviderPools,
    running: &RunningRequest,
    deadline: tokio::time::Instant,
    work: F,
) -> Result<T, BlobError>
where
    F: FnOnce() -> Result<T, BlobError> + Send + 'static,
    T: Send + 'static,
{
    tokio::time::timeout_at(deadline, on_worker(pools, running, work))
        .await
        .unwrap_or(Err(BlobError::Timeout))
}

fn root_of(running: &RunningRequest) -> Result<String, BlobError> {
    let client = running.client();
    if client.kind() != OriginKind::Blob {
        return Err(BlobError::NotBlob);
    }
    Ok(client.target().to_owned())
}

/// The size of the object stored under `key`.
///
/// # Cancel safety
///
/// Dropping the future leaves the read-only job to finish on its slot.
///
/// # Errors
///
/// [`BlobError::Refused`] for a missing, escaping or non-file key, and the
/// job and I/O errors.
pub async fn head(
    pools: &ProviderPools,
    running: &RunningRequest,
    key: &BlobKey,
) -> Result<BlobMeta, BlobError> {
    let (root, key) = (root_of(running)?, key.clone());
    on_worker(pools, running, move || {
        let root = BlobRoot::open(&root).map_err(BlobError::io)?;
        let path = root.existing(&key).map_err(BlobError::io)??;
        let len = fs::metadata(path).map_err(BlobError::io)?.len();
        Ok(BlobMeta { key, len })
    })
    .await
}

/// Removes the object stored under `key`.
///
/// # Cancel safety
///
/// Once its job started the removal happens; only the answer is lost.
///
/// # Errors
///
/// As [`head`].
pub async fn delete(
    pools: &ProviderPools,
    running: &RunningRequest,
    key: &BlobKey,
) -> Result<(), BlobError> {
    let (root, key) = (root_of(running)?, key.clone());
    on_worker(pools, running, move || {
        let root = BlobRoot::open(&root).map_err(BlobError::io)?;
        let path = root.existing(&key).map_err(BlobError::io)??;
        fs::remove_file(path).map_err(BlobError::io)
    })
    .await
}

/// The keys of the regular files directly under `prefix` (or the root),
/// sorted; at most `limits.max_list`.
///
/// # Cancel safety
///
/// As [`head`].
///
/// # Errors
///
/// [`BlobError::TooMany`] past `limits.max_list`, and as [`head`].
pub async fn list(
    pools: &ProviderPools,
    running: &RunningRequest,
    prefix: Option<&BlobKey>,
    limits: BlobLimits,
) -> Result<Vec<String>, BlobError> {
    limits.check()?;
    let (root, prefix) = (root_of(running)?, prefix.cloned());
    on_worker(pools, running, move || {
        let root = BlobRoot::open(&root).map_err(BlobError::io)?;
        let dir = root.directory(prefix.as_ref()).map_err(BlobError::io)??;
        let mut keys = Vec::new();
        for entry in fs::read_dir(dir).map_err(BlobError::io)? {
            let entry = entry.map_err(BlobError::io)?;
            let regular = entry.file_type().map_err(BlobError::io)?.is_file();
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !regular || name.starts_with('.') {
                continue; // symlinks, directories, partial uploads
            }
            if keys.len() == limits.max_list {
                return Err(BlobError::TooMany {
                    limit: limits.max_list,
                });
            }
            keys.push(match &prefix {
                Some(prefix) => format!("{prefix}/{name}"),
                None => name,
            });
        }
        keys.sort_unstable();
        Ok(keys)
    })
    .await
}

/// Stores `body` under `key`, atomically: written to a temporary file (the
/// pooled, accounted handle) and renamed into place.
///
/// # Cancel safety
///
/// Dropping the future before the rename leaves nothing under `key`; the
/// temporary file is removed with its handle.
///
/// # Errors
///
/// [`BlobError::TooLarge`] before any file is opened when `body` exceeds
/// `limits.max_object`; [`BlobError::Connect`] when no handle can be
/// charged; as [`head`].
pub async fn put(
    pools: &ProviderPools,
    running: &RunningRequest,
    key: &BlobKey,
    body: Bytes,
    limits: BlobLimits,
) -> Result<BlobMeta, BlobError> {
    limits.check()?;
    let len = body.len() as u64;
    crate::limits::object_within(len, limits.max_object)?;
    root_of(running)?;
    let opener = BlobOpener {
        pools: pools.clone(),
        running: running.clone(),
        key: key.clone(),
        mode: Mode::Write,
    };
    let mut handle = pools
        .reserve_connection(running, &opener)
        .await
        .map_err(BlobError::Connect)?;
    let (file, temp, dest) = match handle.get_mut() {
        BlobFile::Writing {
            file,
            temp: Some(temp),
            dest,
        } => (file.take(), temp.clone(), dest.clone()),
        BlobFile::Writing { .. } => return Err(BlobError::Closed),
        BlobFile::Refused(why) => return Err(BlobError::Refused(why.clone())),
        BlobFile::Reading { .. } => return Err(BlobError::NotBlob),
    };
    let file = file.ok_or(BlobError::Closed)?;
    let file = on_worker(pools, running, move || {
        let mut file = file;
        file.write_all(&body).map_err(BlobError::io)?;
        file.sync_all().map_err(BlobError::io)?;
        fs::rename(&temp, &dest).map_err(BlobError::io)?;
        Ok(file)
    })
    .await?;
    // Committed: nothing left to remove; the handle closes with `handle`.
    if let BlobFile::Writing {
        file: slot, temp, ..
    } = handle.get_mut()
    {
        *slot = Some(file);
        *temp = None;
    }
    drop(handle);
    Ok(BlobMeta {
        key: key.clone(),
        len,
    })
}

/// Opens the object under `key` for streaming.
///
/// # Cancel safety
///
/// Dropping the future closes any handle it opened and returns its charge.
///
/// # Errors
///
/// [`BlobError::TooLarge`] when the object exceeds `limits.max_object`, and
/// as [`put`].
pub async fn get(
    pools: &ProviderPools,
    running: &RunningRequest,
    key: &BlobKey,
    limits: BlobLimits,
) -> Result<BlobReader, BlobError> {
    limits.check()?;
    root_of(running)?;
    let opener = BlobOpener {
        pools: pools.clone(),
        running: running.clone(),
        key: key.clone(),
        mode: Mode::Read,
    };
    let handle = pools
        .reserve_connection(running, &opener)
        .await
        .map_err(BlobError::Connect)?;
    let len = match handle.get() {
        BlobFile::Reading { len, .. } => *len,
        BlobFile::Refused(why) => return Err(BlobError::Refused(why.clone())),
        BlobFile::Writing { .. } => return Err(BlobError::NotBlob),
    };
    crate::limits::object_within(len, limits.max_object)?;
    Ok(BlobReader {
        pools: pools.clone(),
        running: running.clone(),
        handle: Some(handle),
        remaining: len,
        chunk: limits.chunk.max(1),
    })
}

/// A streamed object. It holds its open handle and the request's running
/// owner until it is finished or dropped.
pub struct BlobReader {
    pools: ProviderPools,
    running: RunningRequest,
    handle: Option<PooledConnection<BlobFile>>,
    remaining: u64,
    chunk: usize,
}

impl BlobReader {
    /// Bytes not yet read.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// The next chunk, charged against the request; `None` at the end, when
    /// the handle is closed.
    ///
    /// Reads honour the request's deadline: past it, no read starts, and a
    /// read still running is left to finish on its worker slot, which owns
    /// the open handle meanwhile and destroys it (then returns its charge)
    /// when done.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future mid-read loses the handle: the read's job keeps
    /// it until the job ends, then closes it and returns its charge; the
    /// reader ends.
    ///
    /// # Errors
    ///
    /// [`BlobError::Timeout`] once the request's deadline has passed,
    /// [`BlobError::Job`] when no worker slot could run the read or the job
    /// failed, [`BlobError::Io`] for a failed read, [`BlobError::Truncated`]
    /// when the file ended before its recorded length,
    /// [`BlobError::Closed`] when the handle is no longer a reader, and
    /// [`BlobError::Staging`] when the chunk does not fit the request's
    /// output charge. After a `Timeout`, `Job`, `Io` or `Truncated` error
    /// the handle is gone and the next call returns `None`.
    pub async fn next_chunk(&mut self) -> Option<Result<StagedOutput, BlobError>> {
        if self.remaining == 0 {
            self.handle = None; // closes the file, then returns its charge
            return None;
        }
        let mut handle = self.handle.take()?;
        let deadline = self.running.deadline();
        if tokio::time::Instant::now() >= deadline {
            drop(handle);
            return Some(Err(BlobError::Timeout));
        }
        if !matches!(handle.get(), BlobFile::Reading { file: Some(_), .. }) {
            return Some(Err(BlobError::Closed));
        }
        let want = self
            .chunk
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        // The job owns the handle while it reads: a read that outlives the
        // deadline (or this future) closes it when done.
        let read = on_worker_until(&self.pools, &self.running, deadline, move || {
            let buf = read_chunk(&mut handle, want)?;
            Ok((handle, buf))
        })
        .await;
        let (handle, buf) = match read {
            Ok(read) => read,
            Err(e) => return Some(Err(e)),
        };
        if buf.is_empty() {
            return Some(Err(BlobError::Truncated));
        }
        self.handle = Some(handle);
        self.remaining -= buf.len() as u64;
        Some(
            self.running
                .stage_output(Bytes::from(buf))
                .map_err(BlobError::Staging),
        )
    }
}

/// Reads up to `want` bytes from `handle`'s open file (on a worker).
fn read_chunk(handle: &mut PooledConnection<BlobFile>, want: usize) -> Result<Vec<u8>, BlobError> {
    let BlobFile::Reading {
        file: Some(file), ..
    } = handle.get_mut()
    else {
        return Err(BlobError::Closed);
    };
    let mut buf = vec![0; want];
    let n = file.read(&mut buf).map_err(BlobError::io)?;
    buf.truncate(n);
    Ok(buf)
}

impl std::fmt::Debug for BlobReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobReader")
            .field("remaining", &self.remaining)
            .finish_non_exhaustive()
    }
}

impl From<PathRefusal> for BlobError {
    fn from(refusal: PathRefusal) -> Self {
        BlobError::Refused(refusal)
    }
}

impl From<JobError> for BlobError {
    fn from(e: JobError) -> Self {
        BlobError::Job(e)
    }
}
