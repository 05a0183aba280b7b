#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

#[cfg(feature = "http")]
pub use http_provider::{HttpProvider, HttpProviderError, SECRET_HEADER};
/// Internals for tests and benchmarks (feature `testing`).
#[cfg(feature = "testing")]
pub use provider_pools_actors::testing;
pub use provider_pools_actors::{
    close_watch, spans, AdmissionEvent, AdmissionObserver, AdmitError, AdmitRequest, Authority,
    BrokerGeneration, Bytes, CallMismatch, Cleanup, CleanupError, CleanupFailed, CleanupRefused,
    CleanupTicket, ClientId, ClientLease, CloseFailure, CloseNotifier, CloseWatch, ConfigDigest,
    ConfigError, ConnectError, ConnectionCounts, ControlState, Credential, CredentialError, Denied,
    DialBackoff, DialError, DialErrorKind, DialTarget, Dialer, DispatchAuthority, Epoch,
    ExecutionPlan, Exhausted, Fairness, Held, IdentityError, IdentityKind, InUse, IngressEvent,
    IngressRequest, InstallError, InstallReceipt, Installation, JobError, JobHandle, LedgerId,
    LimitField, Limits, LimitsError, LookupError, LowerError, MinShares, MinSharesError,
    Multiplexed, OriginKind, OriginSlot, OriginSpec, OutputBuffer, PolicyTable, PoolReady,
    PooledConnection, PooledStream, PoolsConfig, Prepaid, Priority, ProviderCall, ProviderConfig,
    ProviderDescriptor, ProviderId, ProviderPools, RateError, RateInForce, RateLimit,
    RestartPolicy, RunningRequest, ServiceName, SessionId, Snapshot, SpawnError, StagedInput,
    StagedOutput, StartError, TenantDemand, TenantId, TextPart, TypedSlot, Usage, WeightError,
};
/// The protocol adapters, each behind the feature of its name (`http`,
/// `blob`, `s3`, `vault`, `nats`, `secret`); with none on, only
/// [`adapters::LimitError`].
pub use provider_pools_adapters as adapters;
/// Cluster-wide provider ceilings (the `[cluster]` section of a node
/// file, and the agent a clustered node runs; feature `cluster`).
#[cfg(feature = "cluster")]
pub use provider_pools_cluster as cluster;

#[cfg(feature = "http")]
mod http_provider;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "node")]
pub mod node;
