//! [`SecretCache`]: the canonical copies of one secret origin, kept as the
//! adapter state of the origin's client — one cache per client and epoch,
//! dropped with the epoch.
//!
//! Invariants:
//! - At most `max_secrets` entries. Every entry's record is charged
//!   ([`ENTRY_OVERHEAD`] plus its name) and so is its material; both were
//!   prepaid before the file was read.
//! - An entry is replaced under one lock, so a read sees the old version or
//!   the new one, never a mix; holders of the old copy keep it, charged,
//!   until they drop it.
//! - A reload never replaces material read after its own: reads are
//!   numbered while the file's lock is held, and an older read is discarded.
//! - Expired material is never served. The first read that finds it expired
//!   drops the cache's copy; the entry answers `Expired` until a reload.
//!
//! [`ENTRY_OVERHEAD`]: crate::secret::ENTRY_OVERHEAD

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use provider_pools_actors::{ClientLease, Prepaid};
use tokio::time::Instant;
use zeroize::Zeroizing;

use crate::secret::value::Material;
use crate::secret::{Reloaded, SecretError, SecretName, SecretSettings};

/// The cache of one secret origin on one epoch.
pub(crate) struct SecretCache {
    dir: String,
    settings: SecretSettings,
    /// Numbers reads, in the order they held the file's lock.
    reads: AtomicU64,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<SecretName, Entry>,
    /// The last version handed out.
    versions: u64,
}

struct Entry {
    /// `None` once expired material was dropped.
    material: Option<Arc<Material>>,
    version: u64,
    read: u64,
    expires_at: Instant,
    _charge: Prepaid,
}

/// Material read by a reload, with its charges, ready to install.
pub(crate) struct Candidate {
    pub(crate) name: SecretName,
    pub(crate) bytes: Zeroizing<Vec<u8>>,
    pub(crate) read: u64,
    pub(crate) material: Prepaid,
    pub(crate) entry: Prepaid,
}

impl SecretCache {
    /// An empty cache for the lease's client: its target and settings.
    pub(crate) fn build(lease: &ClientLease) -> Result<Self, SecretError> {
        Ok(Self {
            dir: lease.target().to_owned(),
            settings: SecretSettings::parse(|key| lease.setting(key))?,
            reads: AtomicU64::new(0),
            entries: Mutex::default(),
        })
    }

    pub(crate) fn dir(&self) -> &str {
        &self.dir
    }

    pub(crate) fn settings(&self) -> &SecretSettings {
        &self.settings
    }

