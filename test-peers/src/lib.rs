//! Test support: the real peers the adapters' and the control plane's
//! tests talk to, each started on a free loopback port with its own
//! temporary storage, awaited until it answers, and stopped when its handle
//! drops (also when a test panics).
//!
//! The peers are installed by `scripts/peers` (which the README test
//! command runs) into `target/peers` (`venv/` for the Python peers;
//! `etcd/`, `nginx/` and `lighttpd/` for the unpacked etcd-server, nginx and
//! lighttpd packages); `PROVIDER_POOLS_PEERS` names another install
//! directory. A missing peer fails the test that needs it
//! with a message saying how to install it: nothing is skipped silently.
//!
//! [`EtcdCluster`] is the one peer of several processes: N etcd members
//! started as one cluster on ports all chosen up front, whose leader a test
//! can find, kill and wait to see replaced.
//!
//! [`eventually`] is the one bounded poll every test of the workspace uses
//! for a condition outside the engine.
//!
//! Invariants:
//! - Every wait is bounded; a peer that does not answer in time fails the
//!   test with the tail of its own log.
//! - A [`Peer`] owns its process and its temporary directory; dropping it
//!   kills the process and reaps it before the directory is removed.

#![allow(clippy::unwrap_used)]

mod etcd_cluster;
mod lighttpd;
mod nginx;
mod peer;
mod peers;
mod shared;
mod wait;

pub use etcd_cluster::EtcdCluster;
pub use lighttpd::{Lighttpd, LighttpdEntry, LighttpdPeer};
pub use nginx::{AccessEntry, Nginx, NginxPeer};
pub use peer::{binary, free_port, Peer, PeerCommand};
pub use peers::{Bao, Etcd, Moto, Nats};
pub use shared::SharedPeer;
pub use wait::{eventually, POLL, WAIT};
