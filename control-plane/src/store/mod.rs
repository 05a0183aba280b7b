//! The single-node store behind the in-memory and file clients (and the
//! reference server through them): registrations, lease slots, posts and
//! fenced records in ordered maps, with an estimated retained-byte account.
//! (Only the in-memory client posts and fences; the file client persists
//! registrations and lease slots only, so its posts and records stay
//! empty.)
//!
//! Invariants:
//! - records ≤ `max_records` and estimated bytes ≤ `max_bytes` after every
//!   operation; a change that would break either is refused with
//!   `LimitExceeded`, counted in `rejections`, and leaves the previous
//!   registration or lease exactly as it was.
//! - A lease slot, once made, is kept after release and expiry: it carries
//!   the last fencing token, so tokens of a lease only ever increase. So is
//!   a lease's fenced record.
//! - A post goes with its registration: removing or replacing the
//!   registration drops it.
//! - Time is the caller's clock in milliseconds; expiry arithmetic fails
//!   closed (`Overflow`) rather than wrap.

mod board;
mod leases;
mod limits;
mod presence;
mod rollback;
mod state;

pub use limits::{StoreLimits, StoreStats};
pub(crate) use state::{LeaseRecord, PresenceRecord, StoreState};

/// Bytes charged per registration on top of its text.
pub const PRESENCE_OVERHEAD_BYTES: u64 = 160;
/// Bytes charged per lease slot on top of its text.
pub const LEASE_OVERHEAD_BYTES: u64 = 96;
/// Bytes charged per post on top of its names and value.
pub const POST_OVERHEAD_BYTES: u64 = 96;
/// Bytes charged per fenced record on top of its lease's name and value.
pub const FENCED_OVERHEAD_BYTES: u64 = 64;
