//! Installing and rotating providers, and looking up their current
//! epochs: `install`, `rotate`, `client`, `describe`.

use crate::credential::Credential;
use crate::epoch::{ClientLease, TypedSlot};
use crate::error::{InstallError, LookupError};
use crate::identity::{OriginKind, ProviderId};
use crate::install::{InstallReceipt, Installation, ProviderDescriptor};
use crate::provider_pools::ProviderPools;

/// How many times a lookup re-reads the directory when the epoch it found
/// was retired under it by a concurrent rotation.
const LOOKUP_ATTEMPTS: usize = 4;

impl ProviderPools {
    /// Installs a provider's first epoch (`expected` zero) or replaces its
    /// current one (`expected` the installed epoch), publishing atomically.
    ///
    /// # Cancel safety
    ///
    /// Once the request is queued, dropping the future does not undo it: the
    /// installation completes or is refused, and only the answer is lost.
    /// [`ProviderPools::describe`] tells which epoch is installed.
    ///
    /// # Errors
    ///
    /// Every [`InstallError`]; on any of them the previous epoch, if any,
    /// stays installed and usable.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{
    ///     Authority, BrokerGeneration, Credential, Epoch, InstallError, Installation, OriginKind,
    ///     OriginSlot, PoolsConfig, ProviderConfig, ProviderId, ProviderPools, ServiceName,
    /// };
    ///
    /// fn installation(expected: Epoch, token: &[u8]) -> Result<Installation, Box<dyn std::error::Error>> {
    ///     Ok(Installation {
    ///         provider: ProviderId::new("weather")?,
    ///         authority: Authority::new("https://api.weather.example")?,
    ///         expected,
    ///         credential: Credential::new(token.to_vec())?,
    ///         config: ProviderConfig::new(ServiceName::new("weather/v1")?).with_origin(
    ///             OriginSlot::new(0),
    ///             OriginKind::Http,
    ///             "https://api.weather.example:443",
    ///         ),
    ///     })
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    ///
    /// // Creation expects epoch zero and installs epoch 1.
    /// let first = pools.install(installation(Epoch::ZERO, b"token-1")?).await?;
    /// assert_eq!(first.epoch, Epoch::new(1));
    ///
    /// // A rotation names the epoch it replaces: a stale expectation is
    /// // refused and epoch 1 stays installed.
    /// let stale = pools.install(installation(Epoch::ZERO, b"token-2")?).await;
    /// assert!(matches!(stale, Err(InstallError::EpochMismatch { .. })));
    /// let second = pools.install(installation(first.epoch, b"token-2")?).await?;
    /// assert_eq!(second.epoch, Epoch::new(2));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn install(
        &self,
        installation: Installation,
    ) -> Result<InstallReceipt, InstallError> {
        if !self.is_open() {
            return Err(InstallError::Closed);
        }
        self.inner.registry.install(installation).await
    }

    /// Rotates `provider`'s credential: installs the next epoch with the
    /// current epoch's authority and configuration and `credential`, the
    /// one thing that changes. Requests admitted on the old epoch finish on
    /// it; later ones use the new epoch.
    ///
    /// # Cancel safety
    ///
    /// As [`ProviderPools::install`]: once queued, the rotation completes
    /// or is refused whatever happens to the future.
    ///
    /// # Errors
    ///
    /// [`InstallError::NotInstalled`] when nothing is installed for
    /// `provider`, [`InstallError::EpochMismatch`] when another rotation
    /// installed an epoch in between, and the other [`InstallError`]s of
    /// [`ProviderPools::install`] (no room for both epochs, closed, busy).
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{
    ///     Authority, BrokerGeneration, Credential, Epoch, Installation, OriginKind, OriginSlot,
    ///     PoolsConfig, ProviderConfig, ProviderId, ProviderPools, ServiceName,
    /// };
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    /// let weather = ProviderId::new("weather")?;
    /// pools
    ///     .install(Installation {
    ///         provider: weather.clone(),
    ///         authority: Authority::new("https://api.weather.example")?,
    ///         expected: Epoch::ZERO,
    ///         credential: Credential::new(b"token-1".to_vec())?,
    ///         config: ProviderConfig::new(ServiceName::new("weather/v1")?).with_origin(
    ///             OriginSlot::new(0),
    ///             OriginKind::Http,
    ///             "https://api.weather.example:443",
    ///         ),
    ///     })
    ///     .await?;
    ///
    /// // The provider and the new credential: nothing else.
    /// let rotated = pools.rotate(&weather, Credential::new(b"token-2".to_vec())?).await?;
    /// assert_eq!(rotated.epoch, Epoch::new(2));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn rotate(
        &self,
        provider: &ProviderId,
        credential: Credential,
    ) -> Result<InstallReceipt, InstallError> {
        let current =
            self.inner
                .directory
                .current(provider)
                .ok_or_else(|| InstallError::NotInstalled {
                    provider: provider.clone(),
                })?;
        let installation = Installation {
            provider: provider.clone(),
            authority: current.authority.clone(),
            expected: current.epoch,
            credential,
            config: current.config.clone(),
        };
        // The published epoch is not held across the install: a rotation
        // retires it.
        drop(current);
        self.install(installation).await
    }

    /// Leases the configured client of `slot` on `provider`'s current epoch,
    /// without a message hop. The same slot always reaches the same client.
    ///
    /// # Errors
    ///
    /// [`LookupError::ForeignSlot`] for a slot minted by another
    /// installation, [`LookupError::KindMismatch`] when the slot is
    /// configured for another protocol, and the other [`LookupError`]s.
    pub fn client(
        &self,
        provider: &ProviderId,
        slot: &TypedSlot,
        kind: OriginKind,
    ) -> Result<ClientLease, LookupError> {
        for _ in 0..LOOKUP_ATTEMPTS {
            if !self.is_open() {
                return Err(LookupError::Closed);
            }
            // Leased under the directory's read lock: the lease's is the
            // only reference to the epoch taken.
            let leased = (self.inner.directory)
                .with_current(provider, |epoch| epoch.lease(slot, kind))
                .ok_or_else(|| LookupError::UnknownProvider {
                    provider: provider.clone(),
                })?;
            match leased {
                Err(LookupError::Retired { .. }) => continue,
                other => return other,
            }
        }
        Err(LookupError::Retired {
            provider: provider.clone(),
        })
    }

    /// The public description of `provider`'s current epoch.
    pub fn describe(&self, provider: &ProviderId) -> Option<ProviderDescriptor> {
        self.inner
            .directory
            .current(provider)
            .map(|epoch| ProviderDescriptor::of(&epoch))
    }
}
