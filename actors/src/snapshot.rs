//! Aggregate observations of what the pools own.
//!
//! A [`Snapshot`] holds counts only — never a key, a tenant, an origin or a
//! credential — so it can be logged and exported as is. It is an observation,
//! not an admission decision: counts read at slightly different instants.

use serde::Serialize;

/// Who owns the shared control duties, and how that ownership ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlState {
    /// The control owner runs and admission is open.
    Running,
    /// `retire` or `shutdown` closed admission; owned resources still drain.
    Retiring,
    /// Shutdown drained everything and the control owner stopped cleanly.
    Completed,
    /// A control actor stopped without completing shutdown; admission is
    /// closed and no report can be clean.
    Failed,
}

/// Connection counts by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ConnectionCounts {
    /// Checked out and in use.
    pub active: u32,
    /// Parked for reuse.
    pub idle: u32,
    /// Reserved for a dial in flight.
    pub connecting: u32,
    /// Owned by a retired epoch, waiting to be destroyed.
    pub retired: u32,
    /// Callers waiting for a connection of a client (behind its dial, or
    /// while it is at `connections_per_client`); they hold no connection.
    /// Counts a caller that left until the epoch actor next looks at the
    /// client's queue, or stops.
    pub waiting: u32,
}

/// Aggregate ownership counts of one registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// Logical providers with a current (published) epoch.
    pub configured_epochs: u32,
    /// Epochs still alive: current ones plus retired ones still draining.
    pub retained_epochs: u32,
    /// Configured clients across every retained epoch.
    pub clients: u32,
    /// Connections by state.
    pub connections: ConnectionCounts,
    /// Queued request owners.
    pub pending_requests: u32,
    /// Running or retained request owners.
    pub running_requests: u32,
    /// Provider jobs (`spawn`, `spawn_blocking`, `control_blocking`) not
    /// yet joined: what holds the `provider_workers` slots.
    pub workers: u32,
    /// Connection drivers not yet joined: at most one per connection,
    /// dialing, active or idle, and none holds a worker slot.
    pub drivers: u32,
    /// Cleanup jobs not yet joined.
    pub cleanup_jobs: u32,
    /// Resources whose cleanup failed and which are still owned.
    pub failed_cleanup: u32,
    /// Accounted registry metadata, in bytes.
    pub metadata_bytes: u32,
    /// The control owner's state.
    pub control: ControlState,
}

impl Snapshot {
    /// True when nothing is owned any more and the control owner completed.
    ///
    /// Retained configuration alone keeps a snapshot from being clean: a
    /// clean report means every epoch, socket, worker and request is gone.
    pub fn is_clean(&self) -> bool {
        self.control == ControlState::Completed && self.owns_nothing()
    }

    /// True when every count is zero, whatever the control state.
    pub fn owns_nothing(&self) -> bool {
        let Self {
            configured_epochs,
            retained_epochs,
            clients,
            connections,
            pending_requests,
            running_requests,
            workers,
            drivers,
            cleanup_jobs,
            failed_cleanup,
            metadata_bytes,
            control: _,
        } = *self;
        let ConnectionCounts {
            active,
            idle,
            connecting,
            retired,
            waiting,
        } = connections;
        [
            configured_epochs,
            retained_epochs,
            clients,
            active,
            idle,
            connecting,
            retired,
            waiting,
            pending_requests,
            running_requests,
            workers,
            drivers,
            cleanup_jobs,
            failed_cleanup,
            metadata_bytes,
        ]
        .iter()
        .all(|&count| count == 0)
    }
}

/// One tenant's demand on one provider of this node: what it has queued
/// there and what it runs there (see
/// [`ProviderPools::provider_demand`](crate::ProviderPools::provider_demand)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantDemand {
    /// The tenant.
    pub tenant: crate::identity::TenantId,
    /// Its requests queued for the provider.
    pub pending: u32,
    /// Its requests granted on the provider and not yet finished.
    pub running: u32,
}

/// Queued and running requests of one tenant or one provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Requests queued for admission.
    pub pending: u32,
    /// Requests granted and not yet finished.
    pub running: u32,
}

/// Who holds the admission queue now (see
/// [`ProviderPools::usage`](crate::ProviderPools::usage)): every tenant and
/// every provider with queued or running requests, by key, and every
/// priority class. Snapshots stay aggregate; this is the per-key view an
/// operator's gauges read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// Each tenant with requests.
    pub tenants: std::collections::BTreeMap<crate::identity::TenantId, Held>,
    /// Each provider with requests.
    pub providers: std::collections::BTreeMap<crate::identity::ProviderId, Held>,
    /// Each priority class, whether it has requests or not.
    pub classes: std::collections::BTreeMap<crate::priority::Priority, Held>,
}
