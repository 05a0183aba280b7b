//! The scheduler's admission queue: it decides which queued request is granted next.
//!
//! Requests wait in *groups*, one per (tenant, logical provider, priority class), FIFO inside a group.
//! Each grant is first given a class (`classes.rs`: a class below its minimum share first, then the
//! highest class whose grant leaves the higher classes' unused minimums free); the rules below then
//! apply within that class: each class has its own tenant rotation, and a tenant its own provider
//! rotation per class. Running and pending counts, ceilings, rates and weights are shared by all classes.
//! Pending bounds are checked at [`FairQueue::push`], which refuses at once and never waits.
//! Running ceilings are checked at every [`FairQueue::next_grant`].
//!
//! # Rotation semantics (exact; the test-only `model.rs` applies the same rules by scanning)
//!
//! - A tenant is *eligible* in a class when its provider rotation in that class is non-empty and its running count (in every class) is under its ceiling: `running_per_tenant`, or the tenant's own running ceiling when it has one and it is lower.
//! - Each class's tenant rotation is a FIFO of exactly the tenants eligible in it: a tenant that becomes eligible is appended at the back; one that stops being eligible leaves it.
//! - A tenant's provider rotation is a FIFO of its non-empty, unblocked groups; each provider has a FIFO of blocked groups.
//! - A new group (a push into an empty (tenant, provider)) is appended to its provider's blocked FIFO if that provider is at its running ceiling, else to its tenant's provider rotation.
//! - `next_grant` returns `None` while total running ≥ `running_total`, or when no class may grant (its tenant rotation is empty, or its grant would leave a higher class's unused minimum short).
//! - Otherwise it takes the front group of the front tenant; if that group's provider is at its ceiling, the group moves to the back of the provider's blocked FIFO (the tenant keeps its place while it has groups left) and this step repeats.
//! - Else the group's oldest waiter is granted; the group moves to the back of its tenant's provider rotation (dropped when empty). The tenant keeps the front until it has had as many grants in a row there as its weight, then moves to the back of the tenant rotation; either way it leaves when no longer eligible, losing the turns it had left.
//! - Under [`Fairness::LeastHeld`] (set by `set_fairness`; the rotation is the default) `next_grant` takes instead the eligible tenant with the fewest running per unit of weight, the earliest in the rotation among equals, and its group whose provider runs the fewest of that tenant's requests, the earliest in its provider rotation among equals; a granted tenant always moves to the back. Everything else is as above.
//! - A tenant's weight (default 1, at most [`MAX_WEIGHT`]) is its number of turns per round: `set_weight` changes it live, read at the tenant's next grant; weights outlive the bookkeeping. With every weight 1 it is one turn per tenant, as without weights.
//! - `release` first appends the tenant if it became eligible, then, if the provider is under its ceiling, moves all the provider's blocked groups in FIFO order to the back of their tenants' provider rotations, appending each tenant as it becomes eligible.
//! - `cancel` removes the waiter; an emptied group leaves its FIFO, and its tenant leaves the rotation if no longer eligible.
//! - `set_ceilings` keeps the order of still-eligible tenants, removes the others, appends newly eligible tenants in creation order, then unblocks every provider now under its ceiling, in creation order, as `release` does.
//! - `set_own_ceiling` gives a tenant or a provider its own running ceiling (or takes it away), capped by the node-wide one, refusing one below its running count (unless asked to drain: then it applies at once and what runs above it ends on its own). A tenant then enters or leaves the rotation as any eligibility change does; a provider under its ceiling is unblocked as by `release`, one at or over it blocks its groups as `next_grant` meets them. Own ceilings outlive the bookkeeping.
//! - A provider's own ceiling may carry an expiry: from that instant on, the ceiling it falls back to applies instead (read at every check, so no timer is needed and a process that was stopped past it grants nothing above the fallback when it resumes). Setting the own ceiling again clears the expiry.
//! - A grant made under an expiring ceiling is *lapsed* once that ceiling (or the one set since) has fallen back while its provider still runs more than the fallback (`share_lapsed`): its caller must not start it (see `RunningRequest::check_share`).
//! - Creation order: a tenant's (provider's) bookkeeping is created by a push (or a grant at once) and dropped when nothing is pending or running; re-creation is new.
//! - `grant_at_once` grants an admit without queueing it when nobody is queued and a push followed by `next_grant` would grant it; every count, entry and rotation is then as those two would leave it, with no waiter or group made and unmade.
//!
//! A tenant with 50 providers and a tenant with one thus alternate grants: turns are per tenant, never per group. Backlogged tenants of weights 1 and 2 get grants 1:2.
//!
//! # Invariants
//!
//! - Every group is non-empty and in exactly one FIFO: its tenant's provider rotation in its class or its provider's blocked FIFO.
//! - A provider with blocked groups is at its running ceiling.
//! - Each class's tenant rotation holds exactly the tenants eligible in it; the classes' running counts add up to the total.
//! - Per-tenant and per-provider pending and running never exceed their ceilings; totals may exceed a lowered total ceiling, and a tenant's or provider's running may exceed an own ceiling set to drain, or the fallback of an expired one (it drains).
//! - Bookkeeping exists only for tenants, providers, groups and (tenant, provider) running counts (`pair_running`) with live work; slab slots and map capacity are reused, bounded by the peak.
//! - A [`WaiterKey`] names one waiter: once granted or cancelled it never matches again (until its slot's 32-bit generation wraps).
//! - A [`RunningKey`] names the entries its grant counts against; they live until its release, which needs no key lookup.
//!
//! # Cost
//!
//! - `push`, `grant_at_once` and `cancel`: O(1) (expected, hash lookups); `release_running`: O(1), no lookup, plus O(1) per group it unblocks.
//! - `next_grant`: O(classes) plus O(1) per group it blocks; each block is paid by the push or release that placed the group, so amortised O(1) whatever the number of tenants and providers.
//! - `set_ceilings` (rare): O(tenants + providers + groups).
//! - Under [`Fairness::LeastHeld`], `next_grant` walks the rotation and the chosen tenant's groups: O(eligible tenants + that tenant's groups).

