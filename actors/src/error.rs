//! Typed errors of the registry's public operations.
//!
//! Messages are lowercase, name what was wrong, and never carry credential
//! bytes: only identities, counts and bounds.

use std::sync::Arc;

use crate::budget::Exhausted;
use crate::config::ConfigError;
use crate::identity::{Epoch, OriginKind, OriginSlot, ProviderId, ServiceName};
use crate::limits::LimitsError;

/// Starting a registry failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The broker generation already has (or had) a registry.
    #[error("broker generation {generation} already has a registry")]
    GenerationClaimed {
        /// The generation's id.
        generation: u64,
    },
    /// The limits are invalid.
    #[error("invalid limits")]
    Limits(#[from] LimitsError),
    /// The registry actor could not be started; the generation stays claimed.
    #[error("registry actor failed to start")]
    Spawn {
        /// The phase that failed, with what ractor or the runtime reported.
        #[source]
        cause: SpawnError,
    },
}

/// Why an actor did not start: the phase that failed, keeping what ractor
/// or the runtime reported as the error's own text and source.
///
/// ractor's and tokio's errors are neither `Clone` nor `PartialEq`, so they
/// are shared behind an `Arc`, and two `SpawnError`s are equal when they
/// name the same phase with the same message.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// ractor refused the actor, or its start-up failed (for the registry,
    /// also the start-up of one of its child actors).
    #[error(transparent)]
    Actor(Arc<ractor::SpawnErr>),
    /// The task that started the actor panicked, or the runtime cancelled it
    /// because it is shutting down.
    #[error(transparent)]
    Task(Arc<tokio::task::JoinError>),
    /// The registry started, but its control actors (scheduler, worker and
    /// cleanup pools) never reported that they did.
    #[error("control actors did not start")]
    Controls,
}

impl From<ractor::SpawnErr> for SpawnError {
    fn from(err: ractor::SpawnErr) -> Self {
        Self::Actor(Arc::new(err))
    }
}

impl From<tokio::task::JoinError> for SpawnError {
    fn from(err: tokio::task::JoinError) -> Self {
        Self::Task(Arc::new(err))
    }
}

impl PartialEq for SpawnError {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}

impl Eq for SpawnError {}

/// An installation or replacement was refused; any previous installation
/// of the provider is untouched and still usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
    /// A rotation named a provider that has no installed epoch.
    #[error("provider {provider} is not installed")]
    NotInstalled {
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
    #[error("invalid configuration")]
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
    #[error("no capacity to install")]
    Capacity(#[from] Exhausted),
    /// The epoch actor could not be started.
    #[error("epoch actor failed to start")]
    Spawn {
        /// What ractor reported.
        #[source]
        cause: SpawnError,
    },
}

/// A client lookup was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
#[non_exhaustive]
pub enum LowerError {
    /// The lowered limits are invalid, raise a limit in force, or change a
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

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::{InstallError, SpawnError, StartError};

    #[test]
    fn a_failed_spawn_keeps_what_ractor_reported_as_its_source() {
        let cause = SpawnError::from(ractor::SpawnErr::ActorAlreadyStarted);
        let error = InstallError::Spawn {
            cause: cause.clone(),
        };
        assert_eq!(error.to_string(), "epoch actor failed to start");
        assert_eq!(
            error.source().map(ToString::to_string).as_deref(),
            Some("Actor cannot be re-started more than once")
        );
        let source = error.source().and_then(|s| s.downcast_ref::<SpawnError>());
        assert_eq!(source, Some(&cause));
        assert!(matches!(source, Some(SpawnError::Actor(_))));
    }

    #[test]
    fn control_actors_that_never_report_are_the_source() {
        let error = StartError::Spawn {
            cause: SpawnError::Controls,
        };
        assert_eq!(error.to_string(), "registry actor failed to start");
        assert_eq!(
            error.source().map(ToString::to_string).as_deref(),
            Some("control actors did not start")
        );
    }

    #[test]
    fn spawn_errors_are_equal_by_phase_and_message() {
        let actor = || SpawnError::from(ractor::SpawnErr::ActorAlreadyStarted);
        assert_eq!(actor(), actor());
        assert_ne!(actor(), SpawnError::Controls);
    }
}
