//! The KV-v2 calls on a secret's versions and metadata beyond reading
//! them: list a folder, soft-delete (the latest or given versions),
//! undelete, destroy, update the metadata. Each checks its slot and input
//! before any dial and runs one vaultrs endpoint on a [`PoolClient`].

use std::collections::HashMap;

use provider_pools_actors::{ProviderPools, RunningRequest};

use crate::http_origin::HttpDialer;
use crate::vault::client::PoolClient;
use crate::vault::error::VaultError;
use crate::vault::exchange::Slot;
use crate::vault::path::SecretPath;
use crate::vault::secret::{MetadataUpdate, SecretList};
use crate::vault::wire;
use crate::vault::VaultLimits;

/// Most versions one delete, undelete or destroy names.
pub const MAX_VERSIONS: usize = 1000;

/// Lists the names under `folder` (the mount's root for `None`): secrets,
/// and sub-folders ending in `/`.
///
/// # Cancel safety
///
/// As [`read`](super::read).
///
/// # Errors
///
/// As [`read`](super::read); an empty or missing folder is
/// [`VaultError::NotFound`].
pub async fn list(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    folder: Option<&SecretPath>,
    limits: VaultLimits,
) -> Result<SecretList, VaultError> {
    limits.check()?;
    let slot = Slot::of(running)?;
    let client = PoolClient::new(pools, running, dialer, &slot, limits);
    let listed = client.data(&wire::list(&slot.mount, folder)).await?;
    let body = client.take_answer().ok_or(VaultError::Protocol {
        phase: "reading the response",
    })?;
    Ok(SecretList {
        keys: listed.keys,
        body,
    })
}

/// Soft-deletes the latest version of the secret at `path`; its data can
/// be undeleted until it is destroyed.
///
/// # Cancel safety
///
/// As [`read`](super::read); once the request was sent the delete may
/// have happened.
///
/// # Errors
///
/// As [`read`](super::read).
pub async fn delete_latest(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    path: &SecretPath,
    limits: VaultLimits,
) -> Result<(), VaultError> {
    limits.check()?;
    let slot = Slot::of(running)?;
    let client = PoolClient::new(pools, running, dialer, &slot, limits);
    client.empty(&wire::delete_latest(&slot.mount, path)).await
}

/// Declares a public call that changes some versions of one secret from
/// its own first doc lines and its endpoint: every such call checks the
/// bounds and the versions before any dial, then sends the endpoint built
/// for the slot's mount, expecting no body back.
macro_rules! versions_call {
    ($(#[doc = $doc:literal])* $name:ident => $endpoint:path) => {
        $(#[doc = $doc])*
        ///
        /// # Cancel safety
        ///
        /// As [`delete_latest`].
        ///
        /// # Errors
        ///
        /// [`VaultError::InvalidInput`] (`versions` empty, over
        /// [`MAX_VERSIONS`], or naming version 0) before any dial;
        /// otherwise as [`read`](super::read).
        pub async fn $name(
            pools: &ProviderPools,
            running: &RunningRequest,
            dialer: &HttpDialer,
            path: &SecretPath,
            versions: &[u64],
            limits: VaultLimits,
        ) -> Result<(), VaultError> {
            limits.check()?;
            let versions = checked_versions(versions)?;
            let slot = Slot::of(running)?;
            let client = PoolClient::new(pools, running, dialer, &slot, limits);
            client.empty(&$endpoint(&slot.mount, path, versions)).await
        }
    };
}

versions_call! {
    /// Soft-deletes `versions` of the secret at `path`.
    delete_versions => wire::delete_versions
}

versions_call! {
    /// Restores soft-deleted `versions` of the secret at `path` (destroyed
    /// ones stay destroyed).
    undelete => wire::undelete
}

versions_call! {
    /// Destroys `versions` of the secret at `path`: their data is gone for
    /// good; the metadata keeps them, marked destroyed.
    destroy => wire::destroy
}

/// Changes the settings `update` names in the metadata of the secret at
/// `path` (creating the metadata if the secret has none yet).
///
/// # Cancel safety
///
/// As [`delete_latest`].
///
/// # Errors
///
/// [`VaultError::InvalidInput`] (custom metadata over Vault's bounds, a
/// `delete_version_after` not in whole seconds) before any dial;
/// otherwise as [`read`](super::read).
pub async fn update_metadata(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    path: &SecretPath,
    update: &MetadataUpdate,
    limits: VaultLimits,
) -> Result<(), VaultError> {
    limits.check()?;
    update.check()?;
    let slot = Slot::of(running)?;
    let custom = update.custom_metadata.as_ref().map(|c| {
        c.iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<HashMap<_, _>>()
    });
    let endpoint = wire::update_metadata(
        &slot.mount,
        path,
        update.max_versions,
        update.cas_required,
        update
            .delete_version_after
            .map(|after| format!("{}s", after.as_secs())),
        custom,
    );
    let client = PoolClient::new(pools, running, dialer, &slot, limits);
    client.empty(&endpoint).await
}

/// `versions` as sent: non-empty, at most [`MAX_VERSIONS`], none 0.
fn checked_versions(versions: &[u64]) -> Result<Vec<u64>, VaultError> {
    let refuse = |reason| VaultError::InvalidInput {
        input: "versions",
        reason,
    };
    if versions.is_empty() {
        return Err(refuse("is empty"));
    }
    if versions.len() > MAX_VERSIONS {
        return Err(refuse("names more than 1000 versions"));
    }
    if versions.contains(&0) {
        return Err(refuse("names version 0 (versions start at 1)"));
    }
    Ok(versions.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_lists_are_checked_before_any_dial() {
        assert_eq!(checked_versions(&[1, 3]).ok(), Some(vec![1, 3]));
        for bad in [&[][..], &[0, 1][..], &[1; MAX_VERSIONS + 1][..]] {
            let err = checked_versions(bad).expect_err("refused");
            assert_eq!(err.code(), "invalid_input");
        }
    }
}
