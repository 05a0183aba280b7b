//! Cluster-wide provider ceilings and rates with tenant fairness.
//!
//! When each node runs its own registry, every ceiling is local: a
//! provider with a global limit sees N × its per-node ceiling, and a tenant
//! whose work lands on three nodes gets three turns per rotation. This
//! crate is where the engine and the control plane meet, neither knowing
//! the other:
//!
//! - [`allocate`]: the deterministic division of a provider's ceiling
//!   between nodes, max-min fair over tenants' global backlog
//!   ([`allocate_weighted`]: in proportion to the tenants' weights);
//! - [`plan::next_table`]: the fenced leader's step, which moves shares
//!   without ever letting the nodes' bounds exceed the ceiling;
//! - [`share::Holding`]: a node's side — what it may put in force after
//!   reading a table, and that it gives its share up before its lease can
//!   lapse;
//! - [`wire`]: the reports and tables on the control plane's board;
//! - [`ClusterAgent`]: the task that runs both sides on every node.
//!
//! Each provider's global ceiling is `floor × members` kept by the nodes
//! on their own (no control plane needed) plus a dynamic pool the leader
//! divides by demand. The safety argument is in
//! `docs/architecture/cluster-shares.md` ("Why the ceiling holds"); the
//! property tests in `plan` check it.
//!
//! A provider's rate for the whole cluster is divided the same way, as a
//! division of its own (requests per period instead of running requests;
//! docs/decisions/0091-a-cluster-rate-is-a-second-division.md).

mod agent;
mod allocate;
mod config;
mod error;
mod failover;
pub mod plan;
pub mod share;
pub mod wire;

pub use agent::{ClusterAgent, ClusterStatus, ProviderStatus, RateStatus};
pub use allocate::{allocate, allocate_weighted, Allocation, Demand};
pub use config::{
    CeilingSection, ClusterConfig, ClusterSection, GlobalCeiling, GlobalRate, RateSection,
    MAX_CEILINGS,
};
pub use error::ClusterError;
pub use failover::Failover;
pub use wire::{MAX_REPORTED_TENANTS, MAX_ROWS, RECENT_GRANTS};
