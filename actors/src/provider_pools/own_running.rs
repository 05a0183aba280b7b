//! Own running ceilings (for cluster shares): a tenant's share of the running
//! requests below the node-wide `running_per_tenant`, and a provider's
//! below `running_per_provider`, set and cleared live under the rules of
//! `lower_limits` — never above the startup limit, never below what is
//! running now. A cluster's allocator sets them from its fair division of
//! a provider's global ceiling (the provider's as the node's share, the
//! tenants' as their shares on the node); on one node they weight tenants
//! and cap providers. [`ProviderPools::provider_demand`] reads what each
//! tenant asks of a provider, the demand a cluster divides by;
//! [`ProviderPools::set_provider_running_until`] holds a provider's share
//! under a lease, falling back by the node's own clock.

use tokio::time::Instant;

use crate::error::LowerError;
use crate::identity::{ProviderId, TenantId};
use crate::limits::{LimitField, LimitsError};
use crate::provider_pools::ProviderPools;
use crate::scheduler::{Expiry, OwnCeiling, OwnCeilingRefused};
use crate::snapshot::TenantDemand;
#[cfg(doc)]
use crate::RunningRequest;

impl ProviderPools {
    /// Gives `tenant` its own running ceiling, or with `None` takes it
    /// away (the node-wide `running_per_tenant` in force applies again).
    ///
    /// The ceiling in effect is the lower of the tenant's own and the
    /// node-wide one, so a later `lower_limits` still binds every tenant.
    /// It applies at once: a raise grants the tenant's waiters it makes
    /// ready; a ceiling at or below what the tenant runs stops its grants
    /// until enough of them end. It outlives the tenant's idle spells.
    ///
    /// # Examples
    ///
    /// ```
    /// # async fn demo(pools: provider_pools_actors::ProviderPools) -> Result<(), Box<dyn std::error::Error>> {
    /// use provider_pools_actors::TenantId;
    ///
    /// let tenant = TenantId::new("batch-jobs")?;
    /// pools.set_tenant_running(&tenant, Some(2))?; // at most two at once
    /// pools.set_tenant_running(&tenant, None)?; // the node-wide share again
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`LowerError::Limits`] (`Raised`) for a ceiling above the startup
    /// `running_per_tenant`; [`LowerError::InUse`] naming
    /// `running_per_tenant` when the tenant already runs more;
    /// [`LowerError::TenantCeilings`] when 1,024 other tenants have one
    /// already; [`LowerError::Closed`] after retirement. A refusal changes
    /// nothing.
    pub fn set_tenant_running(
        &self,
        tenant: &TenantId,
        ceiling: Option<u32>,
    ) -> Result<(), LowerError> {
        self.set_own_running(OwnCeiling::Tenant(tenant.clone()), ceiling, None, false)
    }

    /// Gives `provider` its own running ceiling, or with `None` takes it
    /// away (the node-wide `running_per_provider` in force applies again);
    /// the rules of [`Self::set_tenant_running`], for the provider's
    /// running requests of every tenant.
    ///
    /// # Errors
    ///
    /// [`LowerError::Limits`] (`Raised`) above the startup
    /// `running_per_provider`; [`LowerError::InUse`] naming
    /// `running_per_provider` when the provider already runs more;
    /// [`LowerError::ProviderCeilings`] when 1,024 other providers have one
    /// already; [`LowerError::Closed`] after retirement. A refusal changes
    /// nothing.
    pub fn set_provider_running(
        &self,
        provider: &ProviderId,
        ceiling: Option<u32>,
    ) -> Result<(), LowerError> {
        self.set_own_running(OwnCeiling::Provider(provider.clone()), ceiling, None, false)
    }

    /// Every tenant's queued and running requests on `provider`, ordered
    /// by tenant; empty when it has neither (or is unknown). A cluster
    /// publishes this as the node's demand; it is a consistent reading of
    /// the admission queue at one instant.
    ///
    /// It takes the admission queue's lock and walks its groups: meant for
    /// a periodic report, not for every request.
    pub fn provider_demand(&self, provider: &ProviderId) -> Vec<TenantDemand> {
        let mut demand: Vec<TenantDemand> = self
            .inner
            .queue
            .demand(provider)
            .into_iter()
            .map(|d| TenantDemand {
                tenant: d.tenant,
                pending: d.pending,
                running: d.running,
            })
            .collect();
        demand.sort_unstable_by(|a, b| a.tenant.cmp(&b.tenant));
        demand
    }

    /// Gives `provider` its own running ceiling `ceiling` until `until`,
    /// and `then` from that instant on — a share held under a lease: a
    /// cluster node's dynamic share, valid while its registration surely
    /// lives, falling back to its floor by its own clock.
    ///
    /// The fallback is read at every admission check, not by a timer: a
    /// process stopped past `until` grants nothing above `then` when it
    /// resumes, whichever of its tasks runs first. Unlike
    /// [`Self::set_provider_running`], a ceiling below what runs now is
    /// accepted: nothing more is granted until use falls under it (a
    /// share that moved must drain, and under steady load use never falls
    /// by itself). Requests running above the ceiling, or above `then`
    /// once it applies, drain the same way. A later call (with or without
    /// expiry) replaces this one; one made before `until` continues the
    /// share, one made after it gives a new share.
    ///
    /// A request admitted under the share but not yet sent when it lapsed
    /// is not sent while the provider runs above the ceiling in force
    /// (`then`, or a new share's): see [`RunningRequest::check_share`],
    /// which [`Self::reserve_connection`] applies. A grant keeps its share
    /// until the `until` in force when it was made, so a later call should
    /// not move `until` earlier (a cluster's contact deadline never does).
    ///
    /// # Errors
    ///
    /// As [`Self::set_provider_running`] but never `InUse`; also
    /// [`LowerError::Limits`] (`AboveCeiling`, naming
    /// `running_per_provider`) when `then` is above `ceiling`. A refusal
    /// changes nothing.
    pub fn set_provider_running_until(
        &self,
        provider: &ProviderId,
        ceiling: u32,
        until: Instant,
        then: u32,
    ) -> Result<(), LowerError> {
        if then > ceiling {
            return Err(LimitsError::AboveCeiling {
                field: LimitField::RunningPerProvider,
                value: then.into(),
                ceiling: ceiling.into(),
            }
            .into());
        }
        let expiry = Expiry::new(until, then);
        self.set_own_running(
            OwnCeiling::Provider(provider.clone()),
            Some(ceiling),
            Some(expiry),
            true,
        )
    }

    /// [`Self::set_tenant_running`], accepting a ceiling below what the
    /// tenant runs now: it applies at once, and the tenant is granted
    /// nothing more until enough of its requests ended. For a ceiling that
    /// follows a moving share (a cluster's), where waiting for use to fall
    /// under the new ceiling first would never end under steady load.
    ///
    /// # Errors
    ///
    /// As [`Self::set_tenant_running`], never `InUse`.
    pub fn set_tenant_running_draining(
        &self,
        tenant: &TenantId,
        ceiling: Option<u32>,
    ) -> Result<(), LowerError> {
        self.set_own_running(OwnCeiling::Tenant(tenant.clone()), ceiling, None, true)
    }

    /// The checks of every call, then the core's change.
    fn set_own_running(
        &self,
        owner: OwnCeiling,
        ceiling: Option<u32>,
        expiry: Option<Expiry>,
        drain: bool,
    ) -> Result<(), LowerError> {
        if !self.is_open() {
            return Err(LowerError::Closed);
        }
        let limits = &self.inner.limits;
        let (field, startup) = match owner {
            OwnCeiling::Tenant(_) => (LimitField::RunningPerTenant, limits.running_per_tenant),
            OwnCeiling::Provider(_) => {
                (LimitField::RunningPerProvider, limits.running_per_provider)
            }
        };
        if let Some(value) = ceiling.filter(|&c| c > startup) {
            return Err(LimitsError::Raised {
                field,
                value: value.into(),
                bound: startup.into(),
            }
            .into());
        }
        let tenant = matches!(owner, OwnCeiling::Tenant(_));
        let set = (self.inner.queue).set_own_ceiling(owner, ceiling, expiry, drain);
        set.map_err(|refused| match refused {
            OwnCeilingRefused::InUse(in_use) => LowerError::InUse {
                field: in_use.field,
                used: in_use.used,
                requested: in_use.requested,
            },
            OwnCeilingRefused::Full { limit } if tenant => LowerError::TenantCeilings { limit },
            OwnCeilingRefused::Full { limit } => LowerError::ProviderCeilings { limit },
        })
    }
}
