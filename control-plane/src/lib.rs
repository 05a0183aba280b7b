//! The control plane of provider-pools nodes: presence, heartbeat,
//! discovery and fenced leases, reached through one client trait
//! ([`ControlPlane`]) with in-memory, file, offline, HTTP and etcd clients.
//!
//! It knows nothing of the pools. The pieces:
//! - [`ControlPlane`], the trait, and its semantics (module [`client`]);
//! - [`Board`]: posts that live with a registration and records fenced
//!   by a lease (module [`board`]);
//! - [`MemoryClient`] and [`OfflineClient`];
//! - [`FileClient`], persisted in one JSON file (module [`file`](mod@file));
//! - leases with strictly increasing [`FencingToken`]s, [`LeadershipGuard`]s
//!   that report loss before the lease could expire, and a [`FencingGate`]
//!   for the protected resource (module [`lease`]);
//! - the [`heartbeat`] actor, which keeps one registration alive, and the
//!   [`coordinator`] actor, which campaigns for leases and publishes this
//!   node's leadership; both behind bounded mailboxes;
//! - the bounded HTTP retry policy ([`retry`]);
//! - the HTTP transports and secure endpoint validation ([`transport`]);
//! - [`HttpControlPlaneClient`], the V1 JSON protocol over HTTP and
//!   (feature `server`) its reference server (module [`v1`]).

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod board;
mod call;
pub mod client;
pub mod clock;
pub mod coordinator;
mod error;
pub mod etcd;
pub mod file;
mod future;
pub mod heartbeat;
pub mod lease;
pub mod memory;
mod metadata;
mod millis;
mod name;
pub mod offline;
pub mod presence;
pub mod retry;
pub mod store;
mod token;
pub mod transport;
pub mod v1;

pub use board::{Board, FencedRecord, Post, MAX_BOARD_VALUE_BYTES};
pub use call::ActorCallError;
pub use client::{BoxFuture, CallResult, ControlPlane};
pub use error::{ControlPlaneError, ErrorCode};
pub use etcd::{EtcdClient, EtcdConfig};
pub use file::FileClient;
pub use lease::{
    FencingGate, FencingToken, LeadershipGuard, LeadershipLost, LeaseGrant, LeaseKey, LeaseRequest,
    LeaseState, SkewMargin, StaleToken,
};
pub use memory::MemoryClient;
pub use name::{LeaseName, NameError, NodeId, ServiceGroup, TopicName, MAX_NAME_BYTES};
pub use offline::OfflineClient;
pub use presence::{PresenceKey, Registration};
pub use store::{StoreLimits, StoreStats};
pub use token::TokenExhausted;
pub use transport::{
    BearerHttpTransport, BearerToken, Endpoint, PooledHttpTransport, PooledTransportConfig,
    StdHttpTransport,
};
pub use v1::{HttpClientConfig, HttpControlPlaneClient, HttpWorker};

/// The control-plane guide (`docs/control-plane/en.md`): each of its Rust
/// examples runs as a doctest of this crate. One needs the reference
/// server, hence the `server` feature (`scripts/test` builds every
/// feature); `tests/guide_translations.rs` checks that the Portuguese and
/// French guides carry the same examples.
#[cfg(all(doctest, feature = "server"))]
#[doc = include_str!("../GUIDE.md")]
mod guide {}
