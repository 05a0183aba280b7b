#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub use provider_pools_actors::*;
/// Cluster-wide provider ceilings (the `[cluster]` section of a node
/// file, and the agent a clustered node runs).
pub use provider_pools_cluster as cluster;

#[cfg(feature = "metrics")]
pub mod metrics;
pub mod node;
