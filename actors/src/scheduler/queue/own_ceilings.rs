//! Tenants' and providers' own running ceilings: a table each, kept while
//! their bookkeeping comes and goes, and copied into that bookkeeping when
//! it is created (see the module rules of [`super`]).

use std::fmt;
use std::hash::Hash;

use tokio::time::Instant;

use super::{Bound, FairQueue, InUse, RunningKey};
use crate::identity::IdMap;
use crate::moment::Moment;

/// When a provider's own ceiling falls back, and the ceiling it falls
/// back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expiry {
    /// The instant the fallback applies from.
    pub(crate) until: Instant,
    /// The own ceiling from then on.
    pub(crate) then: u32,
    /// When the unbroken run of expiring ceilings this one continues
    /// began: each set before the previous one fell back continues it;
    /// one set after a fallback (or with none before) begins a new run.
    /// Grants made before it were made under a share that lapsed.
    pub(crate) since: Instant,
}

impl Expiry {
    /// An expiry from `until` on to `then`, beginning a run now (the
    /// queue continues an earlier run when it applies it).
    pub(crate) fn new(until: Instant, then: u32) -> Self {
        Self {
            until,
            then,
            since: Instant::now(),
        }
    }

    /// True once the fallback applies.
    pub(crate) fn is_due(&self) -> bool {
        Instant::now() >= self.until
    }
}

/// The expiring share a request was granted under, for
/// [`FairQueue::share_lapsed`]: every running key carries one, so its
/// instants are kept as [`Moment`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GrantedUnder {
    /// The share's fallback instant at the grant.
    pub(crate) until: Moment,
    /// The grant's instant.
    pub(crate) at: Moment,
}

/// Whose own running ceiling: a tenant's or a provider's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner<K, P> {
    Tenant(K),
    Provider(P),
}

impl<T, K, P> FairQueue<T, K, P>
where
    K: Clone + Eq + Hash + fmt::Debug,
    P: Clone + Eq + Hash + fmt::Debug,
{
    /// Gives `owner` its own running ceiling (`None` takes it away: the
    /// node-wide one applies again), or refuses, changing nothing, when it
    /// already runs more than `ceiling` — unless `drain`: then the ceiling
    /// applies at once and what runs above it ends on its own. The tenant
    /// then enters or leaves the rotation; the provider is unblocked once
    /// under its ceiling.
    pub(crate) fn set_own_ceiling(
        &mut self,
        owner: Owner<K, P>,
        ceiling: Option<u32>,
        drain: bool,
    ) -> Result<(), InUse> {
        let (bound, running) = match &owner {
            Owner::Tenant(tenant) => {
                let t = self
                    .tenant_ix
                    .get(tenant)
                    .and_then(|&t| self.tenants.get(t));
                (Bound::RunningPerTenant, t.map_or(0, |x| x.running))
            }
            Owner::Provider(provider) => {
                let p = (self.provider_ix.get(provider)).and_then(|&p| self.providers.get(p));
                (Bound::RunningPerProvider, p.map_or(0, |x| x.running))
            }
        };
        if let Some(requested) = ceiling.filter(|&c| running > c && !drain) {
            return Err(InUse {
                bound,
                used: running,
                requested,
            });
        }
        match owner {
            Owner::Tenant(tenant) => {
                let t = self.tenant_ix.get(&tenant).copied();
                put(&mut self.own_ceilings, tenant, ceiling);
                if let Some(t) = t {
                    if let Some(entry) = self.tenants.get_mut(t) {
                        entry.own_ceiling = ceiling;
                    }
                    self.sync_tenant(t);
                }
            }
            Owner::Provider(provider) => {
                let p = self.provider_ix.get(&provider).copied();
                self.own_provider_expiries.remove(&provider);
                put(&mut self.own_provider_ceilings, provider, ceiling);
                if let Some(p) = p {
                    if let Some(entry) = self.providers.get_mut(p) {
                        entry.own_ceiling = ceiling;
                        entry.own_expiry = None;
                    }
                    self.unblock_provider(p);
                }
            }
        }
        Ok(())
    }

    /// Gives `provider`'s own ceiling (just set) an expiry: from
    /// `expiry.until` on, `expiry.then` applies instead. Lowers nothing
    /// now, so it cannot be refused; the caller keeps `then` at most the
    /// ceiling.
    pub(crate) fn expire_own_ceiling(&mut self, provider: P, expiry: Expiry) {
        if !self.own_provider_ceilings.contains_key(&provider) {
            debug_assert!(false, "an expiry without an own ceiling");
            return;
        }
        if let Some(entry) =
            (self.provider_ix.get(&provider)).and_then(|&p| self.providers.get_mut(p))
        {
            entry.own_expiry = Some(expiry);
        }
        self.own_provider_expiries.insert(provider, expiry);
    }

    /// True when `running`'s grant must not start. It was granted under
    /// an expiring share, and either that share's run has fallen back
    /// (the expiry in force is due) or a new run began since the grant
    /// (the share lapsed, then was given again): then the grant is
    /// covered only while its provider runs no more than the ceiling in
    /// force now — the fallback, or the new share. A grant under the run
    /// still in force is covered by it whatever runs (a share that moved
    /// drains). A node stopped past its share's expiry thus starts only
    /// what fits once it resumes; each refused grant, once released, lets
    /// the next one through.
    pub(crate) fn share_lapsed(&self, running: &RunningKey) -> bool {
        let Some(under) = running.under else {
            return false;
        };
        let Some(provider) = self.providers.get(running.provider).filter(|_| {
            self.providers.generation(running.provider) == Some(running.provider_generation)
        }) else {
            debug_assert!(false, "a running key outlived its provider's entry");
            return false;
        };
        let Some(expiry) = provider.own_expiry else {
            // No expiring share any more: not a share that can lapse.
            return false;
        };
        if !expiry.is_due() && under.at.instant() >= expiry.since {
            return false;
        }
        provider.running > self.ceiling_of(provider)
    }

    /// Where a new expiring ceiling for `provider` continues a run from:
    /// the current run's start while its expiry is not yet due.
    pub(crate) fn run_since(&self, provider: &P) -> Option<Instant> {
        self.own_provider_expiries
            .get(provider)
            .filter(|expiry| !expiry.is_due())
            .map(|expiry| expiry.since)
    }

    /// True when `owner` may be given an own ceiling with at most `most`
    /// of its kind having one: it has one already, or there is room.
    pub(crate) fn has_room(&self, owner: &Owner<K, P>, most: usize) -> bool {
        match owner {
            Owner::Tenant(tenant) => {
                self.own_ceilings.len() < most || self.own_ceilings.contains_key(tenant)
            }
            Owner::Provider(provider) => {
                self.own_provider_ceilings.len() < most
                    || self.own_provider_ceilings.contains_key(provider)
            }
        }
    }
}

/// Sets or clears `key`'s entry in an own-ceiling table.
fn put<X: Eq + Hash>(table: &mut IdMap<X, u32>, key: X, ceiling: Option<u32>) {
    match ceiling {
        Some(c) => table.insert(key, c),
        None => table.remove(&key),
    };
}
