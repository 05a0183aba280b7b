//! [`ClusterConfig`]: the `[cluster]` section of a node file, checked.
//!
//! ```toml
//! [cluster]
//! node = "node-a"                       # this node, one of `members`
//! members = ["node-a", "node-b", "node-c"]
//! endpoints = ["http://127.0.0.1:2379"] # etcd; tried in turn on failure
//! lease_ttl_ms = 3000                   # presence and leadership leases
//! period_ms = 500                       # report, allocate and apply
//! drain_ms = 3000                       # the longest request runs
//!
//! [[cluster.ceiling]]
//! provider = "weather"
//! running = 100                         # for the whole cluster
//! floor = 10                            # kept without the control plane
//!
//! [[cluster.rate]]
//! provider = "weather"
//! requests = 600                        # per period, for the whole cluster
//! period_ms = 60000
//! floor = 20                            # per node, kept without the control plane
//! ```
//!
//! Invariants (checked by [`ClusterSection::check`]):
//! - `members` lists distinct node names, `node` among them, at most
//!   [`MAX_ROWS`](crate::MAX_ROWS).
//! - Each ceiling names a distinct provider; `floor × members ≤ running`,
//!   so every member at its floor together stays within the ceiling.
//! - Each rate names a distinct provider; `1 ≤ floor` (a node's rate is
//!   never zero), `floor × members ≤ requests`, and its period is above
//!   zero and at most a day.
//! - `period_ms` leaves at least two periods before a node must give up
//!   its share: `2 × period < lease_ttl − skew_margin`.

use std::time::Duration;

use provider_pools_actors::{ProviderId, RateLimit};
use provider_pools_control_plane::{NodeId, ServiceGroup};
use serde::Deserialize;

use crate::error::ClusterError;
use crate::wire::MAX_ROWS;

/// Most providers with a cluster ceiling (and, apart, with a cluster rate).
pub const MAX_CEILINGS: usize = 64;

/// The `[cluster]` section as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// This node's name.
    pub node: String,
    /// Every node of the cluster, this one included.
    pub members: Vec<String>,
    /// The etcd endpoints.
    pub endpoints: Vec<String>,
    /// The service nodes register under (default `provider-pools`).
    #[serde(default)]
    pub service: Option<String>,
    /// The etcd key prefix (default the control plane's).
    #[serde(default)]
    pub prefix: Option<String>,
    /// The presence and leadership leases' time to live (default 3,000).
    #[serde(default)]
    pub lease_ttl_ms: Option<u64>,
    /// How often a node reports, the leader allocates and a node applies
    /// (default 500).
    #[serde(default)]
    pub period_ms: Option<u64>,
    /// How much earlier than a lease's expiry a node stops counting on it
    /// (default 500).
    #[serde(default)]
    pub skew_margin_ms: Option<u64>,
    /// The longest a request on a ceilinged provider runs (default the
    /// lease's time to live): a departed node's share stays reserved this
    /// long after its registration lapsed.
    #[serde(default)]
    pub drain_ms: Option<u64>,
    /// The global ceilings.
    #[serde(default, rename = "ceiling")]
    pub ceilings: Vec<CeilingSection>,
    /// The global rates.
    #[serde(default, rename = "rate")]
    pub rates: Vec<RateSection>,
}

/// One `[[cluster.rate]]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateSection {
    /// The logical provider.
    pub provider: String,
    /// Requests per period for the whole cluster.
    pub requests: u32,
    /// The period, in milliseconds.
    pub period_ms: u64,
    /// Requests per period each node keeps without the control plane; at
    /// least one.
    pub floor: u32,
}

/// One `[[cluster.ceiling]]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CeilingSection {
    /// The logical provider.
    pub provider: String,
    /// Running requests for the whole cluster.
    pub running: u32,
    /// Running requests each node keeps without the control plane.
    #[serde(default)]
    pub floor: u32,
}

/// One provider's global ceiling, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalCeiling {
    /// The logical provider.
    pub provider: ProviderId,
    /// Running requests for the whole cluster.
    pub running: u32,
    /// Running requests each member keeps without the control plane.
    pub floor: u32,
}

impl GlobalCeiling {
    /// The part divided by demand: the ceiling less every member's floor.
    pub fn dynamic_pool(&self, members: usize) -> u32 {
        let floors = u64::from(self.floor) * members as u64;
        u32::try_from(u64::from(self.running).saturating_sub(floors)).unwrap_or(0)
    }
}

/// One provider's global rate, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalRate {
    /// The logical provider.
    pub provider: ProviderId,
    /// Requests per period for the whole cluster.
    pub requests: u32,
    /// The period.
    pub period: Duration,
    /// Requests per period each member keeps without the control plane.
    pub floor: u32,
}

impl GlobalRate {
    /// The part divided by demand: the rate less every member's floor.
    pub fn dynamic_pool(&self, members: usize) -> u32 {
        let floors = u64::from(self.floor) * members as u64;
        u32::try_from(u64::from(self.requests).saturating_sub(floors)).unwrap_or(0)
    }
}

/// The cluster section, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// This node.
    pub node: NodeId,
    /// Every member, in order, this node included.
    pub members: Vec<NodeId>,
    /// The etcd endpoints.
    pub endpoints: Vec<String>,
    /// The presence service.
    pub service: ServiceGroup,
    /// The etcd key prefix.
    pub prefix: Option<String>,
    /// Presence and leadership time to live.
    pub lease_ttl: Duration,
    /// Report, allocate and apply period.
    pub period: Duration,
    /// Skew margin.
    pub skew_margin: Duration,
    /// How long a departed node's share stays reserved.
    pub drain: Duration,
    /// The global ceilings, one per provider.
    pub ceilings: Vec<GlobalCeiling>,
    /// The global rates, one per provider.
    pub rates: Vec<GlobalRate>,
}

