#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

/// Internals for tests and benchmarks (feature `testing`).
#[cfg(feature = "testing")]
pub use provider_pools_actors::testing;
pub use provider_pools_actors::{
    close_watch, spans, AdmissionEvent, AdmissionObserver, AdmitError, AdmitRequest, Authority,
    BrokerGeneration, Bytes, CallMismatch, Cleanup, CleanupError, CleanupFailed, CleanupRefused,
    CleanupTicket, ClientId, ClientLease, CloseFailure, CloseNotifier, CloseWatch, ConfigDigest,
    ConfigError, ConnectError, ConnectionCounts, ControlState, Credential, CredentialError, Denied,
    DialBackoff, DialError, DialErrorKind, DialTarget, Dialer, DispatchAuthority, Epoch,
    ExecutionPlan, Exhausted, Held, IdentityError, IdentityKind, InUse, IngressEvent,
    IngressRequest, InstallError, InstallReceipt, Installation, JobError, JobHandle, LedgerId,
    LimitField, Limits, LimitsError, LookupError, LowerError, Multiplexed, OriginKind, OriginSlot,
    OriginSpec, OutputBuffer, PolicyTable, PoolReady, PooledConnection, PoolsConfig, Prepaid,
    ProviderCall, ProviderConfig, ProviderDescriptor, ProviderId, ProviderPools, RateError,
    RateInForce, RateLimit, RestartPolicy, RunningRequest, ServiceName, SessionId, Snapshot,
    SpawnError, StagedInput, StagedOutput, StartError, StreamLease, TenantDemand, TenantId,
    TextPart, TypedSlot, Usage,
};
/// Cluster-wide provider ceilings (the `[cluster]` section of a node
/// file, and the agent a clustered node runs).
pub use provider_pools_cluster as cluster;

#[cfg(feature = "metrics")]
pub mod metrics;
pub mod node;
