//! V1, the control plane's JSON protocol over HTTP:
//! [`HttpControlPlaneClient`] speaking the V1 [`protocol`] through a bounded request queue and one [`HttpWorker`],
//! and (feature `server`) the `ReferenceServer` speaking V1 over any
//! [`ControlPlane`](crate::ControlPlane).
//!
//! Invariants:
//! - Every call's budget starts at the provider call and includes its
//!   queue wait; it is bounded by the [`retry`](crate::retry) policy.
//! - The queue is bounded and holds only a weak owner of each answer: a
//!   call dropped before dispatch never runs.
//! - Lease mutations make exactly one attempt and report an unknown
//!   outcome rather than replay.
//! - No task is spawned here: the caller spawns [`HttpWorker::run`] and the
//!   server's future.

mod client;
mod config;
mod exchange;
pub mod protocol;
mod queue;
#[cfg(feature = "server")]
mod server;

pub use client::HttpControlPlaneClient;
pub use config::{
    HttpClientConfig, DEFAULT_QUEUE_CAPACITY, MAX_QUEUE_CAPACITY, MAX_RESPONSE_BYTES,
};
pub use queue::HttpWorker;
#[cfg(feature = "server")]
pub use server::{
    ReferenceServer, ServerConfig, ServerTask, MAX_SERVER_BODY_BYTES, MAX_SERVER_CONNECTIONS,
};
