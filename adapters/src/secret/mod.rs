//! The local secret adapter: secrets loaded from files in a configured
//! directory by the trusted operator, served to guests from a bounded,
//! charged, zeroizing cache.
//!
//! The trusted configuration names the directory as the origin's target (an
//! absolute path) on an [`OriginKind::Secret`](provider_pools_actors::OriginKind)
//! slot, with the settings of [`SecretSettings`]. The operator calls
//! [`reload`] (on `control_blocking`, after prepaying everything the reload
//! will hold) and [`forget`]; a guest calls [`read`] through a started
//! request and gets a [`SecretValue`].
//!
//! Invariants:
//! - Reloads are operator work: they take the operator's slot, run on
//!   `control_blocking`, and construct no guest authority.
//! - A reload prepays its candidate material, source buffer and cache entry
//!   before it reads a byte; a file over `max_secret_bytes` is refused
//!   before anything is read or prepaid; a file that grows while it is read
//!   is refused and changes nothing.
//! - A guest read goes through normal admission and dispatch, never touches
//!   the file, and is audited; it shares the canonical copy, which stays
//!   charged until its last holder (the guest's Store) drops it.
//! - Material past its time to live (`ttl_ms`) is never served.
//! - Every buffer holding secret bytes is zeroized on drop; no error,
//!   `Debug` output or audit event carries them.
//! - The cache is one per client and epoch (the client's adapter state),
//!   bounded by `max_secrets`, and dropped with the epoch.

mod cache;
mod error;
mod name;
mod read;
mod reload;
mod settings;
mod source;
mod value;

pub use error::SecretError;
pub use name::{NameError, SecretName, MAX_NAME};
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
