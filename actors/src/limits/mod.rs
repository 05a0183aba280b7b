//! Holds the registry's resource limits: defaults, absolute ceilings and their validation.
//! Invariant: a validated `Limits` has no zero field and no field above `Limits::CEILING`.
//! Invariant: a validated `Limits` keeps every bounded field at or below its bounding field.
//! Invariant: `lower_limits` never raises a limit: every field must be at most the limit in
//! force, so a later lowering never undoes an earlier one. It never changes the dial backoff.
//! Invariant: durations are compared and reported in whole milliseconds, rounded up.

mod backoff;
mod duration_ms;
mod error;
mod field;
#[cfg(test)]
mod tests;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use backoff::DialBackoff;
pub use error::LimitsError;
pub use field::LimitField;

const KIB: u32 = 1024;
const MIB: u32 = 1024 * KIB;

/// Cross-limit relations checked by [`Limits::validate`], in order: `(field, bound_field)`
/// means `field` must not exceed `bound_field`. Deliberately no `configured_clients` ≤
/// `connections`: configured clients may outnumber connections.
const RELATIONS: [(LimitField, LimitField); 9] = [
    (LimitField::ConnectionsPerClient, LimitField::Connections),
    (LimitField::IdleConnections, LimitField::Connections),
    (
        LimitField::ClientsPerProvider,
        LimitField::ConfiguredClients,
    ),
    (LimitField::RequestsPerTenant, LimitField::PendingRequests),
    (LimitField::RequestsPerProvider, LimitField::PendingRequests),
    (LimitField::RunningPerTenant, LimitField::RunningRequests),
    (LimitField::RunningPerProvider, LimitField::RunningRequests),
    (LimitField::PrivateConfigBytes, LimitField::MetadataBytes),
    (LimitField::DialBackoffInitial, LimitField::DialBackoffMax),
];