mod book;
use crate::fairness::Fairness;
mod bounds;
pub(crate) use bounds::{Bound, Ceilings, InUse, Refused};
mod demand;
pub(crate) use demand::{QueueUsage, TenantBacklog};
mod classes;
#[cfg(test)]
pub(crate) use classes::DEFAULT_CLASS;
mod held;
mod index_hash;
mod own_ceilings;
mod weights;
use own_ceilings::GrantedUnder;
pub(crate) use own_ceilings::{Expiry, Owner};
pub(crate) use weights::MAX_WEIGHT;
mod rate;
pub(crate) use rate::{Fallback, Rate, RateReading, RateRefused};
use rate::{Gcra, Rates};
mod rotation;
mod slab;

#[cfg(test)]
mod model;
#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;

use std::fmt;
use std::hash::Hash;

use tokio::time::Instant;

use crate::identity::IdMap;
pub(crate) use crate::priority::CLASSES;
use book::{Move, Provider, Tenant, CREATED};
pub(crate) use index_hash::IndexMap;
use slab::{Group, List, Slab, Waiter};

/// Names one queued waiter; stale once it is granted or cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct WaiterKey {
    index: u32,
    generation: u32,
}

/// Names the running counts of one granted request (its tenant's and
/// provider's entries), so that its release needs no key lookup. Valid until
/// that release: an entry with something running is never dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunningKey {
    tenant: u32,
    tenant_generation: u32,
    provider: u32,
    provider_generation: u32,
    /// Its priority class, by rank.
    class: u32,
    /// The expiring provider share it was granted under, if any (not
    /// under a ceiling without an expiry, nor under a fallback).
    under: Option<GrantedUnder>,
}

