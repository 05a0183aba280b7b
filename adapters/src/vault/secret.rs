//! What the KV-v2 operations return and take: a secret version read, a
//! version's metadata, a secret's metadata, a listing, a metadata update.
//!
//! Invariants:
//! - What a call retains is charged: secret data, a metadata answer and a
//!   listing answer are the request's [`StagedOutput`], holding its
//!   running owner until dropped.
//! - `Debug` never shows secret data or custom metadata values: lengths
//!   and counts only.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use provider_pools_actors::StagedOutput;
use serde_json::{Map, Value};
use vaultrs::api::kv2::responses::SecretVersionMetadata;

use crate::vault::error::VaultError;

/// One version's metadata, as a read or a write reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionMetadata {
    /// The version number (from 1).
    pub version: u64,
    /// When it was written (RFC 3339).
    pub created_time: String,
    /// When it was soft-deleted, or empty.
    pub deletion_time: String,
    /// True once destroyed.
    pub destroyed: bool,
}

impl From<SecretVersionMetadata> for VersionMetadata {
    fn from(m: SecretVersionMetadata) -> Self {
        Self {
            version: m.version,
            created_time: m.created_time,
            deletion_time: m.deletion_time,
            destroyed: m.destroyed,
        }
    }
}

/// A secret version read: its data, charged to the request as staged
/// output (holding the request's running owner until dropped), and its
/// metadata.
pub struct VaultSecret {
    /// The version read.
    pub metadata: VersionMetadata,
    /// The secret's `data` object as JSON, charged.
    pub data: StagedOutput,
}

impl VaultSecret {
    /// Parses the charged data into a map (the caller's own copy).
    ///
    /// # Errors
    ///
    /// [`VaultError::Protocol`] if it is not a JSON object (not expected:
    /// it was checked when read).
    pub fn to_map(&self) -> Result<Map<String, Value>, VaultError> {
        serde_json::from_slice(self.data.bytes()).map_err(|_| VaultError::Protocol {
            phase: "parsing the secret's data",
        })
    }
}

impl fmt::Debug for VaultSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VaultSecret")
            .field("metadata", &self.metadata)
            .field("data_len", &self.data.bytes().len())
            .finish()
    }
}

/// The state of one version, as the metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionState {
    /// When it was written (RFC 3339).
    pub created_time: String,
    /// When it was soft-deleted, or empty.
    pub deletion_time: String,
    /// True once destroyed.
    pub destroyed: bool,
}

/// A secret's metadata: its settings, its versions and their states.
pub struct SecretMetadata {
    /// The newest version.
    pub current_version: u64,
    /// The oldest version kept.
    pub oldest_version: u64,
    /// When the secret was created (RFC 3339).
    pub created_time: String,
    /// When it was last written (RFC 3339).
    pub updated_time: String,
    /// Most versions kept (`0`: the mount's setting).
    pub max_versions: u64,
    /// True when every write must carry a check-and-set version.
    pub cas_required: bool,
    /// How long a version lives before it is soft-deleted, as Vault
    /// writes it (`0s`: forever).
    pub delete_version_after: String,
    /// The secret's custom metadata.
    pub custom_metadata: BTreeMap<String, String>,
    /// Every version kept, by number.
    pub versions: BTreeMap<u64, VersionState>,
    /// The response body as received, charged to the request (it bounds
    /// what the fields above hold), holding its running owner until dropped.
    pub body: StagedOutput,
}

impl fmt::Debug for SecretMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretMetadata")
            .field("current_version", &self.current_version)
            .field("oldest_version", &self.oldest_version)
            .field("created_time", &self.created_time)
            .field("updated_time", &self.updated_time)
            .field("max_versions", &self.max_versions)
            .field("cas_required", &self.cas_required)
            .field("custom_metadata", &self.custom_metadata.len())
            .field("versions", &self.versions.len())
            .finish_non_exhaustive()
    }
}

/// The names under a folder: secrets, and sub-folders ending in `/`.
pub struct SecretList {
    /// The names, as Vault lists them.
    pub keys: Vec<String>,
    /// The response body as received, charged to the request (it bounds
    /// the names), holding its running owner until dropped.
    pub body: StagedOutput,
}

impl fmt::Debug for SecretList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretList")
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

/// Settings of a secret's metadata to change; `None` leaves one as it is.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct MetadataUpdate {
    /// Most versions kept (`0`: the mount's setting).
    pub max_versions: Option<u64>,
    /// Whether every write must carry a check-and-set version.
    pub cas_required: Option<bool>,
    /// How long a version lives before it is soft-deleted (zero: forever);
    /// whole seconds.
    pub delete_version_after: Option<Duration>,
    /// The custom metadata, replacing what the secret has: at most
    /// [`MAX_CUSTOM_METADATA`] keys of at most 128 bytes, values of at
    /// most 512 bytes (Vault's own bounds).
    pub custom_metadata: Option<BTreeMap<String, String>>,
}

impl fmt::Debug for MetadataUpdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetadataUpdate")
            .field("max_versions", &self.max_versions)
            .field("cas_required", &self.cas_required)
            .field("delete_version_after", &self.delete_version_after)
            .field(
                "custom_metadata",
                &self.custom_metadata.as_ref().map(BTreeMap::len),
            )
            .finish()
    }
}

/// Most custom metadata keys of a secret.
pub const MAX_CUSTOM_METADATA: usize = 64;
const MAX_CUSTOM_KEY: usize = 128;
const MAX_CUSTOM_VALUE: usize = 512;

impl MetadataUpdate {
    /// Checks the update against Vault's bounds, before any dial.
    ///
    /// # Errors
    ///
    /// [`VaultError::InvalidInput`] naming the field.
    pub(crate) fn check(&self) -> Result<(), VaultError> {
        if let Some(after) = self.delete_version_after {
            if after.subsec_nanos() != 0 {
                return Err(VaultError::InvalidInput {
                    input: "delete_version_after",
                    reason: "must be whole seconds",
                });
            }
        }
        if let Some(custom) = &self.custom_metadata {
            let refuse = |reason| VaultError::InvalidInput {
                input: "custom metadata",
                reason,
            };
            if custom.len() > MAX_CUSTOM_METADATA {
                return Err(refuse("has more than 64 keys"));
            }
            for (key, value) in custom {
                if key.is_empty() || key.len() > MAX_CUSTOM_KEY {
                    return Err(refuse("has a key that is empty or longer than 128 bytes"));
                }
                if value.len() > MAX_CUSTOM_VALUE {
                    return Err(refuse("has a value longer than 512 bytes"));
                }
            }
        }
        Ok(())
    }
}
