//! The etcd backend: the [`ControlPlane`](crate::ControlPlane) trait over
//! etcd's v3 JSON gateway (`POST /v3/kv/…`, `/v3/lease/…`), for
//! deployments that outgrow one node.
//!
//! - Presence keys are attached to etcd leases of the registration's time
//!   to live; a heartbeat is a keep-alive; discovery is a prefix range.
//! - A lease is a key attached to an etcd lease, created only while absent;
//!   its `create_revision` is the fencing token, so tokens strictly
//!   increase per lease across release and expiry.
//! - A post is a key attached to its instance's etcd lease, so it goes
//!   with the registration; a fenced record is a plain key written by a
//!   transaction pinned to the lease key's `create_revision` (module
//!   `board`).
//! - Expiry is etcd's: a server-side TTL in whole seconds (at least etcd's
//!   minimum, 2 s by default), revoked by etcd within about half a second.
//!
//! Invariants:
//! - The endpoint is `https`, or `http` to loopback, without userinfo.
//! - Every exchange is bounded in time and response size; no exchange is
//!   retried; a decisive lease write is never replayed, and one whose
//!   outcome is unknown reports `OutcomeUnknown` (settle with
//!   [`read_lease`](crate::ControlPlane::read_lease)).
//! - The client spawns nothing and keeps no state: all state is in etcd.

mod board;
mod client;
mod config;
mod gateway;
mod layout;
mod lease;
mod presence;
mod requests;
mod wire;

pub use client::EtcdClient;
pub use config::{EtcdConfig, DEFAULT_MAX_DISCOVERED, DEFAULT_PREFIX, DEFAULT_REQUEST_TIMEOUT};
