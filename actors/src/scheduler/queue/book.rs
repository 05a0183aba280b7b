//! Per-key bookkeeping: the tenant and provider entries, their counts, and
//! their creation and removal.
//!
//! - Entries are created by a push and dropped as soon as nothing is pending
//!   or running under them, so memory follows live work.
//! - Every count change goes through [`FairQueue::count`], which keeps the
//!   total, tenant and provider counts in step.

use std::hash::Hash;

use super::slab::{Group, Links, List, Node};
#[cfg(test)]
use super::RunningKey;
use super::{FairQueue, CLASSES};
use crate::identity::IdMap;

/// Tenant and provider lane for the creation-order list; the tenant
/// rotation of class `c` (by rank) is lane `c`.
pub(super) const CREATED: usize = CLASSES;

/// A tenant's place in one class: its groups of that class, and its turn
/// in that class's tenant rotation.
#[derive(Debug)]
pub(super) struct InClass {
    /// Its provider rotation in the class: its non-empty, unblocked groups.
    pub(super) groups: List,
    /// In the class's tenant rotation.
    pub(super) active: bool,
    /// Grants made in its current turn at the front of the class's
    /// rotation; reset whenever it enters or leaves that rotation.
    pub(super) turns: u32,
}

/// Bookkeeping of a tenant with something pending or running.
#[derive(Debug)]
pub(super) struct Tenant<K> {
    pub(super) key: K,
    pub(super) pending: u32,
    pub(super) running: u32,
    /// Its groups and turn in each class, by rank.
    pub(super) classes: [InClass; CLASSES],
    /// Its own running ceiling, if it has one (capped by the node-wide
    /// `running_per_tenant` when read).
    pub(super) own_ceiling: Option<u32>,
    /// Its request rate and TAT, if it has a rate.
    pub(super) rate: Option<super::Gcra>,
    /// Listed as awaiting a token (see `rate.rs`).
    pub(super) awaiting: bool,
    /// Its turns per round of the rotation (at least 1).
    pub(super) weight: u32,
    links: [Links; CLASSES + 1],
}

/// Bookkeeping of a provider with something pending or running.
#[derive(Debug)]
pub(super) struct Provider<P> {
    pub(super) key: P,
    pub(super) pending: u32,
    pub(super) running: u32,
    /// Groups parked while this provider is at its running ceiling.
    pub(super) blocked: List,
    /// Its own running ceiling, if it has one (capped by the node-wide
    /// `running_per_provider` when read).
    pub(super) own_ceiling: Option<u32>,
    /// When its own ceiling falls back, and to what.
    pub(super) own_expiry: Option<super::Expiry>,
    /// Its request rate and TAT, if it has a rate.
    pub(super) rate: Option<super::Gcra>,
    /// Listed as awaiting a token (see `rate.rs`).
    pub(super) awaiting: bool,
    /// Only the [`CREATED`] lane is used, so both entry kinds share its index.
    links: [Links; CLASSES + 1],
}

impl<K> Tenant<K> {
    pub(super) fn new(
        key: K,
        own_ceiling: Option<u32>,
        rate: Option<super::Gcra>,
        weight: u32,
    ) -> Self {
        Self {
            key,
            pending: 0,
            running: 0,
            classes: std::array::from_fn(|_| InClass {
                groups: List::new(0),
                active: false,
                turns: 0,
            }),
            own_ceiling,
            rate,
            awaiting: false,
            weight,
            links: [Links::DETACHED; CLASSES + 1],
        }
    }
}

impl<P> Provider<P> {
    pub(super) fn new(
        key: P,
        own_ceiling: Option<u32>,
        own_expiry: Option<super::Expiry>,
        rate: Option<super::Gcra>,
    ) -> Self {
        Self {
            key,
            pending: 0,
            running: 0,
            blocked: List::new(0),
            own_ceiling,
            own_expiry,
            rate,
            awaiting: false,
            links: [Links::DETACHED; CLASSES + 1],
        }
    }
}

impl<K> Node for Tenant<K> {
    fn lanes(&self) -> &[Links] {
        &self.links
    }
    fn lanes_mut(&mut self) -> &mut [Links] {
        &mut self.links
    }
}

impl<P> Node for Provider<P> {
    fn lanes(&self) -> &[Links] {
        &self.links
    }
    fn lanes_mut(&mut self) -> &mut [Links] {
        &mut self.links
    }
}

