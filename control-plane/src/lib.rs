//! The control plane of provider-pools nodes: presence, heartbeat,
//! discovery and fenced leases, reached through one client trait with
//! in-memory, file, offline and HTTP clients.
//!
//! It knows nothing of the pools. Built so far: the bounded HTTP retry
//! policy ([`retry`]), the piece every remote client shares.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod retry;