    /// The next read number.
    pub(crate) fn next_read(&self) -> u64 {
        self.reads.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses at once when installing `name` would exceed `max_secrets`.
    pub(crate) fn check_room(&self, name: &SecretName, now: Instant) -> Result<(), SecretError> {
        let entries = self.lock();
        let limit = self.settings.max_secrets;
        let room = entries.map.contains_key(name)
            || entries.map.len() < limit
            || entries.map.values().any(|e| e.is_stale(now));
        if room {
            Ok(())
        } else {
            Err(SecretError::Full { limit })
        }
    }

    /// Installs `candidate` as the new canonical copy of its name.
    pub(crate) fn install(
        &self,
        candidate: Candidate,
        now: Instant,
    ) -> Result<Reloaded, SecretError> {
        let Candidate {
            name,
            bytes,
            read,
            material,
            entry,
        } = candidate;
        let mut entries = self.lock();
        let mut evicted = Vec::new();
        match entries.map.get(&name) {
            Some(current) if current.read > read => return Err(SecretError::Superseded),
            Some(_) => {}
            None if entries.map.len() < self.settings.max_secrets => {}
            None => {
                let stale: Vec<SecretName> = entries
                    .map
                    .iter()
                    .filter(|(_, e)| e.is_stale(now))
                    .map(|(n, _)| n.clone())
                    .collect();
                evicted.extend(stale.iter().filter_map(|n| entries.map.remove(n)));
                if entries.map.len() >= self.settings.max_secrets {
                    return Err(SecretError::Full {
                        limit: self.settings.max_secrets,
                    });
                }
            }
        }
        entries.versions += 1;
        let version = entries.versions;
        let expires_at = now + self.settings.ttl;
        let len = bytes.len();
        let copy = Material::new(bytes, name.clone(), version, expires_at, material);
        let replaced = entries.map.insert(
            name,
            Entry {
                material: Some(Arc::new(copy)),
                version,
                read,
                expires_at,
                _charge: entry,
            },
        );
        drop(entries);
        // Wiped outside the lock; holders of the old copy keep it.
        drop((replaced, evicted));
        Ok(Reloaded {
            version,
            len,
            expires_at,
        })
    }

    /// The canonical copy of `name`, unless nothing is loaded or it expired.
    pub(crate) fn get(
        &self,
        name: &SecretName,
        now: Instant,
    ) -> Result<Arc<Material>, SecretError> {
        let mut entries = self.lock();
        let entry = entries.map.get_mut(name).ok_or(SecretError::NotLoaded)?;
        if now >= entry.expires_at {
            let expired = entry.material.take();
            let version = entry.version;
            drop(entries);
            drop(expired);
            return Err(SecretError::Expired { version });
        }
        entry
            .material
            .as_ref()
            .map(Arc::clone)
            .ok_or(SecretError::NotLoaded)
    }

    /// Drops the cache's entry for `name`; holders keep their copies.
    pub(crate) fn forget(&self, name: &SecretName) -> bool {
        let removed = self.lock().map.remove(name);
        removed.is_some()
    }
}

impl Entry {
    fn is_stale(&self, now: Instant) -> bool {
        self.material.is_none() || now >= self.expires_at
    }
}

impl fmt::Debug for SecretCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretCache")
            .field("settings", &self.settings)
            .field("entries", &self.lock().map.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use provider_pools_actors::{BrokerGeneration, PoolsConfig, ProviderPools};

    use super::*;

    fn cache(max_secrets: usize) -> SecretCache {
        SecretCache {
            dir: "/unused".to_owned(),
            settings: SecretSettings {
                max_secrets,
                ..SecretSettings::DEFAULT
            },
            reads: AtomicU64::new(0),
            entries: Mutex::default(),
        }
    }

    fn candidate(pools: &ProviderPools, bytes: &[u8], read: u64) -> Candidate {
        Candidate {
            name: SecretName::parse("k").expect("name"),
            bytes: Zeroizing::new(bytes.to_vec()),
            read,
            material: pools.prepay(100).expect("room"),
            entry: pools.prepay(10).expect("room"),
        }
    }

    #[tokio::test]
    async fn an_older_read_never_replaces_a_newer_one_and_returns_its_charges() {
        let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
        let pools = ProviderPools::start(config).await.expect("pools");
        let base = pools.snapshot().metadata_bytes;
        let cache = cache(4);
        let (first, second) = (cache.next_read(), cache.next_read());
        let now = Instant::now();
        let installed = cache
            .install(candidate(&pools, b"newer", second), now)
            .expect("newer read installs");
        assert_eq!(installed.version, 1);
        assert_eq!(
            cache
                .install(candidate(&pools, b"older", first), now)
                .map(|r| r.version),
            Err(SecretError::Superseded)
        );
        assert_eq!(pools.snapshot().metadata_bytes, base + 110, "discarded");
        let kept = cache.get(&SecretName::parse("k").expect("name"), now);
        let kept = kept.map(crate::secret::SecretValue::new).expect("kept");
        assert_eq!((kept.version(), kept.expose_to_guest()), (1, &b"newer"[..]));
        drop(kept);
        assert!(cache.forget(&SecretName::parse("k").expect("name")));
        assert_eq!(pools.snapshot().metadata_bytes, base);
    }
}
