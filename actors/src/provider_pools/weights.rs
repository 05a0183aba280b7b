//! Tenant weights: a tenant's turns per round of the admission rotation,
//! so backlogged tenants of weights 1, 2 and 4 are granted 1:2:4. Set live,
//! read at the tenant's next grant, kept while the tenant idles; weight 1
//! (the default) is one turn each, as without weights. See
//! docs/decisions/0096-a-tenant-weight-is-turns-per-round.md.

use crate::identity::TenantId;
use crate::provider_pools::ProviderPools;
use crate::scheduler::{MAX_WEIGHT, OWN_CEILINGS};

/// Why a tenant's weight was not set; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WeightError {
    /// A weight of 0, or above [`ProviderPools::MAX_TENANT_WEIGHT`].
    #[error("a weight of {weight} is outside 1..={most}")]
    OutOfRange {
        /// The refused weight.
        weight: u32,
        /// The highest weight allowed.
        most: u32,
    },
    /// Too many other tenants have a weight other than 1 already.
    #[error("at most {limit} tenants may have a weight other than 1")]
    Full {
        /// The most tenants with a weight other than 1.
        limit: u32,
    },
    /// The pools are closed.
    #[error("provider pools are closed")]
    Closed,
}

impl ProviderPools {
    /// The highest weight a tenant may have. A tenant of weight `w` may
    /// take `w` grants in a row, so the bound keeps every other tenant's
    /// wait for its turn bounded.
    pub const MAX_TENANT_WEIGHT: u32 = MAX_WEIGHT;

    /// Gives `tenant` its weight: its turns per round of the admission
    /// rotation, so while tenants are backlogged their grants are in
    /// proportion to their weights. 1 is the default (and sets it back);
    /// it applies from the tenant's next grant and outlives its idle
    /// spells. Ceilings, rates and deadlines bind a weighted tenant as
    /// any other.
    ///
    /// # Examples
    ///
    /// ```
    /// # async fn demo(pools: provider_pools_actors::ProviderPools) -> Result<(), Box<dyn std::error::Error>> {
    /// use provider_pools_actors::TenantId;
    ///
    /// let paid = TenantId::new("paid-tier")?;
    /// pools.set_tenant_weight(&paid, 4)?; // four turns to every other tenant's one
    /// assert_eq!(pools.tenant_weight(&paid), 4);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`WeightError::OutOfRange`] for 0 or a weight above
    /// [`Self::MAX_TENANT_WEIGHT`]; [`WeightError::Full`] when 1,024 other
    /// tenants have a weight other than 1; [`WeightError::Closed`] after
    /// retirement. A refusal changes nothing.
    pub fn set_tenant_weight(&self, tenant: &TenantId, weight: u32) -> Result<(), WeightError> {
        if !(1..=MAX_WEIGHT).contains(&weight) {
            return Err(WeightError::OutOfRange {
                weight,
                most: MAX_WEIGHT,
            });
        }
        if !self.is_open() {
            return Err(WeightError::Closed);
        }
        if !(self.inner.queue).set_weight(tenant.clone(), weight) {
            return Err(WeightError::Full {
                limit: OWN_CEILINGS as u32,
            });
        }
        Ok(())
    }

    /// `tenant`'s weight: 1 unless set otherwise.
    pub fn tenant_weight(&self, tenant: &TenantId) -> u32 {
        self.inner.queue.weight_of(tenant)
    }
}
