//! The local secret adapter: secrets loaded from files in a configured
//! directory by the trusted operator, served to guests from a bounded,
//! charged, zeroizing cache.
//!
//! The trusted configuration names the directory as the origin's target (an
//! absolute path) on an [`OriginKind::Secret`](provider_pools_actors::OriginKind)
//! slot, with the settings of [`SecretSettings`]. The operator calls
//! [`reload`] (on `control_blocking`, after prepaying everything the reload
//! will hold) and [`forget`]; a guest calls [`read`] through a started
//! request and gets a [`SecretValue`]. No connection is pooled: the
//! resource is the canonical copy of each loaded secret version, kept in
//! the origin's `SecretCache`.
//!
//! Invariants:
//! - Reloads are operator work: they take the operator's slot, run on
//!   `control_blocking`, and construct no guest authority.
//! - A reload prepays its candidate material, source buffer and cache entry
//!   before it reads a byte; a file over `max_secret_bytes` is refused
//!   before anything is read or prepaid; a file that grows while it is read
//!   is refused and changes nothing.
//! - An older read never replaces a newer one (`Superseded`).
//! - A guest read goes through normal admission and dispatch, never touches
//!   the file, and is audited; it shares the canonical copy, which stays
//!   charged until its last holder (the guest's Store) drops it.
//! - Material past its time to live (`ttl_ms`) is never served.
//! - Every buffer holding secret bytes is zeroized on drop; no error,
//!   `Debug` output or audit event carries them.
//! - The cache is one per client and epoch (the client's adapter state),
//!   bounded by `max_secrets`, and dropped with the epoch.
//!
//! # Settings and names
//!
//! The slot's target is an absolute directory; settings `max_secret_bytes`
//! (64 KiB, ceiling 1 MiB), `ttl_ms` (5 min, ceiling 24 h) and
//! `max_secrets` (64, ceiling 1,024), checked by `SecretSettings::of_config`
//! before install and when the cache is built. A `SecretName` is one
//! segment of `[A-Za-z0-9._-]`, never starting with `.`.
//!
//! # Reload
//!
//! `reload(pools, provider, slot, name)` is the trusted operator's path (it
//! leases the slot with `ProviderPools::client`, never a guest request):
//! 1. Refuse a full cache before any I/O.
//! 2. Open the file on a `control_blocking` job: it must canonicalize
//!    inside the directory (in-directory symlinks, as in a Kubernetes mount,
//!    are followed; others are `Escapes`), and the final component is opened
//!    `O_NOFOLLOW | O_NONBLOCK` and must be a regular file.
//! 3. Refuse a size over `max_secret_bytes` before reading or prepaying.
//! 4. Prepay.
//! 5. On a second `control_blocking` job that owns the prepayment, the open
//!    file and the client lease: take a shared `flock` (a writer rewriting
//!    the file in place under an exclusive lock is waited for), read at most
//!    the prepaid size plus one byte (more is `Grew`: nothing changes), copy
//!    into an exact zeroizing allocation, wipe the source buffer, and
//!    install the new version under the cache's lock. Reads are numbered
//!    while the lock is held.
//!
//! A dropped reload waiter loses only the answer: the job installs and
//! keeps its charges until it ends.
//!
//! # Read and audit
//!
//! `read(running, name)` is the guest's path: it needs a started
//! `RunningRequest` (normal admission and a fresh dispatch), never touches
//! the file, refuses material past its `ttl_ms` (`Expired` until a reload;
//! the cache's copy is dropped at the first such read), and returns a
//! `SecretValue` sharing the canonical copy — charged until dropped, but not
//! holding the request's running capacity. Every read, reload and forget
//! emits one `tracing` event on `provider_pools::secret::audit` (tenant,
//! session, provider, epoch, name, version, outcome; never bytes).
//!
//! # Charged, released
//!
//! - **Charged:** the reload's source buffer (`len + 1`), candidate material
//!   (`len + MATERIAL_OVERHEAD`) and cache entry (`ENTRY_OVERHEAD + name`)
//!   prepaid with `ProviderPools::prepay` before a byte is read; the open
//!   and the read each on a `control_blocking` worker slot.
//! - **Released:** the source buffer's share when the read job ends; an
//!   entry when it is replaced, forgotten, evicted or its epoch is dropped;
//!   a copy (zeroized first) when its last holder — the cache or a guest's
//!   `SecretValue` — drops it.

mod cache;
mod error;
mod name;
mod read;
mod reload;
mod settings;
mod source;
mod value;

pub use error::SecretError;
pub use name::{SecretName, SecretNameError, MAX_NAME};
pub use read::read;
pub use reload::{forget, prepayment, reload, Reloaded};
pub use settings::{SecretSettings, MAX_SECRETS_SETTING, MAX_SECRET_BYTES_SETTING, TTL_MS_SETTING};
pub use value::SecretValue;

/// The `tracing` target of the adapter's audit events: every guest read
/// (served or refused) and every operator reload and forget. Fields: tenant,
/// session, provider, epoch, name, version (0 when none was served) and
/// outcome (`served`, `reloaded`, or an error code); never secret bytes.
pub const AUDIT_TARGET: &str = "provider_pools::secret::audit";

/// Bytes charged per cache entry besides its name: the record and its slot
/// in the cache's map.
pub const ENTRY_OVERHEAD: u32 = 128;

/// Bytes charged per canonical copy besides its material: the shared
/// allocation's header and fields.
pub const MATERIAL_OVERHEAD: u32 = 64;