/// What happened to one request, for [`FairQueue::count`].
#[derive(Debug, Clone, Copy)]
pub(super) enum Move {
    /// Pushed: pending + 1.
    Queue,
    /// Cancelled: pending - 1.
    Unqueue,
    /// Granted: pending - 1, running + 1.
    Grant,
    /// Granted without waiting: running + 1.
    GrantUnqueued,
    /// Released: running - 1.
    Release,
}

/// What `table` keeps for `key`; an empty table is not searched.
fn kept<Q: Eq + Hash, V: Copy>(table: &IdMap<Q, V>, key: &Q) -> Option<V> {
    if table.is_empty() {
        return None;
    }
    table.get(key).copied()
}

fn apply(pending: &mut u32, running: &mut u32, change: Move) {
    match change {
        Move::Queue => *pending = pending.saturating_add(1),
        Move::Unqueue => *pending = pending.saturating_sub(1),
        Move::Grant => {
            *pending = pending.saturating_sub(1);
            *running = running.saturating_add(1);
        }
        Move::GrantUnqueued => *running = running.saturating_add(1),
        Move::Release => *running = running.saturating_sub(1),
    }
}

impl<T, K, P> FairQueue<T, K, P>
where
    K: Clone + Eq + Hash,
    P: Clone + Eq + Hash,
{
    /// Applies `change` to the total counts and to those of tenant `t` and
    /// provider `p` (saturating: a caller bug never wraps a count).
    pub(super) fn count(&mut self, t: Option<u32>, p: Option<u32>, change: Move) {
        apply(&mut self.pending, &mut self.running, change);
        if let (Some(t), Some(p)) = (t, p) {
            self.count_pair(t, p, change);
        }
        if let Some(tenant) = t.and_then(|t| self.tenants.get_mut(t)) {
            apply(&mut tenant.pending, &mut tenant.running, change);
        }
        if let Some(provider) = p.and_then(|p| self.providers.get_mut(p)) {
            apply(&mut provider.pending, &mut provider.running, change);
        }
    }

    /// Keeps `pair_running` in step with a grant or a release of (`t`, `p`).
    fn count_pair(&mut self, t: u32, p: u32, change: Move) {
        match change {
            Move::Grant | Move::GrantUnqueued => {
                *self.pair_running.entry((t, p)).or_insert(0) += 1;
            }
            Move::Release => {
                if let Some(running) = self.pair_running.get_mut(&(t, p)) {
                    *running -= 1;
                    if *running == 0 {
                        self.pair_running.remove(&(t, p));
                    }
                }
            }
            Move::Queue | Move::Unqueue => {}
        }
    }

    /// The (tenant, provider, group) slots of a push in class `class`,
    /// created as needed (`t`, `p`: the slots found by key); `None`,
    /// creating nothing, when a slab has no index left.
    pub(super) fn entries(
        &mut self,
        t: Option<u32>,
        tenant: K,
        p: Option<u32>,
        provider: P,
        class: u32,
    ) -> Option<(u32, u32, u32)> {
        let (t, p) = self.keyed_entries(t, tenant, p, provider)?;
        let g = self.group_ix.get(&(t, p, class)).copied().or_else(|| {
            let (g, _) = self.groups.insert(Group::new(t, p, class)).ok()?;
            self.group_ix.insert((t, p, class), g);
            Some(g)
        });
        match g {
            Some(g) => Some((t, p, g)),
            None => {
                self.forget_if_idle(Some(t), Some(p));
                None
            }
        }
    }

    /// The tenant and provider slots of a request, created as needed (`t`,
    /// `p`: the slots found by key); `None`, creating nothing, when a slab
    /// has no index left. A new entry takes the tables kept for its key
    /// (own ceiling, expiry, rate, weight); an empty table is not searched.
    pub(super) fn keyed_entries(
        &mut self,
        t: Option<u32>,
        tenant: K,
        p: Option<u32>,
        provider: P,
    ) -> Option<(u32, u32)> {
        let t = t.or_else(|| {
            let own = kept(&self.own_ceilings, &tenant);
            let rate = kept(&self.rates.tenants, &tenant);
            let (t, _) = (self.tenants)
                .insert(Tenant::new(
                    tenant.clone(),
                    own,
                    rate,
                    self.weight_of(&tenant),
                ))
                .ok()?;
            self.created_tenants.push_back(&mut self.tenants, t);
            self.tenant_ix.insert(tenant, t);
            Some(t)
        })?;
        let p = p.or_else(|| {
            let own = kept(&self.own_provider_ceilings, &provider);
            let expiry = kept(&self.own_provider_expiries, &provider);
            let rate = kept(&self.rates.providers, &provider);
            let (p, _) = self
                .providers
                .insert(Provider::new(provider.clone(), own, expiry, rate))
                .ok()?;
            self.created_providers.push_back(&mut self.providers, p);
            self.provider_ix.insert(provider, p);
            Some(p)
        });
        match p {
            Some(p) => Some((t, p)),
            None => {
                self.forget_if_idle(Some(t), None);
                None
            }
        }
    }

    /// Undoes [`Self::entries`] for a push that failed after it.
    pub(super) fn abandon(&mut self, t: u32, p: u32, g: u32) {
        if self
            .groups
            .get(g)
            .is_some_and(|group| group.waiters.is_empty())
        {
            self.forget_group(g);
        }
        self.forget_if_idle(Some(t), Some(p));
    }

    /// Drops the bookkeeping of group `g`, which is empty and in no FIFO.
    pub(super) fn forget_group(&mut self, g: u32) {
        if let Some(group) = self.groups.get(g) {
            debug_assert!(group.waiters.is_empty(), "forgetting a non-empty group");
            (self.group_ix).remove(&(group.tenant, group.provider, group.class));
            self.groups.discard(g);
        }
    }

    /// Drops the bookkeeping of tenant `t` and provider `p` when idle.
    pub(super) fn forget_if_idle(&mut self, t: Option<u32>, p: Option<u32>) {
        if let Some(t) = t.filter(|&t| {
            self.tenants
                .get(t)
                .is_some_and(|tenant| tenant.pending == 0 && tenant.running == 0)
        }) {
            self.created_tenants.remove(&mut self.tenants, t);
            // Read in place and dropped there: an entry is not small.
            if let Some(tenant) = self.tenants.get(t) {
                debug_assert!((tenant.classes.iter()).all(|c| !c.active && c.groups.is_empty()));
                if let Some(gcra) = tenant.rate {
                    // The TAT outlives the entry: idling resets nothing.
                    self.rates.tenants.insert(tenant.key.clone(), gcra);
                }
                self.tenant_ix.remove(&tenant.key);
                self.tenants.discard(t);
            }
        }
        if let Some(p) = p.filter(|&p| {
            self.providers
                .get(p)
                .is_some_and(|provider| provider.pending == 0 && provider.running == 0)
        }) {
            self.created_providers.remove(&mut self.providers, p);
            if let Some(provider) = self.providers.get(p) {
                debug_assert!(provider.blocked.is_empty());
                if let Some(gcra) = provider.rate {
                    // The TAT outlives the entry: idling resets nothing.
                    self.rates.providers.insert(provider.key.clone(), gcra);
                }
                self.provider_ix.remove(&provider.key);
                self.providers.discard(p);
            }
        }
    }

    #[cfg(test)]
    /// Releases one running request of `tenant` on `provider` in the
    /// default class, by key.
    pub(crate) fn release(&mut self, tenant: &K, provider: &P) {
        self.release_in(tenant, provider, super::DEFAULT_CLASS);
    }

    #[cfg(test)]
    /// Releases one running request of `tenant` on `provider` in class
    /// `class` (by rank), by key.
    pub(crate) fn release_in(&mut self, tenant: &K, provider: &P, class: u32) {
        let t = self.tenant_ix.get(tenant).copied();
        let p = self.provider_ix.get(provider).copied();
        match (t, p) {
            (Some(t), Some(p)) => self.release_at(t, p, class),
            _ => debug_assert!(false, "release of a tenant with nothing running"),
        }
    }

    #[cfg(test)]
    /// The tenant and provider a running key names.
    pub(crate) fn keys(&self, running: RunningKey) -> Option<(&K, &P)> {
        let tenant = self.tenants.get(running.tenant)?;
        let provider = self.providers.get(running.provider)?;
        Some((&tenant.key, &provider.key))
    }
}
