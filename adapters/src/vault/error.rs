//! [`VaultError`]: every way a Vault call fails, with a stable code.
//!
//! Invariants:
//! - No variant holds the token, request data or secret values; server
//!   messages are kept only for statuses without a variant of their own,
//!   bounded in number and length.
//! - [`VaultError::code`] never changes for a variant; messages may.

use provider_pools_actors::{AdmitError, ConnectError};

use crate::vault::path::PathError;

/// Most server messages kept in a [`VaultError::Rejected`].
pub(crate) const MAX_SERVER_MESSAGES: usize = 4;
/// Longest server message kept, in bytes.
pub(crate) const MAX_SERVER_MESSAGE: usize = 200;

/// Why a Vault call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VaultError {
    /// A size or count bound is above its ceiling; refused before any I/O.
    #[error("invalid limits")]
    Limit(#[from] crate::limits::LimitError),
    /// No secret (or no such version) at the path: HTTP 404.
    #[error("no secret at this path")]
    NotFound,
    /// The epoch's token may not do this, or is not valid: HTTP 403.
    #[error("permission denied")]
    Denied,
    /// A write's check-and-set version did not match the current version.
    #[error("check-and-set version did not match the current version")]
    CasConflict,
    /// Data to write, or a response, is over its limit. A refused write
    /// dialed nothing; an oversized response destroyed its connection.
    #[error("{what} of {len} bytes is over the limit of {max}")]
    TooLarge {
        /// `secret data`, `custom metadata`, `plaintext`, `ciphertext`,
        /// `request body` or `response body`.
        what: &'static str,
        /// Its length, or the bytes read before the limit was passed.
        len: u64,
        /// The limit.
        max: usize,
    },
    /// The guest's secret path was refused.
    #[error("invalid secret path")]
    Path(#[from] PathError),
    /// The data to write is not representable as a KV-v2 write (a
    /// check-and-set version above what Vault's API accepts).
    #[error("invalid write: {reason}")]
    InvalidWrite {
        /// A fixed reason.
        reason: &'static str,
    },
    /// A guest's input other than a path was refused before any dial: a
    /// transit key name, a version list, a ciphertext, custom metadata.
    #[error("invalid {input}: {reason}")]
    InvalidInput {
        /// What was refused (`transit key`, `versions`, `ciphertext`,
        /// `custom metadata`, `delete_version_after`).
        input: &'static str,
        /// A fixed reason; never the value.
        reason: &'static str,
    },
    /// The slot's configuration, a setting or the epoch's token is unusable.
    /// Nothing was sent.
    #[error("invalid configuration: {setting} {reason}")]
    Config {
        /// The setting (`target`, `mount`, `transit_mount`, `namespace`,
        /// `ca_file`, `credential`).
        setting: &'static str,
        /// A fixed reason; never the value.
        reason: &'static str,
    },
    /// No connection was reserved: backoff, saturation, a failed dial, a
    /// deadline, or closed pools. Nothing was sent on this request's behalf.
    #[error("no connection")]
    Connect(#[from] ConnectError),
    /// The request's deadline passed (or the connect timeout did); the
    /// connection was destroyed.
    #[error("deadline passed during the vault exchange")]
    Timeout,
    /// The connection failed mid-exchange, or the server answered something
    /// that is not Vault's API; the connection was destroyed.
    #[error("vault protocol error while {phase}")]
    Protocol {
        /// What was being done.
        phase: &'static str,
    },
    /// Vault refused the request with a status of no variant of its own.
    #[error("vault answered status {status}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// Vault's error messages, at most 4 of at most 200 bytes each.
        messages: Vec<String>,
    },
    /// The result could not be charged.
    #[error("result not staged")]
    Staging(#[source] AdmitError),
}

impl VaultError {
    /// [`VaultError::TooLarge`] when `len` bytes of `what` are over `max`.
    pub(crate) fn check_size(what: &'static str, len: usize, max: usize) -> Result<(), Self> {
        if len > max {
            return Err(Self::TooLarge {
                what,
                len: len as u64,
                max,
            });
        }
        Ok(())
    }

    /// The stable code of this error. A refused connection keeps its own
    /// code (`unavailable`, `busy`, `capacity`, `timeout`, `closed`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Limit(e) => e.code(),
            Self::NotFound => "not_found",
            Self::Denied => "denied",
            Self::CasConflict => "cas_conflict",
            Self::TooLarge { .. } => "too_large",
            Self::Path(_) => "invalid_path",
            Self::InvalidWrite { .. } => "invalid_write",
            Self::InvalidInput { .. } => "invalid_input",
            Self::Config { .. } => "invalid_config",
            Self::Connect(e) => e.code(),
            Self::Timeout => "timeout",
            Self::Protocol { .. } => "protocol",
            Self::Rejected { .. } => "rejected",
            Self::Staging(e) => e.code(),
        }
    }
}

/// Server messages cut to their bounds, on character boundaries.
pub(crate) fn bounded_messages(messages: Vec<String>) -> Vec<String> {
    messages
        .into_iter()
        .take(MAX_SERVER_MESSAGES)
        .map(|mut message| {
            if message.len() > MAX_SERVER_MESSAGE {
                let mut end = MAX_SERVER_MESSAGE;
                while !message.is_char_boundary(end) {
                    end -= 1;
                }
                message.truncate(end);
            }
            message
        })
        .collect()
}
