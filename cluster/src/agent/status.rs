//! [`ClusterStatus`]: what an agent holds, for tests, examples and
//! metrics.

use std::collections::BTreeMap;

use provider_pools_actors::{ProviderId, TenantId};
use tokio::time::Instant;

/// An agent's view after its last period.
#[derive(Debug, Clone, Default)]
pub struct ClusterStatus {
    /// Periods run.
    pub periods: u64,
    /// The incarnation of the current registration (0 before the first).
    pub incarnation: u64,
    /// Whether the node is registered, as far as it knows.
    pub registered: bool,
    /// Until when the node counts on its registration.
    pub contact_until: Option<Instant>,
    /// Each ceilinged provider.
    pub providers: BTreeMap<ProviderId, ProviderStatus>,
    /// Each provider with a cluster rate.
    pub rates: BTreeMap<ProviderId, RateStatus>,
    /// The last error met, if any, as text.
    pub last_error: Option<String>,
    /// True once the agent left the cluster cleanly (deregistered).
    pub left: bool,
}

/// One provider's state on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderStatus {
    /// The epoch of the last table applied.
    pub epoch: u64,
    /// The dynamic share in force (above the floor).
    pub in_force: u32,
    /// The engine ceiling set: floor plus the share in force.
    pub ceiling: u32,
    /// Whether this node led the provider's allocation this period.
    pub leader: bool,
    /// Each tenant's share here, from the last table applied.
    pub tenants: BTreeMap<TenantId, u32>,
}

/// One provider's rate on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateStatus {
    /// The epoch of the last rate table applied.
    pub epoch: u64,
    /// The dynamic share of the rate in force (requests per period above
    /// the floor).
    pub in_force: u32,
    /// The rate set on the engine: floor plus the share in force, requests
    /// per period.
    pub requests: u32,
    /// Whether this node led the provider's rate division this period.
    pub leader: bool,
}
