//! The S3 blob adapter: objects in one bucket of an S3 endpoint, through
//! `aws-sdk-s3` whose HTTP requests travel on the pools' own connections.
//!
//! The trusted configuration names the endpoint origin (`https://host[:port]`,
//! or `http://` for a local endpoint) as the target of an
//! [`OriginKind::S3`](provider_pools_actors::OriginKind) slot, and the
//! settings [`REGION_SETTING`] (required), [`BUCKET_SETTING`] (required: the
//! one bucket the provider serves) and [`PATH_STYLE_SETTING`] (`true`, the
//! default, or `false`). The credential is `ACCESS_KEY_ID:SECRET_ACCESS_KEY`.
//! A guest names an [`ObjectKey`]. Operations: [`head`], [`get`]
//! (streamed), [`put`] / [`put_input`], [`list`], [`delete`].
//!
//! Invariants:
//! - One SDK client per client and epoch, built from the epoch's credential;
//!   a rotation builds a new one while calls on the old epoch finish on it.
//! - The SDK sends nothing on its own: each operation binds an HTTP client
//!   for its running request, which reserves the pools' HTTP connections
//!   (`reserve_connection` with [`HttpDialer`](crate::http::HttpDialer)),
//!   so every S3 connection is charged, owned and visible in snapshots.
//! - Only the slot's approved endpoint is reached; a request for any other
//!   scheme, host or port is refused before a connection is reserved.
//! - A connection is parked only after a complete answer on a keep-alive
//!   connection that is ready again; a dropped call, a dropped reader, a
//!   deadline or a broken exchange destroys it.
//! - Sizes are bounded by [`S3Limits`]; an oversized put dials nothing.
//! - Nothing is retried (the SDK's retries are disabled) and the request's
//!   deadline bounds every exchange.
//! - Errors and `Debug` output never show the credential, not even the
//!   access key id.

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
pub use key::{KeyError, ObjectKey, MAX_KEY};
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
