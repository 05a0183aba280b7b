//! What each tenant asks of one provider (its queued and running
//! requests there, read for a cluster's allocation), and every
//! tenant's, provider's and priority class's totals (read for gauges).
//!
//! Invariants:
//! - The answer lists exactly the tenants with something queued or
//!   running on the provider, each once, with counts that sum to the
//!   provider's own.
//! - Reading costs O(groups + running pairs) and changes nothing; it is
//!   meant for a periodic report, not the admission path.

use std::collections::HashMap;
use std::hash::Hash;

use super::{FairQueue, CLASSES};

/// Every tenant's and every provider's (key, pending, running), and each
/// class's.
#[derive(Debug)]
pub(crate) struct QueueUsage<K, P> {
    /// Each tenant with something queued or running.
    pub(crate) tenants: Vec<(K, u32, u32)>,
    /// Each provider with something queued or running.
    pub(crate) providers: Vec<(P, u32, u32)>,
    /// (pending, running) of each priority class, by rank.
    pub(crate) classes: [(u32, u32); CLASSES],
}

/// One tenant's demand on one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TenantBacklog<K> {
    /// The tenant.
    pub(crate) tenant: K,
    /// Its requests queued for the provider.
    pub(crate) pending: u32,
    /// Its requests granted on the provider and not yet released.
    pub(crate) running: u32,
}

impl<T, K, P> FairQueue<T, K, P>
where
    K: Clone + Eq + Hash,
    P: Clone + Eq + Hash,
{
    /// Every tenant's queued and running requests on `provider`, in no
    /// particular order; empty when the provider has neither.
    pub(crate) fn demand(&self, provider: &P) -> Vec<TenantBacklog<K>> {
        let Some(&p) = self.provider_ix.get(provider) else {
            return Vec::new();
        };
        let mut by_tenant: HashMap<u32, (u32, u32)> = HashMap::new();
        for (&(t, q, _), &g) in &self.group_ix {
            if q == p {
                let queued = self.groups.get(g).map_or(0, |group| group.waiters.len());
                by_tenant.entry(t).or_default().0 += queued;
            }
        }
        for (&(t, q), &running) in &self.pair_running {
            if q == p {
                by_tenant.entry(t).or_default().1 += running;
            }
        }
        by_tenant
            .into_iter()
            .filter_map(|(t, (pending, running))| {
                let tenant = self.tenants.get(t)?.key.clone();
                Some(TenantBacklog {
                    tenant,
                    pending,
                    running,
                })
            })
            .collect()
    }

    /// Every tenant's and every provider's queued and running requests:
    /// exactly those with some, in no particular order; and every class's.
    /// O(tenants + providers) with live work; changes nothing.
    pub(crate) fn usage(&self) -> QueueUsage<K, P> {
        let tenants = self
            .tenants
            .values()
            .map(|t| (t.key.clone(), t.pending, t.running))
            .collect();
        let providers = self
            .providers
            .values()
            .map(|p| (p.key.clone(), p.pending, p.running))
            .collect();
        let classes = std::array::from_fn(|c| (self.class_pending[c], self.class_running[c]));
        QueueUsage {
            tenants,
            providers,
            classes,
        }
    }
}
