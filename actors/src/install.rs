//! What an installation asks for and what it answers.
//!
//! Invariants:
//! - [`Installation`] owns its credential and prints it as `<redacted>`.
//! - [`InstallReceipt`] and [`ProviderDescriptor`] hold public parts only.

use std::fmt;

use crate::config::{ConfigDigest, ProviderConfig};
use crate::credential::Credential;
use crate::epoch::published::PublishedEpoch;
use crate::epoch::TypedSlot;
use crate::identity::{Authority, Epoch, OriginKind, OriginSlot, ProviderId, ServiceName};

/// A request to install or replace one logical provider's epoch.
///
/// Built by the trusted node adapter after it validated its
/// protocol-specific configuration.
pub struct Installation {
    /// The configured logical provider.
    pub provider: ProviderId,
    /// The public authority identity (for example the origin it speaks for).
    pub authority: Authority,
    /// The installed epoch the caller expects: zero to create, the current
    /// epoch to replace.
    pub expected: Epoch,
    /// The epoch's private credential bytes.
    pub credential: Credential,
    /// The public configuration.
    pub config: ProviderConfig,
}

impl fmt::Debug for Installation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Installation")
            .field("provider", &self.provider)
            .field("authority", &self.authority)
            .field("expected", &self.expected)
            .field("credential", &"<redacted>")
            .field("config", &self.config)
            .finish()
    }
}

/// The answer to a successful installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallReceipt {
    /// The provider.
    pub provider: ProviderId,
    /// The newly published epoch.
    pub epoch: Epoch,
    /// The digest of the public configuration.
    pub digest: ConfigDigest,
    /// The typed slots of the configured origins, in slot order.
    pub slots: Vec<TypedSlot>,
}

impl InstallReceipt {
    /// The typed slot for `slot`, if configured.
    pub fn slot(&self, slot: OriginSlot) -> Option<TypedSlot> {
        self.slots.iter().copied().find(|s| s.slot() == slot)
    }
}

/// The public description of a provider's current epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderDescriptor {
    /// The provider.
    pub provider: ProviderId,
    /// The current epoch.
    pub epoch: Epoch,
    /// The public service name.
    pub service: ServiceName,
    /// The public authority identity.
    pub authority: Authority,
    /// The public configuration digest.
    pub digest: ConfigDigest,
    /// Configured origins: slot and kind.
    pub origins: Vec<(OriginSlot, OriginKind)>,
}

impl ProviderDescriptor {
    pub(crate) fn of(epoch: &PublishedEpoch) -> Self {
        Self {
            provider: epoch.provider.clone(),
            epoch: epoch.epoch,
            service: epoch.config.service.clone(),
            authority: epoch.authority.clone(),
            digest: epoch.digest,
            origins: epoch.origins(),
        }
    }
}
