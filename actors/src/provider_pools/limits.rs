//! The registry's limits: those it started with, those in force, and
//! lowering them (`limits`, `limits_in_force`, `lower_limits`).

use crate::error::LowerError;
use crate::limits::Limits;
use crate::provider_pools::ProviderPools;

impl ProviderPools {
    /// The startup limits, as given in [`PoolsConfig::limits`](crate::PoolsConfig::limits); they never
    /// change. The limits enforced now are [`ProviderPools::limits_in_force`].
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The limits in force now: the startup limits, then each accepted
    /// [`ProviderPools::lower_limits`]. Build a further lowering from these,
    /// not from [`ProviderPools::limits`].
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{BrokerGeneration, Limits, PoolsConfig, ProviderPools};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    /// let in_force = pools.limits_in_force();
    /// pools
    ///     .lower_limits(Limits {
    ///         running_per_tenant: 2,
    ///         ..in_force
    ///     })
    ///     .await?;
    /// assert_eq!(pools.limits_in_force().running_per_tenant, 2);
    /// assert_eq!(pools.limits().running_per_tenant, Limits::DEFAULT.running_per_tenant);
    /// # Ok(())
    /// # }
    /// ```
    pub fn limits_in_force(&self) -> Limits {
        self.inner.accounts.limits_in_force()
    }

    /// Lowers limits for the rest of the generation.
    ///
    /// `lower_limits` never raises a limit: every field must be at most
    /// the limit in force ([`ProviderPools::limits_in_force`]), so a later
    /// lowering never undoes an earlier one. It never changes the dial
    /// backoff, and never lowers a limit below what is in use now —
    /// counting retired epochs, clients retained by old calls, queued and
    /// running requests. All or nothing: a refusal changes no limit.
    /// Shorter queue and idle ages apply to future admissions and idle
    /// reuse; admitted requests keep their deadlines.
    ///
    /// # Cancel safety
    ///
    /// Once queued the change is applied or refused as a whole; dropping the
    /// future loses only the answer.
    ///
    /// # Errors
    ///
    /// [`LowerError::Limits`] for invalid, raised or fixed fields,
    /// [`LowerError::InUse`] naming the field and its current use,
    /// [`LowerError::Busy`] and [`LowerError::Closed`].
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{
    ///     BrokerGeneration, LimitField, Limits, LimitsError, LowerError, PoolsConfig, ProviderPools,
    /// };
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    ///
    /// // Halve each tenant's share of connections.
    /// pools
    ///     .lower_limits(Limits {
    ///         connections_per_tenant: 2,
    ///         ..pools.limits_in_force()
    ///     })
    ///     .await?;
    ///
    /// // A lowering built from the startup limits would raise the share
    /// // back: it is refused, and the first lowering stays.
    /// let raised = pools
    ///     .lower_limits(Limits {
    ///         running_per_tenant: 8,
    ///         ..*pools.limits()
    ///     })
    ///     .await;
    /// assert!(matches!(
    ///     raised,
    ///     Err(LowerError::Limits(LimitsError::Raised {
    ///         field: LimitField::ConnectionsPerTenant,
    ///         ..
    ///     }))
    /// ));
    /// assert_eq!(pools.limits_in_force().connections_per_tenant, 2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lower_limits(&self, lowered: Limits) -> Result<(), LowerError> {
        // Refused at once when already raised; the registry checks again
        // against the limits in force when it applies the lowering.
        self.limits_in_force().check_lowering(&lowered)?;
        if !self.is_open() {
            return Err(LowerError::Closed);
        }
        self.inner.registry.lower_limits(lowered).await
    }
}
