//! The KV-v2 operations: read (latest or a version), write with an
//! optional check-and-set, read metadata. Each checks its slot and input
//! before any dial, runs one bounded exchange, and charges what it returns.

use std::collections::BTreeMap;
use std::fmt;

use provider_pools_actors::{Bytes, ProviderPools, RunningRequest, StagedOutput};
use serde_json::{Map, Value};

use crate::http::HttpDialer;
use crate::vault::config::SecretPath;
use crate::vault::error::VaultError;
use crate::vault::exchange::{exchange, Slot};
use crate::vault::wire::{envelope_data, Endpoint, MetadataAnswer, ReadAnswer, VersionAnswer};
use crate::vault::VaultLimits;

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

impl From<VersionAnswer> for VersionMetadata {
    fn from(m: VersionAnswer) -> Self {
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

/// A secret's metadata: its versions and their states.
pub struct SecretMetadata {
    /// The newest version.
    pub current_version: u64,
    /// The oldest version kept.
    pub oldest_version: u64,
    /// When the secret was created (RFC 3339).
    pub created_time: String,
    /// When it was last written (RFC 3339).
    pub updated_time: String,
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
            .field("versions", &self.versions.len())
            .finish_non_exhaustive()
    }
}

/// Reads the latest version of the secret at `path`.
///
/// The exchange — connection, request, answer — is bounded by the
/// request's deadline; the token is the running epoch's.
///
/// # Cancel safety
///
/// Dropping the future destroys the connection in use (it is never
/// parked); a dial in progress counts as cancelled and the client backs off.
///
/// # Errors
///
/// [`VaultError::Config`] before any dial; [`VaultError::NotFound`],
/// [`VaultError::Denied`] and [`VaultError::Rejected`] for Vault's
/// answers; [`VaultError::Connect`]; [`VaultError::TooLarge`],
/// [`VaultError::Protocol`] and [`VaultError::Timeout`] with the connection
/// destroyed; [`VaultError::Staging`] when the data cannot be charged.
pub async fn read(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    path: &SecretPath,
    limits: VaultLimits,
) -> Result<VaultSecret, VaultError> {
    limits.check()?;
    read_at(pools, running, dialer, path, None, limits).await
}

/// Reads version `version` of the secret at `path`.
///
/// # Cancel safety
///
/// As [`read`].
///
/// # Errors
///
/// As [`read`]; a deleted, destroyed or missing version is
/// [`VaultError::NotFound`].
pub async fn read_version(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    path: &SecretPath,
    version: u64,
    limits: VaultLimits,
) -> Result<VaultSecret, VaultError> {
    limits.check()?;
    read_at(pools, running, dialer, path, Some(version), limits).await
}

async fn read_at(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    path: &SecretPath,
    version: Option<u64>,
    limits: VaultLimits,
) -> Result<VaultSecret, VaultError> {
    limits.check()?;
    let slot = Slot::of(running)?;
    let endpoint = Endpoint::read(&slot.mount, path, version);
    let body = exchange(
        pools,
        running,
        dialer,
        &slot,
        endpoint,
        limits.max_response_bytes,
    )
    .await?;
    let response: ReadAnswer = envelope_data(body.bytes())?;
    drop(body);
    if !response.data.is_object() {
        return Err(VaultError::Protocol {
            phase: "reading the secret's data",
        });
    }
    let data = serde_json::to_vec(&response.data).map_err(|_| VaultError::Protocol {
        phase: "reading the secret's data",
    })?;
    let data = running
        .stage_output(Bytes::from(data))
        .map_err(VaultError::Staging)?;
    Ok(VaultSecret {
        metadata: response.metadata.into(),
        data,
    })
}

/// Writes `data` as a new version of the secret at `path`. With
/// `cas = Some(n)` Vault writes only if the current version is `n` (`0`:
/// only if the secret does not exist yet).
///
/// # Cancel safety
///
/// As [`read`]; once the request was sent the write may have happened.
///
/// # Errors
///
/// [`VaultError::TooLarge`] (data over `limits.max_secret_bytes`) and
/// [`VaultError::InvalidWrite`] before any dial; [`VaultError::CasConflict`]
/// when the check-and-set version did not match; otherwise as [`read`].
pub async fn write(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    path: &SecretPath,
    data: Map<String, Value>,
    cas: Option<u64>,
    limits: VaultLimits,
) -> Result<VersionMetadata, VaultError> {
    limits.check()?;
    let len = serde_json::to_vec(&data)
        .map_err(|_| VaultError::InvalidWrite {
            reason: "the data cannot be serialized",
        })?
        .len();
    if len > limits.max_secret_bytes {
        return Err(VaultError::TooLarge {
            what: "secret data",
            len: len as u64,
            max: limits.max_secret_bytes,
        });
    }
    let cas = cas
        .map(|cas| {
            u32::try_from(cas).map_err(|_| VaultError::InvalidWrite {
                reason: "the check-and-set version is above 4294967295",
            })
        })
        .transpose()?;
    let slot = Slot::of(running)?;
    let endpoint = Endpoint::write(&slot.mount, path, data, cas)?;
    let body = exchange(
        pools,
        running,
        dialer,
        &slot,
        endpoint,
        limits.max_response_bytes,
    )
    .await?;
    Ok(envelope_data::<VersionAnswer>(body.bytes())?.into())
}

/// Reads the metadata of the secret at `path`: its versions and their
/// states.
///
/// # Cancel safety
///
/// As [`read`].
///
/// # Errors
///
/// As [`read`].
pub async fn read_metadata(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    path: &SecretPath,
    limits: VaultLimits,
) -> Result<SecretMetadata, VaultError> {
    limits.check()?;
    let slot = Slot::of(running)?;
    let endpoint = Endpoint::metadata(&slot.mount, path);
    let body = exchange(
        pools,
        running,
        dialer,
        &slot,
        endpoint,
        limits.max_response_bytes,
    )
    .await?;
    let response: MetadataAnswer = envelope_data(body.bytes())?;
    let mut versions = BTreeMap::new();
    for (number, state) in response.versions {
        let number = number.parse::<u64>().map_err(|_| VaultError::Protocol {
            phase: "reading the version numbers",
        })?;
        versions.insert(
            number,
            VersionState {
                created_time: state.created_time,
                deletion_time: state.deletion_time,
                destroyed: state.destroyed,
            },
        );
    }
    Ok(SecretMetadata {
        current_version: response.current_version,
        oldest_version: response.oldest_version,
        created_time: response.created_time,
        updated_time: response.updated_time,
        versions,
        body,
    })
}
