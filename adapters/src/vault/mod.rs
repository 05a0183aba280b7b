//! The Vault KV-v2 adapter: read a secret (latest or a version), write one
//! with an optional check-and-set, read its metadata.
//!
//! The trusted configuration names the Vault address origin
//! (`http://host:port`, `https://host:port`) as the target of an
//! [`OriginKind::Vault`](provider_pools_actors::OriginKind) slot, with the
//! settings `mount` (the KV-v2 mount, default `secret`), `namespace` and,
//! for `https`, `ca_file`; the epoch's credential is the Vault token. A
//! guest names a [`SecretPath`] under the mount.
//!
//! vaultrs supplies the KV-v2 endpoints, its middleware (API version, token
//! and namespace headers) and the response types; requests go out on a
//! reqwest client this adapter builds, so that every body is bounded and
//! every socket is accounted.
//!
//! Invariants:
//! - A [`VaultConnection`] is one client of one epoch holding at most one
//!   socket; it is charged as one of the node's and the client's connections
//!   before it is built, and dropped (with its socket) before the charge
//!   returns.
//! - The token is the running epoch's credential: a rotation's new epoch
//!   dials clients with the new token, while calls of the old epoch finish
//!   on the old epoch's connections.
//! - The token is checked (printable ASCII) before any dial, zeroized with
//!   its connection, marked sensitive on the wire, and never shown in
//!   `Debug` or an error.
//! - Data to write is bounded and refused before any dial; response bodies
//!   are read under a cap; what a call returns is charged as the request's
//!   staged output.
//! - A connection is parked only after a complete answer; errors, deadlines
//!   and dropped futures destroy it. Nothing is retried or redirected.

mod config;
mod dialer;
mod error;
mod exchange;
mod ops;
mod tls;

use std::time::Duration;

pub use config::{
    PathError, SecretPath, VaultAddress, CA_FILE_SETTING, DEFAULT_MOUNT, MAX_MOUNT, MAX_PATH,
    MAX_TOKEN, MOUNT_SETTING, NAMESPACE_SETTING,
};
pub use dialer::{VaultConnection, VaultDialer};
pub use error::VaultError;
pub use ops::{
    read, read_metadata, read_version, write, SecretMetadata, VaultSecret, VersionMetadata,
    VersionState,
};

/// Bounds of Vault calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VaultLimits {
    /// Largest secret data written, serialized as JSON, in bytes.
    pub max_secret_bytes: usize,
    /// Largest response body read, in bytes.
    pub max_response_bytes: usize,
    /// Longest TCP connect (and TLS handshake) of a connection's socket.
    pub connect_timeout: Duration,
}

impl Default for VaultLimits {
    /// 64 KiB of data, 256 KiB of response, a 10 s connect.
    fn default() -> Self {
        Self {
            max_secret_bytes: 64 * 1024,
            max_response_bytes: 256 * 1024,
            connect_timeout: Duration::from_secs(10),
        }
    }
}