impl RunningKey {
    /// True when the share this grant was made under surely holds now:
    /// granted under no expiring share, or before that share's fallback
    /// instant at the grant (a caller never moves a share's instant
    /// earlier: see `ProviderPools::set_provider_running_until`).
    /// Otherwise only [`FairQueue::share_lapsed`] can tell.
    pub(crate) fn share_surely_holds(&self) -> bool {
        self.under
            .is_none_or(|under| Instant::now() < under.until.instant())
    }
}

/// A waiter whose turn came: its counts moved from pending to running.
#[derive(Debug)]
pub(crate) struct Grant<T> {
    /// The key the waiter was queued under (now stale).
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "the scheduler keys waiters by ticket")
    )]
    pub(crate) key: WaiterKey,
    /// Where its running counts are kept, for [`FairQueue::release_running`].
    pub(crate) running: RunningKey,
    /// The item pushed with it.
    pub(crate) item: T,
}

/// The fair admission queue; see the module documentation for its rules.
pub(crate) struct FairQueue<T, K, P> {
    ceilings: Ceilings,
    waiters: Slab<Waiter<T>>,
    groups: Slab<Group>,
    tenants: Slab<Tenant<K>>,
    providers: Slab<Provider<P>>,
    tenant_ix: IdMap<K, u32>,
    provider_ix: IdMap<P, u32>,
    /// Tenants' own running ceilings, kept while their bookkeeping comes
    /// and goes; bounded by the caller.
    own_ceilings: IdMap<K, u32>,
    /// Providers' own running ceilings, likewise.
    own_provider_ceilings: IdMap<P, u32>,
    /// When providers' own ceilings fall back, for those that do.
    own_provider_expiries: IdMap<P, Expiry>,
    /// Which eligible tenant, and which of its groups, is granted next.
    fairness: Fairness,
    /// Tenants' weights other than 1, likewise.
    weights: IdMap<K, u32>,
    /// Providers' and tenants' request rates, likewise, and those
    /// awaiting a token.
    rates: Rates<K, P>,
    /// Groups by (tenant slot, provider slot, class rank).
    group_ix: IndexMap<(u32, u32, u32), u32>,
    /// Running grants per (tenant slot, provider slot), for [`Self::demand`];
    /// an entry exists only while its count is above zero.
    pair_running: IndexMap<(u32, u32), u32>,
    /// Each class's eligible tenants, next turn first, by rank.
    rotation: [List; CLASSES],
    /// Each class's queued waiters, by rank.
    class_pending: [u32; CLASSES],
    /// Each class's running grants, by rank.
    class_running: [u32; CLASSES],
    /// Each class's minimum share of `running_total`, in percent, by rank.
    min_shares: [u8; CLASSES],
    /// Each class's minimum in slots (its share of `running_total`,
    /// rounded down), by rank; kept in step with both.
    minimums: [u32; CLASSES],
    created_tenants: List,
    created_providers: List,
    pending: u32,
    running: u32,
}

