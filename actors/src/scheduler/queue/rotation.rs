//! The tenant rotation, the per-tenant provider rotations and the
//! per-provider blocked FIFOs, with the parking moves between them.
//!
//! - `sync_tenant` is the only place a tenant enters the rotation: at the
//!   back, exactly when it becomes eligible; it leaves when it stops being.
//! - `block_group` parks a group whose provider is at its ceiling;
//!   `unblock_provider` re-inserts all of a provider's parked groups once it
//!   is under its ceiling. Each block is paid by the placement it undoes.

use std::hash::Hash;

use tokio::time::Instant;

use super::book::{Move, Provider};
use super::slab::{Waiter, NIL};
use super::{FairQueue, Fairness, Grant, GrantedUnder, RunningKey, WaiterKey, CLASSES};
use crate::moment::Moment;

impl<T, K, P> FairQueue<T, K, P>
where
    K: Clone + Eq + Hash,
    P: Clone + Eq + Hash,
{
    /// Puts tenant `t` in each class's rotation (at the back) exactly when
    /// eligible there: with groups of the class, under its running
    /// ceiling, and with a token of its own rate if it has one (else it
    /// awaits the next).
    pub(super) fn sync_tenant(&mut self, t: u32) {
        let node_wide = self.ceilings.running_per_tenant;
        let Some(tenant) = self.tenants.get_mut(t) else {
            debug_assert!(false, "sync of a missing tenant {t}");
            return;
        };
        let ceiling = tenant
            .own_ceiling
            .map_or(node_wide, |own| own.min(node_wide));
        let under = tenant.running < ceiling;
        // Out of tokens for its own rate, it awaits the next one.
        let no_token = (tenant.rate).is_some_and(|gcra| !gcra.ready(Instant::now()));
        let mut lacks = false;
        // Which class rotations it enters (true) or leaves (false).
        let mut moves = [None; CLASSES];
        for (in_class, moved) in tenant.classes.iter_mut().zip(&mut moves) {
            let waits = under && !in_class.groups.is_empty();
            lacks |= waits && no_token;
            let eligible = waits && !no_token;
            if eligible != in_class.active {
                in_class.active = eligible;
                // Its turns count from its entry.
                in_class.turns = 0;
                *moved = Some(eligible);
            }
        }
        for (rotation, moved) in self.rotation.iter_mut().zip(moves) {
            match moved {
                Some(true) => rotation.push_back(&mut self.tenants, t),
                Some(false) => rotation.remove(&mut self.tenants, t),
                None => {}
            }
        }
        if lacks {
            self.await_tenant_token(t);
        }
    }

    /// Returns one running count of tenant `t` and provider `p`. Releasing
    /// more than is running there is a caller bug: debug-asserted, counts
    /// saturate.
    pub(super) fn release_at(&mut self, t: u32, p: u32, class: u32) {
        debug_assert!(
            self.tenants.get(t).is_some_and(|x| x.running > 0),
            "release of tenant {t} with nothing running"
        );
        debug_assert!(
            self.providers.get(p).is_some_and(|x| x.running > 0),
            "release of provider {p} with nothing running"
        );
        self.count(Some(t), Some(p), Move::Release);
        if let Some(running) = self.class_running.get_mut(class as usize) {
            *running = running.saturating_sub(1);
        }
        self.sync_tenant(t);
        self.unblock_provider(p);
        self.forget_if_idle(Some(t), Some(p));
    }

    /// Places group `g` (in no FIFO) at the back of its tenant's provider
    /// rotation, or of its provider's blocked FIFO when `blocked`.
    pub(super) fn place_group(&mut self, g: u32, blocked: bool) {
        let Some(group) = self.groups.get_mut(g) else {
            debug_assert!(false, "placing a missing group {g}");
            return;
        };
        group.blocked = blocked;
        let (t, p, c) = (group.tenant, group.provider, group.class as usize);
        if blocked {
            if let Some(provider) = self.providers.get_mut(p) {
                provider.blocked.push_back(&mut self.groups, g);
                if provider.rate.is_some() {
                    self.await_token(p);
                }
            }
        } else if let Some(in_class) = (self.tenants.get_mut(t)).and_then(|x| x.classes.get_mut(c))
        {
            in_class.groups.push_back(&mut self.groups, g);
        }
        self.sync_tenant(t);
    }

    /// Takes group `g` out of whichever FIFO holds it.
    pub(super) fn detach_group(&mut self, g: u32) {
        let Some(group) = self.groups.get(g) else {
            debug_assert!(false, "detaching a missing group {g}");
            return;
        };
        let (t, p, c) = (group.tenant, group.provider, group.class as usize);
        if group.blocked {
            if let Some(provider) = self.providers.get_mut(p) {
                provider.blocked.remove(&mut self.groups, g);
            }
        } else if let Some(in_class) = (self.tenants.get_mut(t)).and_then(|x| x.classes.get_mut(c))
        {
            in_class.groups.remove(&mut self.groups, g);
        }
        self.sync_tenant(t);
    }

    /// Parks group `g` behind its provider's ceiling.
    pub(super) fn block_group(&mut self, g: u32) {
        self.detach_group(g);
        self.place_group(g, true);
    }

    /// Whether provider `p` is at (or above) its running ceiling, or
    /// out of tokens for its rate.
    pub(super) fn provider_full(&self, p: u32) -> bool {
        (self.providers.get(p)).is_some_and(|provider| {
            provider.running >= self.ceiling_of(provider)
                || provider
                    .rate
                    .is_some_and(|gcra| !gcra.ready(Instant::now()))
        })
    }

    /// The running ceiling in force for `provider`: the node-wide one, or
    /// its own when lower — the fallback once its expiry is due.
    pub(super) fn ceiling_of(&self, provider: &Provider<P>) -> u32 {
        let node_wide = self.ceilings.running_per_provider;
        let own = match provider.own_expiry {
            Some(expiry) if expiry.is_due() => Some(expiry.then),
            _ => provider.own_ceiling,
        };
        own.map_or(node_wide, |own| own.min(node_wide))
    }

    /// Once provider `p` is under its ceiling, moves its parked groups, in
    /// FIFO order, to the back of their tenants' provider rotations.
    pub(super) fn unblock_provider(&mut self, p: u32) {
        if self.provider_full(p) {
            // Parked for a token, it awaits the next one.
            if (self.providers.get(p)).is_some_and(|x| x.rate.is_some() && !x.blocked.is_empty()) {
                self.await_token(p);
            }
            return;
        }
        while let Some(g) = self
            .providers
            .get_mut(p)
            .and_then(|provider| provider.blocked.pop_front(&mut self.groups))
        {
            self.place_group(g, false);
        }
    }

    /// The rotation step of `next_grant` in class `c` (by rank), once the
    /// class is chosen: blocks the chosen groups whose provider is full,
    /// serves the first other one; `None` once the class's rotation is
    /// empty. The policy chooses: the front tenant and its front group, or
    /// the least held of each.
    pub(super) fn grant_in_turn(&mut self, c: usize) -> Option<Grant<T>> {
        loop {
            let (t, g) = match self.fairness {
                Fairness::Rotation => {
                    let t = self.rotation.get(c)?.front()?;
                    let in_class = self.tenants.get(t).and_then(|x| x.classes.get(c));
                    (t, in_class.and_then(|x| x.groups.front()))
                }
                Fairness::LeastHeld => {
                    let t = self.least_held_tenant(c)?;
                    (t, self.least_held_group(t, c))
                }
            };
            let Some(g) = g else {
                debug_assert!(false, "tenant {t} in rotation {c} without groups");
                self.rotation[c].remove(&mut self.tenants, t);
                if let Some(in_class) = self.tenants.get_mut(t).and_then(|x| x.classes.get_mut(c)) {
                    (in_class.active, in_class.turns) = (false, 0);
                }
                continue;
            };
            let p = self.groups.get(g).map_or(NIL, |group| group.provider);
            if self.provider_full(p) {
                self.block_group(g);
                continue;
            }
            let grant = self.serve(g);
            debug_assert!(grant.is_some(), "serving group {g} failed");
            return grant;
        }
    }

    /// Grants the oldest waiter of group `g` and rotates group and tenant.
    pub(super) fn serve(&mut self, g: u32) -> Option<Grant<T>> {
        // Every lookup first, so an impossible miss changes nothing.
        let group = self.groups.get(g)?;
        let (t, p, index) = (group.tenant, group.provider, group.waiters.front()?);
        let class = group.class;
        let c = class as usize;
        let generation = self.waiters.generation(index)?;
        let running = self.running_key(t, p, class)?;
        if let Some(group) = self.groups.get_mut(g) {
            group.waiters.remove(&mut self.waiters, index);
        }
        let waiter: Waiter<T> = self.waiters.remove(index)?;
        self.take_tokens(t, p);
        self.count(Some(t), Some(p), Move::Grant);
        if let Some(pending) = self.class_pending.get_mut(c) {
            *pending = pending.saturating_sub(1);
        }
        if let Some(running) = self.class_running.get_mut(c) {
            *running += 1;
        }
        // The group goes to the back of its tenant's provider rotation,
        // with no eligibility check between, so the tenant keeps its place.
        let emptied = (self.groups.get(g)).is_none_or(|group| group.waiters.is_empty());
        if let Some(in_class) = self.tenants.get_mut(t).and_then(|x| x.classes.get_mut(c)) {
            in_class.groups.remove(&mut self.groups, g);
            if !emptied {
                in_class.groups.push_back(&mut self.groups, g);
            }
        }
        if emptied {
            self.forget_group(g);
        }
        // The tenant goes to the back of the tenant rotation once its
        // turns are used; under the least-held policy, at once (its weight
        // weighs its slots instead).
        let least_held = self.fairness == Fairness::LeastHeld;
        if let Some(tenant) = self.tenants.get_mut(t) {
            let weight = tenant.weight;
            if let Some(in_class) = tenant.classes.get_mut(c).filter(|x| x.active) {
                in_class.turns += 1;
                if in_class.turns >= weight || least_held {
                    (in_class.active, in_class.turns) = (false, 0);
                    self.rotation[c].remove(&mut self.tenants, t);
                }
            }
        }
        self.sync_tenant(t);
        Some(Grant {
            key: WaiterKey { index, generation },
            running,
            item: waiter.item,
        })
    }

    /// Grants a request of `tenant` on `provider` in class `class` (by
    /// rank) at once, without a waiter or group, when nobody is queued
    /// and a push followed by [`Self::next_grant`] would grant it: the
    /// counts, entries and rotations are then exactly as those two would
    /// leave them (a tenant alone in a class rotation leaves it again with
    /// no group left, its turns reset). `None`, changing nothing the rules
    /// read, otherwise: the caller pushes it.
    pub(crate) fn grant_at_once(
        &mut self,
        tenant: &K,
        provider: &P,
        class: u32,
    ) -> Option<RunningKey> {
        let c = self.ceilings;
        // A waiter anywhere may have the turn; a pending bound of zero
        // refuses the push.
        if self.pending != 0
            || self.running >= c.running_total
            || c.pending_total == 0
            || c.pending_per_tenant == 0
            || c.pending_per_provider == 0
        {
            return None;
        }
        let class = class.min(CLASSES as u32 - 1);
        let found = (
            self.tenant_ix.get(tenant).copied(),
            self.provider_ix.get(provider).copied(),
        );
        let (t, p) = self.keyed_entries(found.0, tenant.clone(), found.1, provider.clone())?;
        if !self.grantable_alone(t, p, class as usize) {
            // Entries made for it alone go again.
            self.forget_if_idle(Some(t), Some(p));
            return None;
        }
        let running = self.running_key(t, p, class)?;
        self.take_tokens(t, p);
        self.count(Some(t), Some(p), Move::GrantUnqueued);
        if let Some(running) = self.class_running.get_mut(class as usize) {
            *running += 1;
        }
        Some(running)
    }

    /// The running key of a grant to tenant `t` on provider `p` in class
    /// `class` (by rank), with the expiring share it is made under, if any.
    fn running_key(&self, t: u32, p: u32, class: u32) -> Option<RunningKey> {
        let under = (self.providers.get(p)?.own_expiry)
            .filter(|expiry| !expiry.is_due())
            .map(|expiry| GrantedUnder {
                until: Moment::of(expiry.until),
                at: Moment::of(Instant::now()),
            });
        Some(RunningKey {
            tenant: t,
            tenant_generation: self.tenants.generation(t)?,
            provider: p,
            provider_generation: self.providers.generation(p)?,
            class,
            under,
        })
    }

    /// Takes a token of each rate a grant to tenant `t` on provider `p` is
    /// under.
    fn take_tokens(&mut self, t: u32, p: u32) {
        if let Some(gcra) = self.providers.get_mut(p).and_then(|x| x.rate.as_mut()) {
            gcra.take(Instant::now());
        }
        if let Some(gcra) = self.tenants.get_mut(t).and_then(|x| x.rate.as_mut()) {
            gcra.take(Instant::now());
        }
    }

    /// Whether a lone waiter of tenant `t` on provider `p` in class `c`
    /// would be granted by the rules now: the tenant under its ceiling
    /// with a token of its rate, the provider not full, the class allowed.
    fn grantable_alone(&self, t: u32, p: u32, c: usize) -> bool {
        let node_wide = self.ceilings.running_per_tenant;
        let tenant_ready = self.tenants.get(t).is_some_and(|tenant| {
            let ceiling = (tenant.own_ceiling).map_or(node_wide, |own| own.min(node_wide));
            tenant.running < ceiling && (tenant.rate).is_none_or(|gcra| gcra.ready(Instant::now()))
        });
        tenant_ready && !self.provider_full(p) && self.class_may_grant_alone(c)
    }

    /// Re-establishes the rotations after a ceiling change: still-eligible
    /// tenants keep their order, newly eligible ones follow in creation
    /// order, then providers under their ceiling unblock in creation order.
    pub(super) fn rebuild(&mut self) {
        let mut next = self.created_tenants.front();
        while let Some(t) = next {
            next = self.created_tenants.next_of(&self.tenants, t);
            self.sync_tenant(t);
        }
        let mut next = self.created_providers.front();
        while let Some(p) = next {
            next = self.created_providers.next_of(&self.providers, p);
            self.unblock_provider(p);
        }
    }
}
