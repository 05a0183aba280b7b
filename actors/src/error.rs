//! Typed errors of the registry's public operations.
//!
//! Messages are lowercase, name what was wrong, and never carry credential
//! bytes: only identities, counts and bounds.

use crate::budget::Exhausted;
use crate::config::ConfigError;
use crate::identity::{Epoch, OriginKind, OriginSlot, ProviderId, ServiceName};
use crate::limits::LimitsError;

/// Starting a registry failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// The broker generation already has (or had) a registry.
    #[error("broker generation {generation} already has a registry")]
    GenerationClaimed {
        /// The generation's id.
        generation: u64,
    },
    /// The limits are invalid.
    #[error("invalid limits: {0}")]
    Limits(#[from] LimitsError),
    /// The registry actor could not be started; the generation stays claimed.
    #[error("registry actor failed to start: {reason}")]
    Spawn {
        /// What ractor or the runtime reported.
        reason: String,
    },
}

/// An installation or replacement was refused; any previous installation
/// of the provider is untouched and still usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallError {
    /// The pools are retired or shut down.
    #[error("provider pools are closed")]
    Closed,
    /// The registry's mailbox is full; nothing was done.
    #[error("registry is busy")]
    Busy,
    /// The expected epoch is not the installed one.
    #[error("provider {provider}: expected epoch {expected}, installed epoch is {installed}")]
    EpochMismatch {
        /// The provider.
        provider: ProviderId,
        /// What the caller expected.
        expected: Epoch,
        /// What is installed (zero when nothing is).
        installed: Epoch,
    },
    /// The provider's epoch counter cannot advance.
    #[error("provider {provider}: epoch counter exhausted")]
    EpochExhausted {
        /// The provider.
        provider: ProviderId,
    },
    /// Another provider already uses the service name.
    #[error("service name {service} belongs to provider {owner}")]
    ServiceTaken {
        /// The requested name.
        service: ServiceName,
        /// The provider that owns it.
        owner: ProviderId,
    },
    /// The public configuration is out of bounds.
    #[error("invalid configuration: {0}")]
    Config(#[from] ConfigError),
    /// The credential exceeds the per-epoch private configuration limit.
    #[error("private configuration is {len} bytes, more than private_config_bytes = {limit}")]
    PrivateConfigTooLarge {
        /// Credential length.
        len: usize,
        /// The limit in force.
        limit: u32,
    },
    /// A budget had no room: retained configurations, clients, clients per
    /// provider, or metadata bytes.
    #[error("no capacity to install: {0}")]
    Capacity(#[from] Exhausted),
    /// The epoch actor could not be started.
    #[error("epoch actor failed to start: {reason}")]
    Spawn {
        /// What ractor reported.
        reason: String,
    },
}

/// A client lookup was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// The pools are retired or shut down.
    #[error("provider pools are closed")]
    Closed,
    /// No such provider is installed.
    #[error("provider {provider} is not installed")]
    UnknownProvider {
        /// The provider.
        provider: ProviderId,
    },
    /// The provider's epochs kept retiring under the lookup.
    #[error("provider {provider} is retired")]
    Retired {
        /// The provider.
        provider: ProviderId,
    },
    /// The slot was minted by another installation.
    #[error("origin slot {slot} does not belong to provider {provider}'s installation")]
    ForeignSlot {
        /// The provider looked up.
        provider: ProviderId,
        /// The foreign slot.
        slot: OriginSlot,
    },
    /// The current epoch has no such slot.
    #[error("provider {provider} has no origin slot {slot}")]
    UnknownSlot {
        /// The provider.
        provider: ProviderId,
        /// The slot.
        slot: OriginSlot,
    },
    /// The slot is configured for another protocol.
    #[error("origin slot {slot} of provider {provider} is {configured}, not {requested}")]
    KindMismatch {
        /// The provider.
        provider: ProviderId,
        /// The slot.
        slot: OriginSlot,
        /// The configured kind.
        configured: OriginKind,
        /// The kind asked for.
        requested: OriginKind,
    },
}

/// A `lower_limits` call was refused; no limit changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// The lowered limits are invalid, raise a startup limit, or change a
    /// fixed one.
    #[error(transparent)]
    Limits(#[from] LimitsError),
    /// A limit would fall below what is in use now.
    #[error("limit {field} cannot be lowered to {requested}: {used} in use")]
    InUse {
        /// The limit.
        field: crate::limits::LimitField,
        /// Its current use (the largest, for per-tenant, per-provider and
        /// per-client limits).
        used: u32,
        /// The refused value.
        requested: u32,
    },
    /// Too many tenants already have a running ceiling of their own
    /// (`ProviderPools::set_tenant_running`).
    #[error("at most {limit} tenants may have a running ceiling of their own")]
    TenantCeilings {
        /// The most tenants with one at once.
        limit: u32,
    },
    /// Too many providers already have a running ceiling of their own
    /// (`ProviderPools::set_provider_running`).
    #[error("at most {limit} providers may have a running ceiling of their own")]
    ProviderCeilings {
        /// The most providers with one at once.
        limit: u32,
    },
    /// The registry's mailbox is full.
    #[error("registry is busy")]
    Busy,
    /// The pools are closed.
    #[error("provider pools are closed")]
    Closed,
}
