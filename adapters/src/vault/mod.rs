//! The Vault adapter: KV-v2 — read a secret (latest or a version), write
//! one with an optional check-and-set, read its metadata, list a folder,
//! soft-delete, undelete and destroy versions, update the metadata — and
//! transit encrypt and decrypt.
//!
//! The trusted configuration names the Vault address origin
//! (`http://host:port`, `https://host:port`) as the target of an
//! [`OriginKind::Vault`](provider_pools_actors::OriginKind) slot, with the
//! settings `mount` (the KV-v2 mount, default `secret`), `transit_mount`
//! (default `transit`), `namespace` and, for `https`, `ca_file`; the
//! epoch's credential is the Vault token. A guest names a [`SecretPath`]
//! under the mount, or a [`TransitKey`].
//!
//! Requests are vaultrs's own endpoint types (`vaultrs::api::kv2` and
//! `vaultrs::api::transit` requests, run by rustify's `Endpoint::exec`),
//! executed by a rustify `Client` of this module on the http adapter's
//! connections: [`HttpConnection`](crate::http::HttpConnection)s reserved
//! with the slot's [`HttpDialer`](crate::http::HttpDialer), whose drivers
//! run as bounded provider jobs. vaultrs's `VaultClient` (a reqwest client)
//! is never built.
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
//! - Data to write, plaintext and ciphertext are bounded and refused
//!   before any dial, as is any request body over its bound; response
//!   bodies are read under a cap; what a call returns is charged as the
//!   request's staged output.
//! - A failure caused by one call's input or answer (a path, a key, a 4xx)
//!   is that call's error only: it changes no state shared with other
//!   calls or tenants (only a failed dial puts the client into backoff).
//! - A connection is parked only by the http adapter's reuse rules, after
//!   a complete answer (whatever its status); errors, deadlines and dropped
//!   futures destroy it. Nothing is retried or redirected.

mod client;
mod config;
mod error;
mod exchange;
mod ops;
mod secret;
mod transit;
mod versions;
mod wire;

pub use config::{
    PathError, SecretPath, TransitKey, VaultAddress, CA_FILE_SETTING, DEFAULT_MOUNT,
    DEFAULT_TRANSIT_MOUNT, MAX_MOUNT, MAX_PATH, MAX_TOKEN, MOUNT_SETTING, NAMESPACE_SETTING,
    TRANSIT_MOUNT_SETTING,
};
pub use error::VaultError;
pub use ops::{read, read_metadata, read_version, write};
pub use secret::{
    MetadataUpdate, SecretList, SecretMetadata, VaultSecret, VersionMetadata, VersionState,
    MAX_CUSTOM_METADATA,
};
pub use transit::{decrypt, encrypt};
pub use versions::{
    delete_latest, delete_versions, destroy, list, undelete, update_metadata, MAX_VERSIONS,
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
