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
//! Requests are built here from Vault's KV-v2 HTTP API (no Vault SDK: the
//! one available, vaultrs, brings its own HTTP client) and sent on the http
//! adapter's connections: [`HttpConnection`](crate::http::HttpConnection)s
//! reserved with the slot's [`HttpDialer`](crate::http::HttpDialer), whose
//! drivers run as bounded provider jobs.
//!
//! Invariants:
//! - Every byte to and from Vault moves on a pooled `HttpConnection`:
//!   charged as one of the node's and the client's connections before it
//!   is dialed; its socket is owned by its driver job, whose worker slot is
//!   released only after the socket is closed.
//! - The token is the running epoch's credential, read when each request
//!   is built: a rotation's new calls send the new token, while calls of
//!   the old epoch finish with the old one on the old epoch's connections.
//! - The token is checked (printable ASCII) before any dial, sent in
//!   `X-Vault-Token` marked sensitive from a copy zeroized when the request
//!   is dropped, and never shown in `Debug` or an error.
//! - Data to write is bounded and refused before any dial; response bodies
//!   are read under a cap; what a call returns is charged as the request's
//!   staged output.
//! - A connection is parked only by the http adapter's reuse rules, after
//!   a complete answer (whatever its status); errors, deadlines and dropped
//!   futures destroy it. Nothing is retried or redirected.

mod config;
mod error;
mod exchange;
mod ops;
mod wire;

pub use config::{
    PathError, SecretPath, VaultAddress, CA_FILE_SETTING, DEFAULT_MOUNT, MAX_MOUNT, MAX_PATH,
    MAX_TOKEN, MOUNT_SETTING, NAMESPACE_SETTING,
};
pub use error::VaultError;
pub use ops::{
    read, read_metadata, read_version, write, SecretMetadata, VaultSecret, VersionMetadata,
    VersionState,
};

/// Bounds of Vault calls.
///
/// Each bound is at most [`VaultLimits::CEILING`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VaultLimits {
    /// Largest secret data written, serialized as JSON, in bytes.
    pub max_secret_bytes: usize,
    /// Largest response body read, in bytes.
    pub max_response_bytes: usize,
}

impl VaultLimits {
    /// The largest bounds: 16 MiB of data, 32 MiB of response.
    pub const CEILING: Self = Self {
        max_secret_bytes: 16 << 20,
        max_response_bytes: 32 << 20,
    };

    /// Refuses a bound above [`Self::CEILING`]; every operation calls it
    /// before any I/O.
    ///
    /// # Errors
    ///
    /// [`crate::LimitError`] naming the field.
    pub fn check(&self) -> Result<(), crate::LimitError> {
        crate::limits::at_most(
            "max_secret_bytes",
            self.max_secret_bytes,
            Self::CEILING.max_secret_bytes as u64,
        )?;
        crate::limits::at_most(
            "max_response_bytes",
            self.max_response_bytes,
            Self::CEILING.max_response_bytes as u64,
        )?;
        Ok(())
    }
}

impl Default for VaultLimits {
    /// 64 KiB of data, 256 KiB of response.
    fn default() -> Self {
        Self {
            max_secret_bytes: 64 * 1024,
            max_response_bytes: 256 * 1024,
        }
    }
}