impl ClusterSection {
    /// Checks every field; see the module invariants.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Config`] naming the first key that is wrong.
    pub fn check(&self) -> Result<ClusterConfig, ClusterError> {
        let node = NodeId::new(&self.node)
            .map_err(|error| ClusterError::config("cluster.node", error.to_string()))?;
        let mut members = Vec::with_capacity(self.members.len());
        for member in &self.members {
            let member = NodeId::new(member)
                .map_err(|error| ClusterError::config("cluster.members", error.to_string()))?;
            if members.contains(&member) {
                return Err(ClusterError::config(
                    "cluster.members",
                    format!("{member} is listed twice"),
                ));
            }
            members.push(member);
        }
        if members.len() > MAX_ROWS {
            return Err(ClusterError::config(
                "cluster.members",
                format!("{} members, more than {MAX_ROWS}", members.len()),
            ));
        }
        if !members.contains(&node) {
            return Err(ClusterError::config(
                "cluster.node",
                format!("{node} is not one of `cluster.members`"),
            ));
        }
        if self.endpoints.is_empty() {
            return Err(ClusterError::config("cluster.endpoints", "none given"));
        }
        let service = ServiceGroup::new(self.service.as_deref().unwrap_or("provider-pools"))
            .map_err(|error| ClusterError::config("cluster.service", error.to_string()))?;
        let millis = |value: Option<u64>, default| Duration::from_millis(value.unwrap_or(default));
        let lease_ttl = millis(self.lease_ttl_ms, 3_000);
        let period = millis(self.period_ms, 500);
        let skew_margin = millis(self.skew_margin_ms, 500);
        let drain = self.drain_ms.map_or(lease_ttl, Duration::from_millis);
        if period.is_zero() {
            return Err(ClusterError::config("cluster.period_ms", "must be above 0"));
        }
        if skew_margin >= lease_ttl || period * 2 >= lease_ttl - skew_margin {
            return Err(ClusterError::config(
                "cluster.period_ms",
                format!(
                    "two periods of {} ms do not fit in the lease's {} ms less the {} ms skew margin",
                    period.as_millis(),
                    lease_ttl.as_millis(),
                    skew_margin.as_millis()
                ),
            ));
        }
        if self.ceilings.len() > MAX_CEILINGS {
            return Err(ClusterError::config(
                "cluster.ceiling",
                format!("more than {MAX_CEILINGS}"),
            ));
        }
        let mut ceilings: Vec<GlobalCeiling> = Vec::with_capacity(self.ceilings.len());
        for section in &self.ceilings {
            let provider = ProviderId::new(&section.provider).map_err(|error| {
                ClusterError::config("cluster.ceiling.provider", error.to_string())
            })?;
            if ceilings.iter().any(|c| c.provider == provider) {
                return Err(ClusterError::config(
                    "cluster.ceiling.provider",
                    format!("{provider} has two ceilings"),
                ));
            }
            let floors = u64::from(section.floor) * members.len() as u64;
            if floors > u64::from(section.running) {
                return Err(ClusterError::config(
                    "cluster.ceiling.floor",
                    format!(
                        "{provider}: a floor of {} on {} members is {floors}, above the ceiling of {}",
                        section.floor,
                        members.len(),
                        section.running
                    ),
                ));
            }
            ceilings.push(GlobalCeiling {
                provider,
                running: section.running,
                floor: section.floor,
            });
        }
        let rates = self.check_rates(members.len())?;
        Ok(ClusterConfig {
            node,
            members,
            endpoints: self.endpoints.clone(),
            service,
            prefix: self.prefix.clone(),
            lease_ttl,
            period,
            skew_margin,
            drain,
            ceilings,
            rates,
        })
    }

    fn check_rates(&self, members: usize) -> Result<Vec<GlobalRate>, ClusterError> {
        if self.rates.len() > MAX_CEILINGS {
            return Err(ClusterError::config(
                "cluster.rate",
                format!("more than {MAX_CEILINGS}"),
            ));
        }
        let mut rates: Vec<GlobalRate> = Vec::with_capacity(self.rates.len());
        for section in &self.rates {
            let provider = ProviderId::new(&section.provider).map_err(|error| {
                ClusterError::config("cluster.rate.provider", error.to_string())
            })?;
            if rates.iter().any(|r| r.provider == provider) {
                return Err(ClusterError::config(
                    "cluster.rate.provider",
                    format!("{provider} has two rates"),
                ));
            }
            let period = Duration::from_millis(section.period_ms);
            if period.is_zero() || period > RateLimit::MAX_PERIOD {
                return Err(ClusterError::config(
                    "cluster.rate.period_ms",
                    format!("{provider}: must be above 0 and at most a day"),
                ));
            }
            if section.floor == 0 {
                return Err(ClusterError::config(
                    "cluster.rate.floor",
                    format!("{provider}: must be at least 1"),
                ));
            }
            let floors = u64::from(section.floor) * members as u64;
            if floors > u64::from(section.requests) {
                return Err(ClusterError::config(
                    "cluster.rate.floor",
                    format!(
                        "{provider}: a floor of {} on {members} members is {floors}, above the rate of {}",
                        section.floor, section.requests
                    ),
                ));
            }
            rates.push(GlobalRate {
                provider,
                requests: section.requests,
                period,
                floor: section.floor,
            });
        }
        Ok(rates)
    }
}
