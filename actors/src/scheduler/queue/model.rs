//! A naive reference model of the queue's rules, for the property test.
//!
//! Plain `Vec`s and linear scans: counts are recomputed from the waiting and
//! running lists, and tenant eligibility is recomputed for every tenant after
//! every elementary step (`sync`), instead of being maintained incrementally.
//! A provider's or tenant's rate is its rate and TAT in a list, read on the
//! tokio clock; those awaiting a token are lists in the order they began to.
//! Classes are ranks (0 the highest): each has its own tenant rotation, and
//! each tenant its own provider rotation per class.

use tokio::time::Instant;

use super::{Bound, Ceilings, Fairness, InUse, Owner, Rate, RateRefused, Refused, CLASSES};

/// Tenants and providers are `u8`, items and classes `u32`.
pub(super) struct Model {
    c: Ceilings,
    /// Queued (item, tenant, provider, class), oldest first.
    waiting: Vec<(u32, u8, u8, u32)>,
    /// Granted, unreleased (tenant, provider, class).
    running: Vec<(u8, u8, u32)>,
    /// Tenants with work, in creation order, each with its provider
    /// rotation in each class.
    tenants: Vec<(u8, [Vec<u8>; CLASSES])>,
    /// Providers with work, in creation order, each with its blocked
    /// groups (by tenant and class).
    providers: Vec<(u8, Vec<(u8, u32)>)>,
    /// Each class's tenant rotation.
    rotation: [Vec<u8>; CLASSES],
    /// Each class's minimum share of `running_total`, in percent.
    min_shares: [u8; CLASSES],
    /// Tenants' own running ceilings.
    own: Vec<(u8, u32)>,
    /// Providers' own running ceilings.
    own_providers: Vec<(u8, u32)>,
    /// Providers' rates.
    rates: Vec<Rated>,
    /// Providers awaiting a token, in the order they began to.
    awaiting: Vec<u8>,
    /// Tenants' rates.
    tenant_rates: Vec<Rated>,
    /// Tenants awaiting a token, in the order they began to.
    awaiting_tenants: Vec<u8>,
    /// Tenants' weights other than 1.
    weights: Vec<(u8, u32)>,
    /// Grants of (tenant, class) in the class's rotation since the tenant
    /// entered it or last reached its front (absent: none).
    turns: Vec<(u8, u32, u32)>,
    /// The policy choosing the tenant and group granted next.
    fairness: Fairness,
}

/// A provider's or tenant's rate in force, configured rate and TAT.
#[derive(Clone, Copy)]
struct Rated {
    key: u8,
    rate: Rate,
    configured: Rate,
    tat: Instant,
}

impl Rated {
    fn tolerance(&self) -> std::time::Duration {
        self.rate.interval() * self.rate.burst.saturating_sub(1)
    }

    fn ready(&self) -> bool {
        self.tat <= Instant::now() + self.tolerance()
    }

    /// When the token after `ahead` more grants comes.
    fn turn(&self, ahead: u32) -> Instant {
        let now = Instant::now();
        let tat = self.tat.max(now) + self.rate.interval() * ahead;
        (tat - self.tolerance()).max(now)
    }
}

fn rated(table: &[Rated], key: u8) -> Option<&Rated> {
    table.iter().find(|x| x.key == key)
}

impl Model {
    pub(super) fn new(c: Ceilings) -> Self {
        Self {
            c,
            waiting: Vec::new(),
            running: Vec::new(),
            tenants: Vec::new(),
            providers: Vec::new(),
            rotation: Default::default(),
            min_shares: crate::priority::MinShares::DEFAULT.by_rank(),
            own: Vec::new(),
            own_providers: Vec::new(),
            rates: Vec::new(),
            awaiting: Vec::new(),
            tenant_rates: Vec::new(),
            awaiting_tenants: Vec::new(),
            weights: Vec::new(),
            turns: Vec::new(),
            fairness: Fairness::Rotation,
        }
    }

    pub(super) fn pending(&self) -> u32 {
        self.waiting.len() as u32
    }

    pub(super) fn running(&self) -> u32 {
        self.running.len() as u32
    }

    pub(super) fn tenant_counts(&self, t: u8) -> (u32, u32) {
        let pending = self.waiting.iter().filter(|w| w.1 == t).count();
        let running = self.running.iter().filter(|r| r.0 == t).count();
        (pending as u32, running as u32)
    }

    pub(super) fn class_pending(&self, c: u32) -> u32 {
        self.waiting.iter().filter(|w| w.3 == c).count() as u32
    }

