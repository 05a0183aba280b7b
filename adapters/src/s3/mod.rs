//! The S3 blob adapter: objects in one bucket of an S3 endpoint, through
//! `aws-sdk-s3` whose HTTP requests travel on the pools' own connections.
//!
//! The trusted configuration names the endpoint origin (`https://host[:port]`,
//! or `http://` for a local endpoint) as the target of an
//! [`OriginKind::S3`](provider_pools_actors::OriginKind) slot. A guest names
//! an [`ObjectKey`] only. Operations: [`head`], [`get`] (streamed), [`put`] /
//! [`put_input`] (given bytes or the request's staged input), [`list`],
//! [`delete`].
//!
//! Invariants:
//! - One SDK client per client and epoch, built from the epoch's credential;
//!   a rotation builds a new one while calls on the old epoch finish on it.
//! - The SDK sends nothing on its own: each operation binds an HTTP client
//!   for its running request, which reserves the pools' HTTP connections
//!   (`reserve_connection` with [`HttpDialer`](crate::http_origin::HttpDialer)),
//!   so every S3 connection is charged, owned and visible in snapshots.
//! - Only the slot's approved endpoint is reached; a request for any other
//!   scheme, host or port is refused before a connection is reserved.
//! - A connection is parked only after a complete answer on a keep-alive
//!   connection that is ready again; a dropped call, a dropped reader, a
//!   deadline or a broken exchange destroys it.
//! - Sizes are bounded by [`S3Limits`]; an oversized put dials nothing.
//! - Nothing is retried (the SDK's retries are disabled) and the request's
//!   deadline bounds every exchange, connection and body.
//! - Errors and `Debug` output never show the credential, not even the
//!   access key id.
//!
//! # Settings and credential
//!
//! Settings [`REGION_SETTING`] (`region`, required), [`BUCKET_SETTING`]
//! (`bucket`, required: the one bucket the provider serves) and
//! [`PATH_STYLE_SETTING`] (`path_style`: `true`, the default; `false` sends
//! `bucket.host` in `Host` while still connecting to the approved origin).
//! `s3::validate(&ProviderConfig)` refuses a bad configuration before
//! install, naming the setting. The credential bytes are
//! `ACCESS_KEY_ID:SECRET_ACCESS_KEY` (printable ASCII; another shape is
//! `S3ConfigError::Credential` with a fixed reason, never the bytes).
//!
//! # The SDK client and its connector
//!
//! The SDK `Client` is built once per client and epoch through
//! `ClientLease::adapter_state`, with static credentials,
//! `BehaviorVersion::latest()`, the endpoint, region and `force_path_style`;
//! retries, SDK timeouts and stalled-stream protection are off, and request
//! checksums are computed only when an operation requires them. Its
//! client-level HTTP client refuses every request; each operation passes
//! its `PoolConnector` (aws-smithy-runtime-api's `HttpClient` +
//! `HttpConnector`, bound to its `RunningRequest`) through the SDK's
//! per-operation config override (`customize().config_override(...)`), so
//! no S3 byte moves outside the pools' accounting and a rotation's calls
//! use the new epoch's client while calls holding the old epoch finish on
//! the old one. The connector refuses a request whose scheme, host or port
//! is not the slot's endpoint (bucket-prefixed host under virtual-hosted
//! addressing) before reserving anything, bounds the request body
//! (`S3Limits::max_object`, and an oversized `put` is refused before the
//! SDK runs) and every answer (`max_object` for a get, `max_response`
//! otherwise).
//!
//! # Errors
//!
//! Errors (`S3Error`) keep S3's status and short error code only, never its
//! message (which can echo the access key id): 404/`NoSuchKey` is
//! `NotFound`; 403, `AccessDenied`, `SignatureDoesNotMatch` and
//! `InvalidAccessKeyId` are `Denied`.
//!
//! # Pooled, charged, destroyed
//!
//! - **Pooled:** the http adapter's `HttpConnection`: the SDK has no HTTP
//!   client of its own; the operation's `PoolConnector` reserves connections
//!   with `reserve_connection` and `HttpDialer` and sends the SDK's signed
//!   request on them.
//! - **Charged:** as HTTP: the connection charges before the dial, shared
//!   with the connection's driver (no `provider_workers` slot); a streamed object's chunks as the
//!   request's `StagedOutput`; the SDK client itself is per-epoch adapter
//!   state (no connection of its own).
//! - **Charged where the SDK reads:** the SDK owns the buffering of every
//!   answer but a streamed get's 2xx body, and it reads the frames of
//!   `PooledBody`; each frame is charged there before the SDK gets it
//!   (shared `Bytes`, not copied), held until the operation's connector
//!   drops. Every non-2xx answer (an error document, also of a get) is
//!   charged the same way and bounded by `S3Limits::max_response`, since the
//!   SDK reads it whole. A streamed get's chunks are charged by `S3Reader`;
//!   the first that does not fit ends the reader and destroys the
//!   connection.
//! - **Not charged:** the SDK's parsed listing (bounded by `max_response`
//!   and `max_list`); its peak is a small multiple of the charged body, not
//!   a constant.
//! - **Destroyed:** as HTTP. The response body handed to the SDK
//!   (`PooledBody`) holds the connection: parked only when the SDK read it
//!   to its end, both heads allowed keep-alive and the connection is ready
//!   again; a dropped call, a dropped `S3Reader`, an oversized answer, a
//!   deadline or `Connection: close` destroy it.

mod body;
mod client;
mod config;
mod connector;
mod error;
mod key;
mod ops;
mod reader;

pub use config::{
    validate, validate_credential, S3ConfigError, S3Endpoint, BUCKET_SETTING, PATH_STYLE_SETTING,
    REGION_SETTING,
};
pub use error::S3Error;
pub use key::{ObjectKey, ObjectKeyError, MAX_KEY};
pub use ops::{delete, get, head, list, put, put_input};
pub use reader::S3Reader;

/// Size bounds of S3 operations.
///
/// Each bound is at most [`S3Limits::CEILING`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct S3Limits {
    /// Largest object stored or read, in bytes.
    pub max_object: u64,
    /// Most objects one listing returns.
    pub max_list: usize,
    /// Largest answer other than an object body (a listing page, an error
    /// document), in bytes.
    pub max_response: u64,
}

impl S3Limits {
    /// The largest bounds: 4 GiB objects, 100,000 listed objects, 16 MiB
    /// answers.
    pub const CEILING: Self = Self {
        max_object: 4 << 30,
        max_list: 100_000,
        max_response: 16 << 20,
    };

    /// Refuses a bound above [`Self::CEILING`]; every operation calls it
    /// before any I/O.
    ///
    /// # Errors
    ///
    /// [`crate::LimitError`] naming the field.
    pub fn check(&self) -> Result<(), crate::LimitError> {
        crate::limits::at_most("max_object", self.max_object, Self::CEILING.max_object)?;
        crate::limits::at_most("max_list", self.max_list, Self::CEILING.max_list as u64)?;
        crate::limits::at_most(
            "max_response",
            self.max_response,
            Self::CEILING.max_response,
        )?;
        Ok(())
    }
}

impl Default for S3Limits {
    /// 8 MiB objects, 1,000 listed objects, 1 MiB answers.
    fn default() -> Self {
        Self {
            max_object: 8 * 1024 * 1024,
            max_list: 1_000,
            max_response: 1024 * 1024,
        }
    }
}

/// What an S3 operation reports about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// The key.
    pub key: String,
    /// Its size in bytes.
    pub len: u64,
    /// Its entity tag, when the endpoint gave one.
    pub etag: Option<String>,
}