/// The registry's resource limits; see [`Limits::DEFAULT`] and [`Limits::CEILING`].
///
/// Fields are plain values: call [`Limits::validate`] before using a hand-built set.
///
/// # What each limit bounds, per adapter
///
/// Every call is one running request (`running_requests` and its per-tenant
/// and per-provider shares) from admission until its response is read or
/// dropped. What else it holds depends on the adapter:
///
/// | adapter | one of `connections` is | a driver | `provider_workers` bound |
/// | --- | --- | --- | --- |
/// | HTTP/1.1 (buffered, streaming, tower) | one TCP (or TLS) socket, carrying one call at a time | one per connection, on no worker slot | nothing |
/// | HTTP/2 (`http2 = "on"`) | one socket carrying up to `http2_max_streams` streams of one tenant; each stream is one running request | one per connection | nothing |
/// | S3, Vault KV-v2 | an HTTP/1.1 connection, as above | as HTTP/1.1 | nothing |
/// | NATS JetStream | one client: its socket and its tasks | one per client | nothing |
/// | local blob | one open file handle, for one get or put | none | each file-system call (`workers_per_tenant` of the caller's tenant) |
/// | local secret | none | none | each reload (`control_blocking`) |
///
/// A connection's driver holds that connection's charges and no worker
/// slot, so `connections`, `connections_per_client` and
/// `connections_per_tenant` bound sockets and their drivers together, and
/// `provider_workers` bounds blocking file-system and reload work only.
/// Parked connections (HTTP/1.1, HTTP/2, NATS; never blob handles) count
/// against `idle_connections` and `connections`, belong to no tenant, and
/// hold no worker.
///
/// Sizing: `running_requests` is the calls in flight; `connections` should
/// cover the HTTP/1.1 and NATS calls in flight plus the idle connections
/// kept for reuse; `connections_per_client` caps how many of them one
/// origin gets; `provider_workers` should cover the blob calls and secret
/// reloads in flight at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Retained configurations (default 32, ceiling 256).
    pub retained_configurations: u32,
    /// Configured clients/origins (default 128, ceiling 1,024).
    pub configured_clients: u32,
    /// Clients per provider (default 8, ceiling 128); at most `configured_clients`.
    pub clients_per_provider: u32,
    /// Connections, including reserved dials (default 256, ceiling 4,096).
    pub connections: u32,
    /// Connections per client (default 8, ceiling 256); at most `connections`.
    /// A request whose client has them all waits, within its deadline, for
    /// one to be parked or destroyed (tenants served in rotation).
    pub connections_per_client: u32,
    /// One tenant's share of a client's connections: dialing or held by its
    /// requests, idle ones belong to no tenant (default 4, ceiling 256); at most
    /// `connections_per_client`.
    pub connections_per_tenant: u32,
    /// Idle connections (default 64, ceiling 1,024); at most `connections`.
    pub idle_connections: u32,
    /// Pending requests (default 128, ceiling 1,024).
    pub pending_requests: u32,
    /// Running/retained request owners (default 64, ceiling 1,024).
    pub running_requests: u32,
    /// Requests per tenant: queued, or on their way to the queue (default 32,
    /// ceiling 1,024); at most `pending_requests`.
    pub requests_per_tenant: u32,
    /// Requests per logical provider (default 64, ceiling 1,024); at most `pending_requests`.
    pub requests_per_provider: u32,
    /// Running requests per tenant (default 16, ceiling 1,024); at most `running_requests`.
    pub running_per_tenant: u32,
    /// Running requests per provider (default 32, ceiling 1,024); at most `running_requests`.
    pub running_per_provider: u32,
    /// Provider workers (default 16, ceiling 128): jobs of `spawn`,
    /// `spawn_blocking` and `control_blocking` (blob file-system calls,
    /// secret reloads); a connection's driver takes none.
    pub provider_workers: u32,
    /// One tenant's share of the provider workers: jobs run for its requests
    /// (`ProviderPools::spawn_blocking_for`), until joined (default 8,
    /// ceiling 128); capped at `provider_workers`.
    pub workers_per_tenant: u32,
    /// Cleanup jobs (default 8, ceiling 128).
    pub cleanup_jobs: u32,
    /// Accounted registry metadata in bytes (default 8 MiB, ceiling 64 MiB).
    pub metadata_bytes: u32,
    /// One tenant's share of the accounted metadata in bytes: its staged
    /// inputs and outputs and its requests' overhead (default 2 MiB, ceiling
    /// 64 MiB); capped at `metadata_bytes`.
    pub metadata_per_tenant: u32,
    /// Copied private configuration bytes per epoch (default 64 KiB, ceiling 1 MiB);
    /// at most `metadata_bytes`.
    pub private_config_bytes: u32,
    /// Maximum age of a pending request (default 5 s, ceiling 60 s).
    #[serde(rename = "queue_age_ms", with = "duration_ms")]
    pub queue_age: Duration,
    /// Maximum age of an idle connection (default 30 s, ceiling 1 h).
    #[serde(rename = "idle_age_ms", with = "duration_ms")]
    pub idle_age: Duration,
    /// Dial backoff after the first failure (default 100 ms, ceiling 30 s);
    /// at most `dial_backoff_max`.
    #[serde(rename = "dial_backoff_initial_ms", with = "duration_ms")]
    pub dial_backoff_initial: Duration,
    /// Cap on the dial backoff (default 30 s, ceiling 300 s).
    #[serde(rename = "dial_backoff_max_ms", with = "duration_ms")]
    pub dial_backoff_max: Duration,
}

impl Limits {
    /// The default limits.
    pub const DEFAULT: Limits = Limits {
        retained_configurations: 32,
        configured_clients: 128,
        clients_per_provider: 8,
        connections: 256,
        connections_per_client: 8,
        connections_per_tenant: 4,
        idle_connections: 64,
        pending_requests: 128,
        running_requests: 64,
        requests_per_tenant: 32,
        requests_per_provider: 64,
        running_per_tenant: 16,
        running_per_provider: 32,
        provider_workers: 16,
        workers_per_tenant: 8,
        cleanup_jobs: 8,
        metadata_bytes: 8 * MIB,
        metadata_per_tenant: 2 * MIB,
        private_config_bytes: 64 * KIB,
        queue_age: Duration::from_secs(5),
        idle_age: Duration::from_secs(30),
        dial_backoff_initial: Duration::from_millis(100),
        dial_backoff_max: Duration::from_secs(30),
    };