impl<T, K, P> FairQueue<T, K, P>
where
    K: Clone + Eq + Hash + fmt::Debug,
    P: Clone + Eq + Hash + fmt::Debug,
{
    /// An empty queue under `ceilings`.
    pub(crate) fn new(ceilings: Ceilings) -> Self {
        Self {
            ceilings,
            waiters: Slab::new(),
            groups: Slab::new(),
            tenants: Slab::new(),
            providers: Slab::new(),
            tenant_ix: IdMap::default(),
            provider_ix: IdMap::default(),
            own_ceilings: IdMap::default(),
            own_provider_ceilings: IdMap::default(),
            own_provider_expiries: IdMap::default(),
            fairness: Fairness::Rotation,
            weights: IdMap::default(),
            rates: Rates::default(),
            group_ix: IndexMap::default(),
            pair_running: IndexMap::default(),
            rotation: std::array::from_fn(List::new),
            class_pending: [0; CLASSES],
            class_running: [0; CLASSES],
            min_shares: crate::priority::MinShares::DEFAULT.by_rank(),
            minimums: classes::minimums(
                crate::priority::MinShares::DEFAULT.by_rank(),
                ceilings.running_total,
            ),
            created_tenants: List::new(CREATED),
            created_providers: List::new(CREATED),
            pending: 0,
            running: 0,
        }
    }

    #[cfg(test)]
    /// The ceilings in force.
    pub(crate) fn ceilings(&self) -> Ceilings {
        self.ceilings
    }

    #[cfg(test)]
    /// Queues `item` for (`tenant`, `provider`) in the default class; see
    /// [`Self::push_in`].
    pub(crate) fn push(
        &mut self,
        tenant: K,
        provider: P,
        item: T,
    ) -> Result<WaiterKey, (Refused, T)> {
        self.push_in(tenant, provider, DEFAULT_CLASS, item)
    }

    /// Queues `item` for (`tenant`, `provider`) in class `class` (by rank,
    /// below [`CLASSES`]), or refuses at once naming the first full bound
    /// (total, tenant, provider) and hands `item` back.
    pub(crate) fn push_in(
        &mut self,
        tenant: K,
        provider: P,
        class: u32,
        item: T,
    ) -> Result<WaiterKey, (Refused, T)> {
        debug_assert!((class as usize) < CLASSES, "class {class} out of range");
        let class = class.min(CLASSES as u32 - 1);
        let c = self.ceilings;
        let t = self.tenant_ix.get(&tenant).copied();
        let p = self.provider_ix.get(&provider).copied();
        let t_pending = t.and_then(|t| self.tenants.get(t)).map_or(0, |x| x.pending);
        let p_pending = p
            .and_then(|p| self.providers.get(p))
            .map_or(0, |x| x.pending);
        for (bound, used, limit) in [
            (Bound::PendingTotal, self.pending, c.pending_total),
            (Bound::PendingPerTenant, t_pending, c.pending_per_tenant),
            (Bound::PendingPerProvider, p_pending, c.pending_per_provider),
        ] {
            if used >= limit {
                return Err((Refused { bound, used, limit }, item));
            }
        }
        // Index space exhausted (2^32 - 1 live entries): reported as full.
        let full = Refused {
            bound: Bound::PendingTotal,
            used: self.pending,
            limit: self.pending,
        };
        let Some((t, p, g)) = self.entries(t, tenant, p, provider, class) else {
            return Err((full, item));
        };
        let (index, generation) = match self.waiters.insert(Waiter::new(item, g)) {
            Ok(key) => key,
            Err(waiter) => {
                self.abandon(t, p, g);
                return Err((full, waiter.item));
            }
        };
        let fresh = match self.groups.get_mut(g) {
            Some(group) => {
                group.waiters.push_back(&mut self.waiters, index);
                group.waiters.len() == 1
            }
            None => false,
        };
        self.count(Some(t), Some(p), Move::Queue);
        self.class_pending[class as usize] += 1;
        if fresh {
            let blocked = self.provider_full(p);
            self.place_group(g, blocked);
        }
        Ok(WaiterKey { index, generation })
    }

    /// Removes a still-queued waiter and refunds its pending counts;
    /// `None` (and no change) for a key already granted or cancelled.
    pub(crate) fn cancel(&mut self, key: WaiterKey) -> Option<T> {
        if self.waiters.generation(key.index) != Some(key.generation) {
            return None;
        }
        let g = self.waiters.get(key.index)?.group;
        let group = self.groups.get_mut(g)?;
        let (t, p, c) = (group.tenant, group.provider, group.class as usize);
        group.waiters.remove(&mut self.waiters, key.index);
        let emptied = group.waiters.is_empty();
        let waiter = self.waiters.remove(key.index)?;
        self.count(Some(t), Some(p), Move::Unqueue);
        if let Some(pending) = self.class_pending.get_mut(c) {
            *pending = pending.saturating_sub(1);
        }
        if emptied {
            self.detach_group(g);
            self.forget_group(g);
        }
        self.forget_if_idle(Some(t), Some(p));
        Some(waiter.item)
    }

    /// The item of a still-queued waiter, to replace in place; `None` for
    /// a key already granted or cancelled.
    pub(crate) fn item_mut(&mut self, key: WaiterKey) -> Option<&mut T> {
        if self.waiters.generation(key.index) != Some(key.generation) {
            return None;
        }
        self.waiters
            .get_mut(key.index)
            .map(|waiter| &mut waiter.item)
    }

    /// Pops the next waiter by the rules, moving its counts from pending to running.
    pub(crate) fn next_grant(&mut self) -> Option<Grant<T>> {
        if self.running >= self.ceilings.running_total {
            return None;
        }
        self.grant_by_class()
    }

    /// A granted request finished (or its grant was refused by the waiter):
    /// returns the running counts its grant named. A key released twice (or
    /// from another queue) is a caller bug: debug-asserted, ignored.
    pub(crate) fn release_running(&mut self, running: RunningKey) {
        let live = self.tenants.generation(running.tenant) == Some(running.tenant_generation)
            && self.providers.generation(running.provider) == Some(running.provider_generation);
        debug_assert!(live, "release of a stale {running:?}");
        if live {
            self.release_at(running.tenant, running.provider, running.class);
        }
    }

    /// Changes the ceilings, or refuses (changing nothing) when a tenant or
    /// provider already uses more than its new per-tenant/per-provider
    /// ceiling, checked in [`Bound`] order; totals may go below use.
    pub(crate) fn set_ceilings(&mut self, new: Ceilings) -> Result<(), InUse> {
        let most = |counts: &mut dyn Iterator<Item = (u32, u32)>| {
            counts.fold((0, 0), |(a, b), (x, y)| (a.max(x), b.max(y)))
        };
        let tenants = most(&mut self.tenants.values().map(|x| (x.pending, x.running)));
        let providers = most(&mut self.providers.values().map(|x| (x.pending, x.running)));
        for (bound, used, requested) in [
            (Bound::PendingPerTenant, tenants.0, new.pending_per_tenant),
            (
                Bound::PendingPerProvider,
                providers.0,
                new.pending_per_provider,
            ),
            (Bound::RunningPerTenant, tenants.1, new.running_per_tenant),
            (
                Bound::RunningPerProvider,
                providers.1,
                new.running_per_provider,
            ),
        ] {
            if used > requested {
                return Err(InUse {
                    bound,
                    used,
                    requested,
                });
            }
        }
        self.ceilings = new;
        self.minimums = classes::minimums(self.min_shares, new.running_total);
        self.rebuild();
        Ok(())
    }

    /// Requests queued in total.
    pub(crate) fn pending(&self) -> u32 {
        self.pending
    }

    /// Requests granted and not yet released, in total.
    pub(crate) fn running(&self) -> u32 {
        self.running
    }

    #[cfg(test)]
    /// (pending, running) of `tenant`; (0, 0) when it has neither.
    pub(crate) fn tenant_counts(&self, tenant: &K) -> (u32, u32) {
        let entry = self
            .tenant_ix
            .get(tenant)
            .and_then(|&t| self.tenants.get(t));
        entry.map_or((0, 0), |x| (x.pending, x.running))
    }

    #[cfg(test)]
    /// (pending, running) of `provider`; (0, 0) when it has neither.
    pub(crate) fn provider_counts(&self, provider: &P) -> (u32, u32) {
        let entry = self
            .provider_ix
            .get(provider)
            .and_then(|&p| self.providers.get(p));
        entry.map_or((0, 0), |x| (x.pending, x.running))
    }
}

impl<T, K, P> fmt::Debug for FairQueue<T, K, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FairQueue")
            .field("ceilings", &self.ceilings)
            .field("pending", &self.pending)
            .field("running", &self.running)
            .field("tenants", &self.tenants.len())
            .field("providers", &self.providers.len())
            .field("groups", &self.groups.len())
            .field("class_running", &self.class_running)
            .finish()
    }
}
