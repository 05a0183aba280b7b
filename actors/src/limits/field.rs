//! Names every configurable limit, so errors and callers can refer to one field.
//! Invariant: `LimitField::ALL` lists each variant exactly once, in `Limits` field order.
//! Invariant: `LimitField::name` is the snake_case name of the matching `Limits` field.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One field of [`Limits`](super::Limits), used to name a limit in errors and lookups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LimitField {
    /// Retained configurations (`retained_configurations`).
    RetainedConfigurations,
    /// Configured clients/origins (`configured_clients`).
    ConfiguredClients,
    /// Clients per provider (`clients_per_provider`).
    ClientsPerProvider,
    /// Connections, including reserved dials (`connections`).
    Connections,
    /// Connections per client (`connections_per_client`).
    ConnectionsPerClient,
    /// One tenant's share of a client's connections (`connections_per_tenant`).
    ConnectionsPerTenant,
    /// Idle connections (`idle_connections`).
    IdleConnections,
    /// Pending requests (`pending_requests`).
    PendingRequests,
    /// Running/retained request owners (`running_requests`).
    RunningRequests,
    /// Requests per tenant (`requests_per_tenant`).
    RequestsPerTenant,
    /// Requests per logical provider (`requests_per_provider`).
    RequestsPerProvider,
    /// Running requests per tenant (`running_per_tenant`).
    RunningPerTenant,
    /// Running requests per provider (`running_per_provider`).
    RunningPerProvider,
    /// Provider workers (`provider_workers`).
    ProviderWorkers,
    /// One tenant's share of the provider workers (`workers_per_tenant`).
    WorkersPerTenant,
    /// Cleanup jobs (`cleanup_jobs`).
    CleanupJobs,
    /// Accounted registry metadata, in bytes (`metadata_bytes`).
    MetadataBytes,
    /// One tenant's share of the accounted metadata, in bytes (`metadata_per_tenant`).
    MetadataPerTenant,
    /// Copied private configuration bytes per epoch (`private_config_bytes`).
    PrivateConfigBytes,
    /// Maximum age of a pending request (`queue_age`).
    QueueAge,
    /// Maximum age of an idle connection (`idle_age`).
    IdleAge,
    /// Dial backoff after the first failure (`dial_backoff_initial`).
    DialBackoffInitial,
    /// Cap on the dial backoff (`dial_backoff_max`).
    DialBackoffMax,
}

impl LimitField {
    /// Every field, once each, in the declaration order of [`Limits`](super::Limits).
    pub const ALL: [LimitField; 23] = [
        Self::RetainedConfigurations,
        Self::ConfiguredClients,
        Self::ClientsPerProvider,
        Self::Connections,
        Self::ConnectionsPerClient,
        Self::ConnectionsPerTenant,
        Self::IdleConnections,
        Self::PendingRequests,
        Self::RunningRequests,
        Self::RequestsPerTenant,
        Self::RequestsPerProvider,
        Self::RunningPerTenant,
        Self::RunningPerProvider,
        Self::ProviderWorkers,
        Self::WorkersPerTenant,
        Self::CleanupJobs,
        Self::MetadataBytes,
        Self::MetadataPerTenant,
        Self::PrivateConfigBytes,
        Self::QueueAge,
        Self::IdleAge,
        Self::DialBackoffInitial,
        Self::DialBackoffMax,
    ];

    /// The snake_case name of the matching [`Limits`](super::Limits) field.
    pub const fn name(self) -> &'static str {
        match self {
            Self::RetainedConfigurations => "retained_configurations",
            Self::ConfiguredClients => "configured_clients",
            Self::ClientsPerProvider => "clients_per_provider",
            Self::Connections => "connections",
            Self::ConnectionsPerClient => "connections_per_client",
            Self::ConnectionsPerTenant => "connections_per_tenant",
            Self::IdleConnections => "idle_connections",
            Self::PendingRequests => "pending_requests",
            Self::RunningRequests => "running_requests",
            Self::RequestsPerTenant => "requests_per_tenant",
            Self::RequestsPerProvider => "requests_per_provider",
            Self::RunningPerTenant => "running_per_tenant",
            Self::RunningPerProvider => "running_per_provider",
            Self::ProviderWorkers => "provider_workers",
            Self::WorkersPerTenant => "workers_per_tenant",
            Self::CleanupJobs => "cleanup_jobs",
            Self::MetadataBytes => "metadata_bytes",
            Self::MetadataPerTenant => "metadata_per_tenant",
            Self::PrivateConfigBytes => "private_config_bytes",
            Self::QueueAge => "queue_age",
            Self::IdleAge => "idle_age",
            Self::DialBackoffInitial => "dial_backoff_initial",
            Self::DialBackoffMax => "dial_backoff_max",
        }
    }

    /// Whether the field is a duration, whose values [`Limits::get`](super::Limits::get)
    /// reports in milliseconds.
    pub const fn is_duration(self) -> bool {
        matches!(
            self,
            Self::QueueAge | Self::IdleAge | Self::DialBackoffInitial | Self::DialBackoffMax
        )
    }

    /// Whether the field is fixed for a registry generation, so `lower_limits` may not
    /// change it at all (the dial backoff parameters).
    pub const fn is_fixed(self) -> bool {
        matches!(self, Self::DialBackoffInitial | Self::DialBackoffMax)
    }
}

impl fmt::Display for LimitField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
