//! The KV-v2 reads and writes: read (latest or a version), write with an
//! optional check-and-set, read metadata. Each checks its slot and input
//! before any dial, runs one vaultrs endpoint on a [`PoolClient`], and
//! charges what it returns.

use std::collections::BTreeMap;

use provider_pools_actors::{Bytes, ProviderPools, RunningRequest};
use serde_json::{Map, Value};

use crate::http_origin::HttpDialer;
use crate::vault::client::PoolClient;
use crate::vault::error::VaultError;
use crate::vault::exchange::Slot;
use crate::vault::path::SecretPath;
use crate::vault::secret::{SecretMetadata, VaultSecret, VersionMetadata, VersionState};
use crate::vault::wire;
use crate::vault::VaultLimits;

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
    let client = PoolClient::new(pools, running, dialer, &slot, limits);
    let response = client.data(&wire::read(&slot.mount, path, version)).await?;
    // The data is staged on its own below; the whole answer's charge goes.
    drop(client);
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
    VaultError::check_size("secret data", len, limits.max_secret_bytes)?;
    let cas = cas
        .map(|cas| {
            u32::try_from(cas).map_err(|_| VaultError::InvalidWrite {
                reason: "the check-and-set version is above 4294967295",
            })
        })
        .transpose()?;
    let slot = Slot::of(running)?;
    let client = PoolClient::new(pools, running, dialer, &slot, limits);
    let written = client
        .data(&wire::write(&slot.mount, path, data, cas))
        .await?;
    Ok(written.into())
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
    let client = PoolClient::new(pools, running, dialer, &slot, limits);
    let response = client.data(&wire::metadata(&slot.mount, path)).await?;
    let body = client.take_answer().ok_or(VaultError::Protocol {
        phase: "reading the response",
    })?;
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
        max_versions: response.max_versions,
        cas_required: response.cas_required,
        delete_version_after: response.delete_version_after,
        custom_metadata: response
            .custom_metadata
            .unwrap_or_default()
            .into_iter()
            .collect(),
        versions,
        body,
    })
}
