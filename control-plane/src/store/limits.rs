//! [`StoreLimits`] and [`StoreStats`].

use crate::error::ControlPlaneError;

/// How much a store may retain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// Registrations, lease slots, posts and fenced records together.
    pub max_records: usize,
    /// Estimated retained bytes.
    pub max_bytes: u64,
}

impl StoreLimits {
    /// The in-memory default, also its ceiling: 65,536 records, 16 MiB.
    pub const MEMORY: StoreLimits = StoreLimits {
        max_records: 65_536,
        max_bytes: 16 * 1024 * 1024,
    };

    /// The file store's decoded-state ceiling: 262,144 records, 64 MiB.
    pub const FILE_DECODED: StoreLimits = StoreLimits {
        max_records: 262_144,
        max_bytes: 64 * 1024 * 1024,
    };

    /// Checks these limits only tighten `ceiling`.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `max_records` or `max_bytes`
    /// when zero or above the ceiling.
    pub fn within(self, ceiling: StoreLimits) -> Result<Self, ControlPlaneError> {
        if self.max_records == 0 || self.max_records > ceiling.max_records {
            return Err(ControlPlaneError::invalid(
                "max_records",
                format!("{}, must be 1–{}", self.max_records, ceiling.max_records),
            ));
        }
        if self.max_bytes == 0 || self.max_bytes > ceiling.max_bytes {
            return Err(ControlPlaneError::invalid(
                "max_bytes",
                format!("{}, must be 1–{}", self.max_bytes, ceiling.max_bytes),
            ));
        }
        Ok(self)
    }
}

impl Default for StoreLimits {
    fn default() -> Self {
        Self::MEMORY
    }
}

/// What a store holds and has refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreStats {
    /// Registrations retained (live or not yet swept).
    pub registrations: usize,
    /// Lease slots retained.
    pub lease_slots: usize,
    /// Posts retained (beside live registrations or not yet swept ones).
    pub posts: usize,
    /// Fenced records retained.
    pub fenced_records: usize,
    /// Estimated bytes retained now.
    pub current_bytes: u64,
    /// The most estimated bytes ever retained at once.
    pub peak_bytes: u64,
    /// Changes refused for a limit.
    pub rejections: u64,
}