    /// The absolute ceilings: no valid set of limits exceeds any of these.
    pub const CEILING: Limits = Limits {
        retained_configurations: 256,
        configured_clients: 1024,
        clients_per_provider: 128,
        connections: 4096,
        connections_per_client: 256,
        connections_per_tenant: 256,
        idle_connections: 1024,
        pending_requests: 1024,
        running_requests: 1024,
        requests_per_tenant: 1024,
        requests_per_provider: 1024,
        running_per_tenant: 1024,
        running_per_provider: 1024,
        provider_workers: 128,
        workers_per_tenant: 128,
        cleanup_jobs: 128,
        metadata_bytes: 64 * MIB,
        metadata_per_tenant: 64 * MIB,
        private_config_bytes: MIB,
        queue_age: Duration::from_secs(60),
        idle_age: Duration::from_secs(60 * 60),
        dial_backoff_initial: Duration::from_secs(30),
        dial_backoff_max: Duration::from_secs(300),
    };

    /// The value of field `f`: counts as is, durations in milliseconds rounded up
    /// (so a nonzero duration never reads as zero).
    pub fn get(&self, f: LimitField) -> u64 {
        let count = match f {
            LimitField::RetainedConfigurations => self.retained_configurations,
            LimitField::ConfiguredClients => self.configured_clients,
            LimitField::ClientsPerProvider => self.clients_per_provider,
            LimitField::Connections => self.connections,
            LimitField::ConnectionsPerClient => self.connections_per_client,
            LimitField::ConnectionsPerTenant => self.connections_per_tenant,
            LimitField::IdleConnections => self.idle_connections,
            LimitField::PendingRequests => self.pending_requests,
            LimitField::RunningRequests => self.running_requests,
            LimitField::RequestsPerTenant => self.requests_per_tenant,
            LimitField::RequestsPerProvider => self.requests_per_provider,
            LimitField::RunningPerTenant => self.running_per_tenant,
            LimitField::RunningPerProvider => self.running_per_provider,
            LimitField::ProviderWorkers => self.provider_workers,
            LimitField::WorkersPerTenant => self.workers_per_tenant,
            LimitField::CleanupJobs => self.cleanup_jobs,
            LimitField::MetadataBytes => self.metadata_bytes,
            LimitField::MetadataPerTenant => self.metadata_per_tenant,
            LimitField::PrivateConfigBytes => self.private_config_bytes,
            LimitField::QueueAge => return millis_rounded_up(self.queue_age),
            LimitField::IdleAge => return millis_rounded_up(self.idle_age),
            LimitField::DialBackoffInitial => return millis_rounded_up(self.dial_backoff_initial),
            LimitField::DialBackoffMax => return millis_rounded_up(self.dial_backoff_max),
        };
        u64::from(count)
    }

