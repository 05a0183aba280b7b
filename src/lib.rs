#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub use provider_pools_actors::*;

#[cfg(feature = "metrics")]
pub mod metrics;
pub mod node;
