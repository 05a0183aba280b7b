//! [`SecretError`]: why a reload or a read failed, by phase, with a stable
//! code. An error never carries secret bytes or a path: names, lengths,
//! bounds and I/O error kinds only.

use provider_pools_actors::{AdmitError, JobError, LookupError};

/// Why a secret reload or read failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// A setting is not a decimal integer from 1 to its ceiling.
    #[error("secret setting `{setting}` must be an integer from 1 to {max}")]
    Setting {
        /// The setting's key.
        setting: &'static str,
        /// Its ceiling.
        max: u64,
    },
    /// The origin reached is not a secret origin.
    #[error("the origin is not a secret origin")]
    NotSecret,
    /// The operator's slot names no usable client.
    #[error("secret origin lookup failed")]
    Lookup(#[source] LookupError),
    /// The configured directory cannot be used (missing, not a directory,
    /// or a relative target).
    #[error("secret directory unusable: {0}")]
    Directory(std::io::ErrorKind),
    /// No file is stored under the name.
    #[error("no secret file under this name")]
    NotFound,
    /// The name resolves outside the directory (through a symlink).
    #[error("secret name resolves outside the secret directory")]
    Escapes,
    /// The name is a directory, a pipe or another non-file.
    #[error("secret name does not name a regular file")]
    NotAFile,
    /// The file exists but may not be read.
    #[error("secret file is not readable")]
    PermissionDenied,
    /// The file is larger than `max_secret_bytes`; nothing was read.
    #[error("secret file is {len} bytes, more than {limit}")]
    TooLarge {
        /// Its size when it was opened.
        len: u64,
        /// The bound.
        limit: u32,
    },
    /// The file grew past what was prepaid for it while it was read; the
    /// cache is unchanged.
    #[error("secret file grew past its prepaid {prepaid} bytes while it was read")]
    Grew {
        /// The size that was prepaid for.
        prepaid: u64,
    },
    /// The cache holds `max_secrets` other names, none of them expired.
    #[error("secret cache is full: {limit} secrets")]
    Full {
        /// The bound.
        limit: usize,
    },
    /// A reload that read the file later already installed its material;
    /// this older read was discarded.
    #[error("a later reload of this secret already installed newer material")]
    Superseded,
    /// The metadata budget had no room for the reload's prepayment.
    #[error("no room to prepay the reload")]
    Capacity(#[source] AdmitError),
    /// No worker could run the reload, or it panicked.
    #[error("secret reload job failed")]
    Job(#[source] JobError),
    /// Nothing is loaded under the name.
    #[error("no material is loaded under this name")]
    NotLoaded,
    /// The loaded material is past its time to live; a reload is needed.
    #[error("the secret's material (version {version}) expired")]
    Expired {
        /// The version that expired.
        version: u64,
    },
    /// An I/O error, by kind only.
    #[error("secret i/o failed: {0}")]
    Io(std::io::ErrorKind),
}

impl SecretError {
    /// A stable code for this error, for callers and metrics.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Setting { .. } => "invalid_setting",
            Self::NotSecret => "not_secret",
            Self::Lookup(_) => "invalid_slot",
            Self::Directory(_) => "directory_unusable",
            Self::NotFound => "not_found",
            Self::Escapes => "escapes_directory",
            Self::NotAFile => "not_a_file",
            Self::PermissionDenied => "permission_denied",
            Self::TooLarge { .. } => "too_large",
            Self::Grew { .. } => "grew",
            Self::Full { .. } => "full",
            Self::Superseded => "superseded",
            Self::Capacity(e) => e.code(),
            Self::Job(e) => e.code(),
            Self::NotLoaded => "not_loaded",
            Self::Expired { .. } => "expired",
            Self::Io(_) => "io",
        }
    }

    /// An I/O error of a secret file, by kind.
    pub(crate) fn io(e: &std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => Self::NotFound,
            std::io::ErrorKind::PermissionDenied => Self::PermissionDenied,
            kind => Self::Io(kind),
        }
    }
}