    /// Checks that no field is zero, none exceeds its ceiling and every relation holds.
    ///
    /// Refuses, in this order: the first zero field ([`LimitsError::Zero`]), the first
    /// field above [`Limits::CEILING`] ([`LimitsError::AboveCeiling`]), then the first
    /// broken relation ([`LimitsError::Relation`]), fields taken in [`LimitField::ALL`]
    /// order. Relations: `connections_per_client` and `idle_connections` ≤ `connections`;
    /// `clients_per_provider` ≤ `configured_clients`; `requests_per_tenant` and
    /// `requests_per_provider` ≤ `pending_requests`; `running_per_tenant` and
    /// `running_per_provider` ≤ `running_requests`; `private_config_bytes` ≤
    /// `metadata_bytes`; `dial_backoff_initial` ≤ `dial_backoff_max`. The
    /// per-tenant shares `connections_per_tenant`, `workers_per_tenant` and
    /// `metadata_per_tenant` have no relation: a share above its total is
    /// capped at it ([`Limits::connections_share`] and its siblings); the
    /// defaults keep every share below its total (ARCHITECTURE.md,
    /// "Per-tenant shares").
    ///
    /// ```
    /// use provider_pools_actors::{LimitField, Limits, LimitsError};
    ///
    /// assert_eq!(Limits::DEFAULT.validate(), Ok(()));
    ///
    /// let limits = Limits { idle_connections: 300, ..Limits::DEFAULT };
    /// let expected = LimitsError::Relation {
    ///     field: LimitField::IdleConnections,
    ///     value: 300,
    ///     bound_field: LimitField::Connections,
    ///     bound: 256,
    /// };
    /// assert_eq!(limits.validate(), Err(expected.clone()));
    /// assert_eq!(
    ///     expected.to_string(),
    ///     "limit idle_connections = 300 must not exceed connections = 256"
    /// );
    /// ```
    pub fn validate(&self) -> Result<(), LimitsError> {
        if let Some(field) = LimitField::ALL.into_iter().find(|&f| self.get(f) == 0) {
            return Err(LimitsError::Zero { field });
        }
        for field in LimitField::ALL {
            let (value, ceiling) = (self.get(field), Self::CEILING.get(field));
            if value > ceiling {
                return Err(LimitsError::AboveCeiling {
                    field,
                    value,
                    ceiling,
                });
            }
        }
        for (field, bound_field) in RELATIONS {
            let (value, bound) = (self.get(field), self.get(bound_field));
            if value > bound {
                return Err(LimitsError::Relation {
                    field,
                    value,
                    bound_field,
                    bound,
                });
            }
        }
        Ok(())
    }

    /// Checks that `lowered` may replace these limits in force through `lower_limits`.
    ///
    /// `lowered` must itself validate; then, in [`LimitField::ALL`] order, no field may
    /// exceed its value in `self` ([`LimitsError::Raised`]); finally the dial backoff fields
    /// must be identical, to the nanosecond ([`LimitsError::Fixed`]). `self` is not
    /// re-validated.
    pub fn check_lowering(&self, lowered: &Limits) -> Result<(), LimitsError> {
        lowered.validate()?;
        for field in LimitField::ALL.into_iter().filter(|f| !f.is_fixed()) {
            let (value, bound) = (lowered.get(field), self.get(field));
            if value > bound {
                return Err(LimitsError::Raised {
                    field,
                    value,
                    bound,
                });
            }
        }
        // Fixed fields compare exactly, not in rounded milliseconds.
        if lowered.dial_backoff_initial != self.dial_backoff_initial {
            return Err(LimitsError::Fixed {
                field: LimitField::DialBackoffInitial,
            });
        }
        if lowered.dial_backoff_max != self.dial_backoff_max {
            return Err(LimitsError::Fixed {
                field: LimitField::DialBackoffMax,
            });
        }
        Ok(())
    }

    /// A tenant's share of a client's connections in force:
    /// `connections_per_tenant`, capped at `connections_per_client`.
    pub const fn connections_share(&self) -> u32 {
        min(self.connections_per_tenant, self.connections_per_client)
    }

    /// A tenant's share of the provider workers in force:
    /// `workers_per_tenant`, capped at `provider_workers`.
    pub const fn workers_share(&self) -> u32 {
        min(self.workers_per_tenant, self.provider_workers)
    }

    /// A tenant's share of the accounted metadata in force:
    /// `metadata_per_tenant`, capped at `metadata_bytes`.
    pub const fn metadata_share(&self) -> u32 {
        min(self.metadata_per_tenant, self.metadata_bytes)
    }

    /// The dial backoff parameters of these limits.
    pub fn dial_backoff(&self) -> DialBackoff {
        DialBackoff {
            initial: self.dial_backoff_initial,
            max: self.dial_backoff_max,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

const fn min(a: u32, b: u32) -> u32 {
    if a < b {
        a
    } else {
        b
    }
}

/// `d` in whole milliseconds, rounded up and saturating at `u64::MAX`.
fn millis_rounded_up(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}
