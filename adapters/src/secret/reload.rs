//! The trusted operator's path: [`reload`] a secret from its file into the
//! origin's cache, [`forget`] it. Never a guest path: it takes the
//! operator's provider and slot, not a running request.
//!
//! A reload runs in four steps:
//! 1. lease the slot's client and its cache; refuse at once if the cache is
//!    full;
//! 2. open the file and read its size, on a `control_blocking` job — no
//!    byte of it is read;
//! 3. refuse a file over `max_secret_bytes`, then prepay the candidate
//!    material, the source buffer and the cache entry for that size;
//! 4. read the file under a shared lock into the prepaid buffers and
//!    install the new version, on a second `control_blocking` job that
//!    owns the prepayment and the client lease until it really ends.

use provider_pools_actors::{OriginKind, ProviderId, ProviderPools, TypedSlot};
use tokio::time::Instant;

use crate::secret::cache::{Candidate, SecretCache};
use crate::secret::{
    source, SecretError, SecretName, AUDIT_TARGET, ENTRY_OVERHEAD, MATERIAL_OVERHEAD,
};

/// What a successful reload installed. Never the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reloaded {
    /// The new version, numbered per origin and epoch.
    pub version: u64,
    /// Its length in bytes.
    pub len: usize,
    /// When the cache stops serving it.
    pub expires_at: Instant,
}

/// The bytes a reload of a `len`-byte file named `name` prepays: the source
/// buffer (`len + 1`, one byte to see growth), the candidate material
/// (`len` plus [`MATERIAL_OVERHEAD`]) and the cache entry
/// ([`ENTRY_OVERHEAD`] plus the name). After the read, the material's and
/// the entry's parts stay charged with what they paid for; the rest
/// returns when the reload's job ends.
pub fn prepayment(len: u32, name: &SecretName) -> u32 {
    let name = u32::try_from(name.as_str().len()).unwrap_or(u32::MAX);
    len.saturating_add(1)
        .saturating_add(len.saturating_add(MATERIAL_OVERHEAD))
        .saturating_add(ENTRY_OVERHEAD.saturating_add(name))
}

/// Runs trusted operator work on a worker slot and waits for it.
async fn on_control<T, F>(pools: &ProviderPools, work: F) -> Result<T, SecretError>
where
    F: FnOnce() -> Result<T, SecretError> + Send + 'static,
    T: Send + 'static,
{
    let job = pools
        .control_blocking(work)
        .await
        .map_err(SecretError::Job)?;
    job.join().await.map_err(SecretError::Job)?
}

/// Reloads the secret `name` of the secret origin at `slot` of `provider`
/// from its file, installing a new version in the origin's cache. Guest
/// reads keep getting the previous version until the new one is installed,
/// and whoever holds the previous one keeps it.
///
/// Trusted operator work: it runs on `control_blocking` and constructs no
/// guest authority.
///
/// # Cancel safety
///
/// Dropped before the read job is submitted, the reload leaves the cache
/// unchanged and returns its prepayment at once. Once submitted, the job
/// runs to completion and installs its material; only the answer is lost,
/// and the job keeps its prepayment, its worker slot and the client's
/// epoch until it really ends.
///
/// # Errors
///
/// [`SecretError::Lookup`] for an unusable slot; [`SecretError::Setting`];
/// [`SecretError::Full`] before any I/O; [`SecretError::Directory`],
/// [`SecretError::NotFound`], [`SecretError::Escapes`],
/// [`SecretError::NotAFile`], [`SecretError::PermissionDenied`] when
/// opening; [`SecretError::TooLarge`] before any byte is read or prepaid;
/// [`SecretError::Capacity`] when the prepayment is refused;
/// [`SecretError::Grew`] and [`SecretError::Superseded`] leave the cache
/// unchanged; [`SecretError::Job`] and [`SecretError::Io`].
pub async fn reload(
    pools: &ProviderPools,
    provider: &ProviderId,
    slot: &TypedSlot,
    name: &SecretName,
) -> Result<Reloaded, SecretError> {
    let outcome = reload_inner(pools, provider, slot, name).await;
    match &outcome {
        Ok(done) => tracing::info!(
            target: AUDIT_TARGET,
            provider = %provider,
            name = %name,
            version = done.version,
            len = done.len,
            outcome = "reloaded",
            "secret reloaded"
        ),
        Err(e) => tracing::warn!(
            target: AUDIT_TARGET,
            provider = %provider,
            name = %name,
            outcome = e.code(),
            "secret reload failed: {e}"
        ),
    }
    outcome
}

async fn reload_inner(
    pools: &ProviderPools,
    provider: &ProviderId,
    slot: &TypedSlot,
    name: &SecretName,
) -> Result<Reloaded, SecretError> {
    let lease = pools
        .client(provider, slot, OriginKind::Secret)
        .map_err(SecretError::Lookup)?;
    let cache = lease.adapter_state(SecretCache::build)?;
    cache.check_room(name, Instant::now())?;

    let opened = {
        let (dir, name) = (cache.dir().to_owned(), name.clone());
        on_control(pools, move || source::open(&dir, &name)).await?
    };
    let limit = cache.settings().max_secret_bytes;
    let len = match u32::try_from(opened.len()) {
        Ok(len) if len <= limit => len,
        _ => {
            return Err(SecretError::TooLarge {
                len: opened.len(),
                limit,
            })
        }
    };
    let mut prepaid = pools
        .prepay(prepayment(len, name))
        .map_err(SecretError::Capacity)?;

    let name = name.clone();
    on_control(pools, move || {
        // The lease keeps the epoch, and so its cache, until installed.
        let _lease = lease;
        let (bytes, read) = source::read(opened, || cache.next_read())?;
        // The source buffer is gone; split what stays from what returns.
        let used = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        let name_len = u32::try_from(name.as_str().len()).unwrap_or(u32::MAX);
        let grew = SecretError::Grew {
            prepaid: u64::from(len),
        };
        let material = prepaid
            .split(used.saturating_add(MATERIAL_OVERHEAD))
            .ok_or_else(|| grew.clone())?;
        let entry = prepaid
            .split(ENTRY_OVERHEAD.saturating_add(name_len))
            .ok_or(grew)?;
        drop(prepaid);
        let candidate = Candidate {
            name,
            bytes,
            read,
            material,
            entry,
        };
        cache.install(candidate, Instant::now())
    })
    .await
}

/// Drops the cached material of `name` from the secret origin at `slot`:
/// later guest reads answer [`SecretError::NotLoaded`]. Guests that hold a
/// value keep it, charged, until they drop it.
///
/// # Errors
///
/// [`SecretError::Lookup`] for an unusable slot and
/// [`SecretError::Setting`].
pub fn forget(
    pools: &ProviderPools,
    provider: &ProviderId,
    slot: &TypedSlot,
    name: &SecretName,
) -> Result<bool, SecretError> {
    let lease = pools
        .client(provider, slot, OriginKind::Secret)
        .map_err(SecretError::Lookup)?;
    let forgotten = lease.adapter_state(SecretCache::build)?.forget(name);
    tracing::info!(
        target: AUDIT_TARGET,
        provider = %provider,
        name = %name,
        outcome = if forgotten { "forgotten" } else { "not_loaded" },
        "secret forgotten"
    );
    Ok(forgotten)
}