    pub(super) fn class_running(&self, c: u32) -> u32 {
        self.running.iter().filter(|r| r.2 == c).count() as u32
    }

    pub(super) fn provider_counts(&self, p: u8) -> (u32, u32) {
        let pending = self.waiting.iter().filter(|w| w.2 == p).count();
        let running = self.running.iter().filter(|r| r.1 == p).count();
        (pending as u32, running as u32)
    }

    /// Every tenant's (tenant, pending, running) on `p`, by tenant.
    pub(super) fn demand(&self, p: u8) -> Vec<(u8, u32, u32)> {
        let mut found: Vec<(u8, u32, u32)> = Vec::new();
        for t in 0..=u8::MAX {
            let pending = self.waiting.iter().filter(|w| w.1 == t && w.2 == p).count();
            let running = self.running.iter().filter(|r| (r.0, r.1) == (t, p)).count();
            if pending + running > 0 {
                found.push((t, pending as u32, running as u32));
            }
        }
        found
    }

    fn group_len(&self, t: u8, p: u8, c: u32) -> usize {
        (self.waiting.iter())
            .filter(|w| (w.1, w.2, w.3) == (t, p, c))
            .count()
    }

    fn groups_of(&mut self, t: u8, c: u32) -> &mut Vec<u8> {
        let at = self.tenants.iter().position(|x| x.0 == t).expect("tenant");
        &mut self.tenants[at].1[c as usize]
    }

    fn blocked_of(&mut self, p: u8) -> &mut Vec<(u8, u32)> {
        let at = self
            .providers
            .iter()
            .position(|x| x.0 == p)
            .expect("provider");
        &mut self.providers[at].1
    }

    /// Tenant `t`'s running ceiling: its own, capped by the node-wide one.
    fn tenant_ceiling(&self, t: u8) -> u32 {
        let own = self.own.iter().find(|x| x.0 == t).map(|x| x.1);
        own.map_or(self.c.running_per_tenant, |own| {
            own.min(self.c.running_per_tenant)
        })
    }

    fn provider_full(&self, p: u8) -> bool {
        let own = self.own_providers.iter().find(|x| x.0 == p).map(|x| x.1);
        let ceiling = own.map_or(self.c.running_per_provider, |own| {
            own.min(self.c.running_per_provider)
        });
        self.provider_counts(p).1 >= ceiling || !self.token_ready(p)
    }

    /// True when `p` has no rate, or a token of it now.
    fn token_ready(&self, p: u8) -> bool {
        rated(&self.rates, p).is_none_or(Rated::ready)
    }

    /// True when tenant `t` has a rate and no token of it now.
    fn tenant_lacks(&self, t: u8) -> bool {
        rated(&self.tenant_rates, t).is_some_and(|x| !x.ready())
    }

    /// Lists `p` as awaiting a token, once, if it has a rate.
    fn await_token(&mut self, p: u8) {
        if rated(&self.rates, p).is_some() && !self.awaiting.contains(&p) {
            self.awaiting.push(p);
        }
    }

    /// Parks tenant `t`'s group of `p` in class `c` behind `p`.
    fn park(&mut self, t: u8, p: u8, c: u32) {
        self.blocked_of(p).push((t, c));
        self.await_token(p);
    }

    pub(super) fn configure_rate(
        &mut self,
        owner: Owner<u8, u8>,
        rate: Rate,
    ) -> Result<(), RateRefused> {
        let (table, key) = match owner {
            Owner::Provider(p) => (&mut self.rates, p),
            Owner::Tenant(t) => (&mut self.tenant_rates, t),
        };
        if let Some(x) = rated(table, key) {
            return Err(RateRefused::Configured(x.configured));
        }
        table.push(Rated {
            key,
            rate,
            configured: rate,
            tat: Instant::now(),
        });
        Ok(())
    }

    pub(super) fn set_rate(&mut self, owner: Owner<u8, u8>, rate: Rate) -> Result<(), RateRefused> {
        let (table, key) = match owner {
            Owner::Provider(p) => (&mut self.rates, p),
            Owner::Tenant(t) => (&mut self.tenant_rates, t),
        };
        let Some(x) = table.iter_mut().find(|x| x.key == key) else {
            return Err(RateRefused::Unconfigured);
        };
        let configured = x.configured;
        // Faster (more requests per period) or burstier than configured.
        let faster = f64::from(rate.requests) / rate.period.as_secs_f64()
            > f64::from(configured.requests) / configured.period.as_secs_f64();
        if faster || rate.burst > configured.burst {
            return Err(RateRefused::Raised(configured));
        }
        x.rate = rate;
        match owner {
            Owner::Provider(p) => self.unblock(p),
            Owner::Tenant(_) => self.sync(),
        }
        Ok(())
    }

