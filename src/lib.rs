//! provider-pools: bounded, fair, owned and accounted provider pools.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub use provider_pools_actors::*;
