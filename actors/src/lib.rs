//! The provider-pools engine.
//!
//! Every actor of the engine lives here, with the bounded mailbox layer that
//! reaches them, the lock-free budgets several owners share, the limits and
//! the identities. No protocol is known here: adapters plug in from their own
//! crate.
//!
//! The actor tree of one broker generation:
//!
//! ```text
//! RegistryActor (supervisor; publishes epochs under its fence)
//! ├── SchedulerActor   control of the admission queue: lowering, close,
//! │                    hand-overs and the deadline alarm (grants happen on
//! │                    the callers' own tasks, see the scheduler module)
//! ├── WorkerPoolActor  provider worker slots; owns every job's join handle
//! ├── CleanupActor     separate cleanup slots; destroys, then releases charges
//! └── EpochActor × N   one per (provider, epoch), alive until drained
//! ```
//!
//! [`ProviderPools`] is the registry's handle and the crate's entry point.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

mod accounts;
mod admission;
mod budget;
mod cleanup;
mod config;
mod contain;
mod credential;
mod dispatch;
mod epoch;
mod error;
mod fairness;
mod identity;
mod install;
mod limits;
mod mailbox;
mod moment;
mod observe;
mod plan;
mod priority;
mod provider_pools;
mod registry;
mod scheduler;
mod snapshot;
mod supervision;
mod sync;
mod tenants;
mod workers;

pub use admission::{
    AdmitError, AdmitRequest, CallMismatch, HeldMetadata, IngressEvent, IngressRequest,
    OutputBuffer, PoolReady, RunningRequest, StagedInput, StagedOutput,
};
pub use budget::{Exhausted, InUse};
pub use bytes::Bytes;
pub use cleanup::{
    Cleanup, CleanupError, CleanupFailed, CleanupRefused, CleanupTicket, CloseFailure,
};
pub use config::{ConfigDigest, ConfigError, OriginSpec, ProviderConfig, TextPart};
pub use credential::{Credential, CredentialError};
pub use dispatch::{Denied, DispatchAuthority, PolicyTable, ProviderCall};
pub use epoch::connection::{
    ConnectError, DialError, DialErrorKind, DialTarget, Dialer, Multiplexed, PooledConnection,
    PooledStream,
};
pub use epoch::watch::{close_watch, CloseNotifier, CloseWatch};
pub use epoch::{ClientId, ClientLease, TypedSlot};
pub use error::{InstallError, LookupError, LowerError, SpawnError, StartError};
pub use fairness::Fairness;
pub use identity::{
    Authority, BrokerGeneration, Epoch, IdentityError, IdentityKind, OriginKind, OriginSlot,
    ProviderId, ServiceName, TenantId,
};
pub use install::{InstallReceipt, Installation, ProviderDescriptor};
pub use limits::{DialBackoff, LimitField, Limits, LimitsError};
pub use observe::{spans, AdmissionEvent, AdmissionObserver};
pub use plan::{ExecutionPlan, LedgerId, SessionId};
pub use priority::{MinShares, MinSharesError, Priority};
pub use provider_pools::{
    PoolsConfig, Prepaid, ProviderPools, RateError, RateInForce, RateLimit, WeightError,
};
pub use snapshot::{ConnectionCounts, ControlState, Held, Snapshot, TenantDemand, Usage};
pub use supervision::RestartPolicy;
pub use workers::{JobError, JobHandle};

/// Internals exposed for tests and benchmarks only (feature `testing`): the
/// lock-free budget several owners charge, and its charge; why
/// [`ProviderPools::wait_quiescent`] gave up.
#[cfg(feature = "testing")]
pub mod testing {
    pub use crate::budget::{Budget, Charge};
    pub use crate::provider_pools::NotQuiescent;
}
