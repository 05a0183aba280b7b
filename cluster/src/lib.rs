//! Cluster-wide provider ceilings with tenant fairness (issue 21).
//!
//! When each node runs its own registry, every ceiling is local: a
//! provider with a global limit sees N × its per-node ceiling, and a tenant
//! whose work lands on three nodes gets three turns per rotation. This
//! crate is where the engine and the control plane meet, neither knowing
//! the other. So far it holds the allocation ([`allocate`]): the
//! deterministic function that divides one provider's global running
//! ceiling between nodes from the demand they publish, so that tenants'
//! global shares are max-min fair.

mod allocate;

pub use allocate::{allocate, Allocation, Demand};
