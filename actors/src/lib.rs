//! The provider-pools engine.
//!
//! Every actor of the engine lives here, with the bounded mailbox layer that
//! reaches them, the lock-free budgets several owners share, the limits and
//! the identities. No protocol is known here: adapters plug in from their own
//! crate.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod budget;
pub mod credential;
pub mod identity;
pub mod limits;

// Reached by the registry and epoch actors, which land next.
#[allow(dead_code)]
mod mailbox;
