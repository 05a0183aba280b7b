//! [`SecretValue`]: what a guest read hands out — a share of the canonical,
//! charged, zeroizing copy of one secret version.
//!
//! Invariants:
//! - One canonical copy per loaded version: the cache and every value
//!   served from it share it; nothing copies the bytes.
//! - The copy stays charged (its bytes plus [`MATERIAL_OVERHEAD`]) until its
//!   last holder drops it — the cache, or a guest Store that still holds a
//!   value after a rotation replaced the cache's copy.
//! - The bytes are zeroized before the charge returns (field order).
//! - No `Debug`, `Display`, `Clone` or `Serialize` shows or copies the bytes.
//!
//! [`MATERIAL_OVERHEAD`]: crate::secret::MATERIAL_OVERHEAD

use std::fmt;
use std::sync::Arc;

use provider_pools_actors::Prepaid;
use tokio::time::Instant;
use zeroize::Zeroizing;

use crate::secret::SecretName;

/// The canonical copy of one loaded secret version.
pub(crate) struct Material {
    // Field order is drop order: the bytes are wiped before the charge
    // that paid for them returns.
    bytes: Zeroizing<Vec<u8>>,
    name: SecretName,
    version: u64,
    expires_at: Instant,
    _charge: Prepaid,
}

impl Material {
    pub(crate) fn new(
        bytes: Zeroizing<Vec<u8>>,
        name: SecretName,
        version: u64,
        expires_at: Instant,
        charge: Prepaid,
    ) -> Self {
        Self {
            bytes,
            name,
            version,
            expires_at,
            _charge: charge,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }
}

/// One version of a secret as a guest read it: shares the canonical copy
/// and keeps it charged until dropped. The guest's Store holds it and drops
/// it when the Store is destroyed.
///
/// `Debug` shows the name, version and length only; there is no
/// `Display`, `Clone` or `Serialize`.
pub struct SecretValue {
    material: Arc<Material>,
}

impl SecretValue {
    pub(crate) fn new(material: Arc<Material>) -> Self {
        Self { material }
    }

    /// The secret bytes, for the host to copy into the guest that read them.
    /// Never log, format or keep what this yields beyond that copy.
    pub fn expose_to_guest(&self) -> &[u8] {
        &self.material.bytes
    }

    /// Number of secret bytes.
    pub fn len(&self) -> usize {
        self.material.len()
    }

    /// Whether the secret has no bytes.
    pub fn is_empty(&self) -> bool {
        self.material.bytes.is_empty()
    }

    /// The secret's name.
    pub fn name(&self) -> &SecretName {
        &self.material.name
    }

    /// The version served: numbered per origin and epoch, higher is newer.
    pub fn version(&self) -> u64 {
        self.material.version
    }

    /// When the cache stops serving this version.
    pub fn expires_at(&self) -> Instant {
        self.material.expires_at
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretValue")
            .field("name", &self.material.name)
            .field("version", &self.material.version)
            .field("len", &self.material.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use static_assertions::{assert_impl_all, assert_not_impl_any};
    use zeroize::ZeroizeOnDrop;

    use super::{Material, SecretValue};

    assert_not_impl_any!(SecretValue: std::fmt::Display, Clone);
    assert_not_impl_any!(Material: std::fmt::Debug, std::fmt::Display, Clone);
    assert_impl_all!(SecretValue: Send, Sync, std::fmt::Debug);
    assert_impl_all!(zeroize::Zeroizing<Vec<u8>>: ZeroizeOnDrop);
}
