//! The Vault adapter: KV-v2 — read a secret (latest or a version), write
//! one with an optional check-and-set, read its metadata, list a folder,
//! soft-delete, undelete and destroy versions, update the metadata — and
//! transit encrypt and decrypt.
//!
//! The trusted configuration names the Vault address origin
//! (`http://host[:port]` or `https://host[:port]`, `VaultAddress`, which is
//! the http adapter's `ApprovedOrigin`) as the target of an
//! [`OriginKind::Vault`](provider_pools_actors::OriginKind) slot; the
//! epoch's credential is the Vault token. A guest names a [`SecretPath`]
//! under the mount, or a [`TransitKey`].
//!
//! Requests are vaultrs's own endpoint types (`vault/wire.rs` builds
//! `vaultrs::api::kv2` and `vaultrs::api::transit` requests from checked
//! input), run by rustify's `Endpoint::exec` on `PoolClient`
//! (`vault/client.rs`), a rustify `Client` built per call over the admitted
//! `RunningRequest`: its `send` is the only way out, and runs one exchange
//! on the http adapter's connections
//! ([`HttpConnection`](crate::http_origin::HttpConnection)s reserved with
//! `reserve_connection` and the slot's
//! [`HttpDialer`](crate::http_origin::HttpDialer)): origin-form path under `/v1/`,
//! `X-Vault-Request: true`, the token header added there, never by a
//! middleware. vaultrs's `VaultClient` (a reqwest client) is never built;
//! vaultrs and rustify depend on reqwest 0.13 whatever their features, so
//! it is compiled (no TLS provider of its own) but never called.
//!
//! Invariants:
//! - Every byte to and from Vault moves on a pooled `HttpConnection`:
//!   charged as one of the node's and the client's connections before it
//!   is dialed; its socket is owned by its driver, and the connection's
//!   charges are released only after the driver has ended.
//! - The token is the running epoch's credential, read when each request
//!   is built: a rotation's new calls send the new token on the new epoch's
//!   connections, while calls of the old epoch keep the old token and the
//!   old epoch's connections until they finish.
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
//! - The request's deadline bounds the whole exchange, dial included.
//!
//! # Settings and names
//!
//! Settings: `mount` (the KV-v2 mount, default `secret`), `transit_mount`
//! (default `transit`), `namespace` (sent as `X-Vault-Namespace`) and, for
//! `https`, `ca_file` — the http adapter's `CA_FILE_SETTING`, so the TLS is
//! the http adapter's (rustls on ring, `webpki-roots` unless `ca_file` names
//! an absolute PEM bundle, read at each dial). A `SecretPath` is relative
//! `/`-separated segments of `[A-Za-z0-9._-]`, no `.` or `..`, at most 512
//! bytes; a transit key name is one `[A-Za-z0-9._-]` segment.
//!
//! # The token
//!
//! Printable ASCII of at most 1,024 bytes, checked before any dial
//! (`VaultError::Config { setting: "credential" }`, never echoing it). It is
//! read from the running request's epoch when each request is built (like
//! the http adapter's `auth_header` binding) into one zeroizing copy that
//! backs the `X-Vault-Token` header value (`Bytes::from_owner`), marked
//! sensitive and wiped when the request's headers are dropped; the bytes
//! hyper encodes into its write buffer are beyond the adapter's reach.
//!
//! # Limits
//!
//! Bodies are read under `VaultLimits::max_response_bytes` and charged; the
//! charged body stays with the client until the call ends, so the copy
//! rustify parses is covered. Data to write and transit plaintext are
//! bounded by `VaultLimits::max_secret_bytes`, ciphertext by what such a
//! plaintext encrypts to, every request body by that plus 4 KiB, all refused
//! before any dial, as are a check-and-set version above Vault's `u32`, an
//! empty or oversized (over 1,000) or zero version list, custom metadata
//! over Vault's bounds (64 keys, 128-byte keys, 512-byte values) and a
//! transit key name that is not one segment (`InvalidInput`).
//!
//! # Answers and errors
//!
//! 404 is `NotFound`, 403 `Denied` (a wrong or revoked token), 400 with
//! Vault's `check-and-set parameter did not match the current version`
//! `CasConflict`, other statuses `Rejected` with at most four of Vault's
//! messages of at most 200 bytes. A failure travels through rustify as its
//! `ClientError::ResponseError` carrying the typed `VaultError`, and comes
//! back out unchanged; rustify's own errors become `Protocol` without their
//! content. A dial that cannot reach the server or fails its TLS handshake
//! fails (`Refused`, `Timeout`, `Handshake`) and puts the client into
//! backoff; a sealed or uninitialised server is reachable, so it is no
//! failed dial: its 503 passes through as `Rejected` (record 0027,
//! `docs/decisions/0027-no-health-check-on-a-vault-connection.md`).
//!
//! # Pooled, charged, destroyed
//!
//! - **Pooled:** the http adapter's `HttpConnection`: each call reserves one
//!   with `reserve_connection` and the slot's `HttpDialer` (the http
//!   adapter's `checkout`) and sends its KV-v2 request on it; the socket is
//!   owned by the connection's driver.
//! - **Charged:** as HTTP: the node's and the client's connection charges
//!   before the dial, held by the connection and its driver until the
//!   socket is closed and the driver joined (no `provider_workers` slot). Response bodies are charged
//!   chunk by chunk as read (`OutputBuffer`): the first chunk over the
//!   tenant's share or the node's budget fails the call as `Staging`, and
//!   the connection is destroyed. A read's secret data (the secret's `data`
//!   object as JSON) and a metadata response body are the request's
//!   `StagedOutput`; a write returns only its small version record; a
//!   decrypted transit plaintext is the request's `StagedOutput`, wiped
//!   when dropped.
//! - **Not charged:** the JSON a read parses (transient, bounded by
//!   `max_response_bytes`); its peak is a small multiple of the charged
//!   body, not a constant.
//! - **Destroyed:** as HTTP: dropping it drops the sender, the driver closes
//!   the socket and only then is its job joined and its worker slot
//!   returned. Parked only by the http adapter's rule — the answer read to
//!   its end (whatever its status: 200, 404, 403, a check-and-set conflict,
//!   a sealed server's 503), HTTP/1.1 without `Connection: close`, the
//!   connection ready again within `REUSE_WAIT`; a transport error, an
//!   oversized body, a deadline or a dropped future destroy it.
//! - **Stale connections:** nothing is retried: an idle connection whose
//!   driver saw the server close it has left the stash; one that closes
//!   between checkout and send hands the request back unsent and the
//!   request goes to another connection (the HTTP adapter's delivery,
//!   `adapters/src/http_origin/delivery.rs`); a request a connection took is never
//!   sent again.

mod client;
mod config;
mod error;
mod exchange;
mod ops;
mod path;
mod secret;
mod sizes;
mod transit;
mod versions;
mod wire;

pub use config::{
    TransitKey, VaultAddress, CA_FILE_SETTING, DEFAULT_MOUNT, DEFAULT_TRANSIT_MOUNT, MAX_TOKEN,
    MOUNT_SETTING, NAMESPACE_SETTING, TRANSIT_MOUNT_SETTING,
};
pub use error::VaultError;
pub use ops::{read, read_metadata, read_version, write};
pub use path::{PathError, SecretPath, MAX_MOUNT, MAX_PATH};
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