    /// The later turn of (`t`, `p`) in class `c` under their rates, with
    /// its rate.
    pub(super) fn rate_turn(&self, t: u8, p: u8, c: u32) -> Option<(Rate, Instant)> {
        let ahead = self.group_len(t, p, c) as u32;
        let turn = |x: &Rated| (x.rate, x.turn(ahead));
        let by_provider = rated(&self.rates, p).map(turn);
        let by_tenant = rated(&self.tenant_rates, t).map(turn);
        match (by_provider, by_tenant) {
            (Some(a), Some(b)) => Some(if b.1 > a.1 { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// The earliest instant an awaiting provider or tenant without a
    /// token gets one.
    pub(super) fn next_token(&self) -> Option<Instant> {
        let providers = (self.awaiting.iter()).filter_map(|&p| rated(&self.rates, p));
        let tenants = (self.awaiting_tenants.iter()).filter_map(|&t| rated(&self.tenant_rates, t));
        (providers.chain(tenants))
            .filter(|x| !x.ready())
            .map(|x| x.turn(0))
            .min()
    }

    /// Puts the awaiting tenants whose token came back in the rotation in
    /// order, keeping those still without one; then unblocks the awaiting
    /// providers in order, keeping those still parked.
    pub(super) fn refill(&mut self) {
        for t in std::mem::take(&mut self.awaiting_tenants) {
            for c in 0..CLASSES {
                if self.eligible(t, c as u32) && !self.rotation[c].contains(&t) {
                    self.rotation[c].push(t);
                }
            }
            if self.tenant_lacks(t) && !self.awaiting_tenants.contains(&t) {
                self.awaiting_tenants.push(t);
            }
        }
        self.sync();
        for p in std::mem::take(&mut self.awaiting) {
            self.unblock(p);
            if !self.blocked_of(p).is_empty() && !self.awaiting.contains(&p) {
                self.awaiting.push(p);
            }
        }
    }

    /// Gives a tenant or provider its own running ceiling, or takes it away.
    pub(super) fn set_own_ceiling(
        &mut self,
        owner: Owner<u8, u8>,
        ceiling: Option<u32>,
    ) -> Result<(), InUse> {
        let (bound, running) = match owner {
            Owner::Tenant(t) => (Bound::RunningPerTenant, self.tenant_counts(t).1),
            Owner::Provider(p) => (Bound::RunningPerProvider, self.provider_counts(p).1),
        };
        if let Some(requested) = ceiling.filter(|&c| running > c) {
            return Err(InUse {
                bound,
                used: running,
                requested,
            });
        }
        let (table, key) = match owner {
            Owner::Tenant(t) => (&mut self.own, t),
            Owner::Provider(p) => (&mut self.own_providers, p),
        };
        table.retain(|x| x.0 != key);
        table.extend(ceiling.map(|c| (key, c)));
        match owner {
            Owner::Tenant(_) => self.sync(),
            Owner::Provider(p) => self.unblock(p),
        }
        Ok(())
    }

    /// Gives tenant `t` its weight, from its next grant on.
    pub(super) fn set_weight(&mut self, t: u8, weight: u32) {
        self.weights.retain(|x| x.0 != t);
        if weight != 1 {
            self.weights.push((t, weight));
        }
    }

    pub(super) fn set_fairness(&mut self, fairness: Fairness) {
        self.fairness = fairness;
    }

    pub(super) fn set_min_shares(&mut self, shares: [u8; CLASSES]) {
        self.min_shares = shares;
    }

    /// Class `c`'s minimum: its share of `running_total`, rounded down.
    fn minimum(&self, c: u32) -> u32 {
        (u64::from(self.c.running_total) * u64::from(self.min_shares[c as usize]) / 100) as u32
    }

    /// The tenant and the position of its group to grant next in class
    /// `c` under the policy: the front ones, or the least held of each
    /// (running per unit of weight for tenants, running of the tenant on
    /// the group's provider for groups, in every class), the earliest
    /// among equals.
    fn choose(&self, c: u32) -> Option<(u8, usize)> {
        let running_of = |t: u8| self.running.iter().filter(|r| r.0 == t).count() as u64;
        let rotation = &self.rotation[c as usize];
        let t = match self.fairness {
            Fairness::Rotation => *rotation.first()?,
            Fairness::LeastHeld => {
                let mut least = *rotation.first()?;
                for &t in rotation {
                    let fewer = running_of(t) * u64::from(self.weight(least))
                        < running_of(least) * u64::from(self.weight(t));
                    if fewer {
                        least = t;
                    }
                }
                least
            }
        };
        let groups = &self.tenants.iter().find(|x| x.0 == t)?.1[c as usize];
        let at = match self.fairness {
            Fairness::Rotation => 0,
            Fairness::LeastHeld => {
                let held = |p: u8| self.running.iter().filter(|r| (r.0, r.1) == (t, p)).count();
                let mut at = 0;
                for (i, &p) in groups.iter().enumerate() {
                    if held(p) < held(groups[at]) {
                        at = i;
                    }
                }
                at
            }
        };
        Some((t, at))
    }

    fn weight(&self, t: u8) -> u32 {
        self.weights.iter().find(|x| x.0 == t).map_or(1, |x| x.1)
    }

    /// Each class's rotation keeps its eligible tenants in order and
    /// appends the newly eligible ones in creation order.
    fn sync(&mut self) {
        for c in 0..CLASSES {
            let eligible: Vec<u8> = (self.tenants.iter().map(|x| x.0))
                .filter(|&t| self.eligible(t, c as u32))
                .collect();
            self.rotation[c].retain(|t| eligible.contains(t));
            let rotation = self.rotation[c].clone();
            (self.turns).retain(|x| x.1 != c as u32 || rotation.contains(&x.0));
            for t in eligible {
                if !self.rotation[c].contains(&t) {
                    self.rotation[c].push(t);
                }
            }
        }
        // Those that would be eligible but for a token await one.
        let lacking: Vec<u8> = (self.tenants.iter().map(|x| x.0))
            .filter(|&t| (0..CLASSES as u32).any(|c| self.waits(t, c)) && self.tenant_lacks(t))
            .collect();
        for t in lacking {
            if !self.awaiting_tenants.contains(&t) {
                self.awaiting_tenants.push(t);
            }
        }
    }

    /// Tenant `t` has groups in class `c` and is under its running ceiling.
    fn waits(&self, t: u8, c: u32) -> bool {
        let groups = self
            .tenants
            .iter()
            .find(|x| x.0 == t)
            .map(|x| &x.1[c as usize]);
        groups.is_some_and(|g| !g.is_empty()) && self.tenant_counts(t).1 < self.tenant_ceiling(t)
    }

    /// Tenant `t` waits in class `c`, with a token of its rate if it has one.
    fn eligible(&self, t: u8, c: u32) -> bool {
        self.waits(t, c) && !self.tenant_lacks(t)
    }

    /// Drops tenants and providers with nothing pending or running.
    fn gc(&mut self) {
        let idle_t: Vec<u8> = (self.tenants.iter().map(|x| x.0))
            .filter(|&t| self.tenant_counts(t) == (0, 0))
            .collect();
        self.tenants.retain(|x| !idle_t.contains(&x.0));
        let idle_p: Vec<u8> = (self.providers.iter().map(|x| x.0))
            .filter(|&p| self.provider_counts(p) == (0, 0))
            .collect();
        self.providers.retain(|x| !idle_p.contains(&x.0));
        self.awaiting.retain(|p| !idle_p.contains(p));
        self.awaiting_tenants.retain(|t| !idle_t.contains(t));
    }

    fn unblock(&mut self, p: u8) {
        if !self.providers.iter().any(|x| x.0 == p) {
            return;
        }
        if self.provider_full(p) {
            if !self.blocked_of(p).is_empty() {
                self.await_token(p);
            }
            return;
        }
        for (t, c) in std::mem::take(self.blocked_of(p)) {
            self.groups_of(t, c).push(p);
            self.sync();
        }
    }

    pub(super) fn push(&mut self, t: u8, p: u8, c: u32, item: u32) -> Result<(), Refused> {
        let checks = [
            (Bound::PendingTotal, self.pending(), self.c.pending_total),
            (
                Bound::PendingPerTenant,
                self.tenant_counts(t).0,
                self.c.pending_per_tenant,
            ),
            (
                Bound::PendingPerProvider,
                self.provider_counts(p).0,
                self.c.pending_per_provider,
            ),
        ];
        for (bound, used, limit) in checks {
            if used >= limit {
                return Err(Refused { bound, used, limit });
            }
        }
        if !self.tenants.iter().any(|x| x.0 == t) {
            self.tenants.push((t, Default::default()));
        }
        if !self.providers.iter().any(|x| x.0 == p) {
            self.providers.push((p, Vec::new()));
        }
        if self.group_len(t, p, c) == 0 {
            if self.provider_full(p) {
                self.park(t, p, c);
            } else {
                self.groups_of(t, c).push(p);
            }
        }
        self.waiting.push((item, t, p, c));
        self.sync();
        Ok(())
    }

    pub(super) fn cancel(&mut self, item: u32) -> Option<u32> {
        let at = self.waiting.iter().position(|w| w.0 == item)?;
        let (_, t, p, c) = self.waiting.remove(at);
        if self.group_len(t, p, c) == 0 {
            self.groups_of(t, c).retain(|&x| x != p);
            self.blocked_of(p).retain(|&x| x != (t, c));
        }
        self.sync();
        self.gc();
        Some(item)
    }

    pub(super) fn next_grant(&mut self) -> Option<(u8, u8, u32)> {
        if self.running() >= self.c.running_total {
            return None;
        }
        // First each class below its minimum, highest first.
        for c in 0..CLASSES as u32 {
            if self.class_running(c) < self.minimum(c) {
                if let Some(grant) = self.grant_in(c) {
                    return Some(grant);
                }
            }
        }
        // Then each class, highest first, while a grant leaves the higher
        // classes' unused minimums free.
        let free = self.c.running_total - self.running();
        for c in 0..CLASSES as u32 {
            let reserved: u32 = (0..c)
                .map(|d| self.minimum(d).saturating_sub(self.class_running(d)))
                .sum();
            if free > reserved {
                if let Some(grant) = self.grant_in(c) {
                    return Some(grant);
                }
            }
        }
        None
    }

    /// A grant in class `c` by the fairness policy, parking the chosen
    /// groups whose provider is full; `None` once no tenant of the class
    /// is eligible.
    fn grant_in(&mut self, c: u32) -> Option<(u8, u8, u32)> {
        loop {
            let (t, at) = self.choose(c)?;
            let p = self.groups_of(t, c)[at];
            if self.provider_full(p) {
                self.groups_of(t, c).remove(at);
                self.park(t, p, c);
                self.sync();
                continue;
            }
            let oldest = (self.waiting.iter())
                .position(|w| (w.1, w.2, w.3) == (t, p, c))
                .expect("waiter");
            let (item, ..) = self.waiting.remove(oldest);
            let now = Instant::now();
            if let Some(x) = self.rates.iter_mut().find(|x| x.key == p) {
                x.tat = x.tat.max(now) + x.rate.interval();
            }
            if let Some(x) = self.tenant_rates.iter_mut().find(|x| x.key == t) {
                x.tat = x.tat.max(now) + x.rate.interval();
            }
            self.running.push((t, p, c));
            self.groups_of(t, c).remove(at);
            if self.group_len(t, p, c) > 0 {
                self.groups_of(t, c).push(p);
            }
            let turns = (self.turns.iter())
                .find(|x| (x.0, x.1) == (t, c))
                .map_or(0, |x| x.2)
                + 1;
            self.turns.retain(|x| (x.0, x.1) != (t, c));
            if turns >= self.weight(t) || self.fairness == Fairness::LeastHeld {
                self.rotation[c as usize].retain(|&x| x != t);
            } else {
                self.turns.push((t, c, turns));
            }
            self.sync();
            return Some((t, p, item));
        }
    }

    pub(super) fn release(&mut self, t: u8, p: u8, c: u32) {
        let at = self
            .running
            .iter()
            .position(|&r| r == (t, p, c))
            .expect("running");
        self.running.remove(at);
        self.sync();
        self.unblock(p);
        self.gc();
    }

    pub(super) fn set_ceilings(&mut self, new: Ceilings) -> Result<(), InUse> {
        let max = |counts: Vec<(u32, u32)>| {
            (
                counts.iter().map(|x| x.0).max().unwrap_or(0),
                counts.iter().map(|x| x.1).max().unwrap_or(0),
            )
        };
        let tenants = max(self
            .tenants
            .iter()
            .map(|x| self.tenant_counts(x.0))
            .collect());
        let providers = max(self
            .providers
            .iter()
            .map(|x| self.provider_counts(x.0))
            .collect());
        let checks = [
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
        ];
        for (bound, used, requested) in checks {
            if used > requested {
                return Err(InUse {
                    bound,
                    used,
                    requested,
                });
            }
        }
        self.c = new;
        self.sync();
        let providers: Vec<u8> = self.providers.iter().map(|x| x.0).collect();
        for p in providers {
            self.unblock(p);
        }
        Ok(())
    }
}
