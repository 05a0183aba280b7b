//! Tenants' and providers' own running ceilings: a table each, kept while
//! their bookkeeping comes and goes, and copied into that bookkeeping when
//! it is created (see the module rules of [`super`]).

use std::fmt;
use std::hash::Hash;

use super::{Bound, FairQueue, InUse};

impl<T, K, P> FairQueue<T, K, P>
where
    K: Clone + Eq + Hash + fmt::Debug,
    P: Clone + Eq + Hash + fmt::Debug,
{
    /// Gives `tenant` its own running ceiling (`None` takes it away: the
    /// node-wide `running_per_tenant` applies again), or refuses, changing
    /// nothing, when the tenant already runs more than `ceiling`.
    pub(crate) fn set_tenant_ceiling(
        &mut self,
        tenant: K,
        ceiling: Option<u32>,
    ) -> Result<(), InUse> {
        let t = self.tenant_ix.get(&tenant).copied();
        let running = t.and_then(|t| self.tenants.get(t)).map_or(0, |x| x.running);
        if let Some(requested) = ceiling.filter(|&c| running > c) {
            return Err(InUse {
                bound: Bound::RunningPerTenant,
                used: running,
                requested,
            });
        }
        match ceiling {
            Some(c) => self.own_ceilings.insert(tenant, c),
            None => self.own_ceilings.remove(&tenant),
        };
        if let Some(t) = t {
            if let Some(entry) = self.tenants.get_mut(t) {
                entry.own_ceiling = ceiling;
            }
            self.sync_tenant(t);
        }
        Ok(())
    }

    /// How many tenants have a running ceiling of their own.
    pub(crate) fn own_ceilings(&self) -> usize {
        self.own_ceilings.len()
    }

    /// True when `tenant` has a running ceiling of its own.
    pub(crate) fn has_own_ceiling(&self, tenant: &K) -> bool {
        self.own_ceilings.contains_key(tenant)
    }

    /// Gives `provider` its own running ceiling (`None` takes it away), or
    /// refuses, changing nothing, when it already runs more than `ceiling`.
    pub(crate) fn set_provider_ceiling(
        &mut self,
        provider: P,
        ceiling: Option<u32>,
    ) -> Result<(), InUse> {
        let p = self.provider_ix.get(&provider).copied();
        let running = p
            .and_then(|p| self.providers.get(p))
            .map_or(0, |x| x.running);
        if let Some(requested) = ceiling.filter(|&c| running > c) {
            return Err(InUse {
                bound: Bound::RunningPerProvider,
                used: running,
                requested,
            });
        }
        match ceiling {
            Some(c) => self.own_provider_ceilings.insert(provider, c),
            None => self.own_provider_ceilings.remove(&provider),
        };
        if let Some(p) = p {
            if let Some(entry) = self.providers.get_mut(p) {
                entry.own_ceiling = ceiling;
            }
            self.unblock_provider(p);
        }
        Ok(())
    }

    /// How many providers have a running ceiling of their own.
    pub(crate) fn own_provider_ceilings(&self) -> usize {
        self.own_provider_ceilings.len()
    }

    /// True when `provider` has a running ceiling of its own.
    pub(crate) fn has_own_provider_ceiling(&self, provider: &P) -> bool {
        self.own_provider_ceilings.contains_key(provider)
    }
}
