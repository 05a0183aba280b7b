//! Request rates of providers and tenants: a generic cell rate algorithm
//! (GCRA) each, consulted where the running ceilings are.
//!
//! A rate of `requests` per `period` with a `burst` grants one request
//! every `interval = period / requests`, and up to `burst` at once after a
//! quiet spell. Its whole state is one instant, the *theoretical arrival
//! time* (TAT): a token is ready at `now` when `TAT <= now + tolerance`
//! (`tolerance = (burst - 1) × interval`), and a grant moves the TAT to
//! `max(TAT, now) + interval`. So over any window of length `w` at most
//! `burst + w / interval` requests are granted.
//!
//! - A provider without a token is treated as one at its running ceiling:
//!   its groups park in its blocked FIFO, in the order they met it, and
//!   keep that order when its next token comes. Tenants waiting on it
//!   therefore take its tokens in rotation, and a tenant that stops
//!   asking leaves its turns to the others.
//! - A tenant without a token of its own rate is treated as one at its
//!   running ceiling: it leaves the rotation, and rejoins at the back.
//! - A grant takes a token of its provider's rate and of its tenant's.
//! - A provider whose groups park for a token, or a tenant out of the
//!   rotation for one, is *awaiting* it: listed for
//!   [`FairQueue::next_token`], which the scheduler's one alarm also
//!   serves (no timer of its own); [`FairQueue::refill`] puts the awaiting
//!   tenants whose token came back in the rotation, then unblocks the
//!   awaiting providers whose token came, each in the order they began
//!   awaiting.
//! - A rate outlives its owner's bookkeeping (the TAT is written back when
//!   the entry goes idle), so idling never resets what was granted.
//! - A rate may be held until an instant and fall back to a lower one then
//!   ([`Fallback`]), read at every check: no timer applies it.
//! - A provider or tenant without a rate pays one branch on an `Option`
//!   per check.
//!
//! # Invariants
//!
//! - Grants of a rate-limited provider (tenant) over any window `w` ≤
//!   `burst + w / interval` for the rate in force; a change of rate keeps
//!   the TAT, so nothing granted is taken back and nothing is granted
//!   twice.
//! - Every provider with groups parked while its token is not ready, and
//!   every tenant out of the rotation only for want of a token, is listed
//!   as awaiting exactly once.

use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

use super::{FairQueue, Owner};
use crate::identity::IdMap;

#[cfg(test)]
mod tests;

/// A request rate: `requests` per `period`, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rate {
    /// Requests per period; at least one.
    pub(crate) requests: u32,
    /// The period; at least one nanosecond per request, at most a day
    /// (so the instants below never overflow).
    pub(crate) period: Duration,
    /// Grants allowed at once after a quiet spell; 1 to 10⁶.
    pub(crate) burst: u32,
}

impl Rate {
    /// Time between two grants at the steady rate.
    pub(crate) fn interval(&self) -> Duration {
        self.period / self.requests.max(1)
    }

    /// How far ahead of `now` the TAT may be while a token is ready.
    fn tolerance(&self) -> Duration {
        self.interval().saturating_mul(self.burst.saturating_sub(1))
    }

    /// True when `self` grants no faster and no more at once than `other`.
    pub(crate) fn within(&self, other: &Rate) -> bool {
        // requests / period <= other.requests / other.period, exactly.
        let mine = u128::from(self.requests) * other.period.as_nanos();
        let theirs = u128::from(other.requests) * self.period.as_nanos();
        mine <= theirs && self.burst <= other.burst
    }
}

/// Why a rate change was refused; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RateRefused {
    /// The provider has a configured rate already.
    Configured(Rate),
    /// The provider has no configured rate to change.
    Unconfigured,
    /// The rate is faster or burstier than the configured one.
    Raised(Rate),
    /// `limit` providers have a rate already.
    Full { limit: u32 },
    /// The fallback is faster or burstier than the rate it follows.
    FallbackAbove(Rate),
}

/// A rate held until an instant, and the rate it falls back to then (a
/// cluster node's share of a global rate, held under a lease).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fallback {
    /// The instant the fallback applies from.
    pub(crate) until: Instant,
    /// The rate from then on; at most the rate it follows.
    pub(crate) then: Rate,
}

/// One provider's (or tenant's) rate and its theoretical arrival time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gcra {
    /// The rate in force (until `fallback`'s instant, if any).
    pub(crate) rate: Rate,
    /// The rate configured: no change goes above it.
    pub(crate) configured: Rate,
    /// What `rate` falls back to, and when: read at every check, so no
    /// timer applies it.
    pub(crate) fallback: Option<Fallback>,
    /// When the next token would be ready if the burst were one.
    tat: Instant,
}

impl Gcra {
    /// A full bucket at `now`.
    fn new(rate: Rate, now: Instant) -> Self {
        Self {
            rate,
            configured: rate,
            fallback: None,
            tat: now,
        }
    }

    /// The rate in force at `now`: the fallback's once its instant came.
    pub(crate) fn rate_at(&self, now: Instant) -> Rate {
        match self.fallback {
            Some(fallback) if now >= fallback.until => fallback.then,
            _ => self.rate,
        }
    }

    /// True when a token is ready at `now`.
    pub(crate) fn ready(&self, now: Instant) -> bool {
        self.tat <= now + self.rate_at(now).tolerance()
    }

    /// Takes a token at `now` (the caller checked [`Self::ready`]).
    pub(crate) fn take(&mut self, now: Instant) {
        self.tat = self.tat.max(now) + self.rate_at(now).interval();
    }

    /// The instant the token after `ahead` more grants is ready, at the
    /// earliest under the rate in force now: now, or later when the tokens
    /// are spent. (A fallback still to come may make it later; the alarm
    /// that rings too early finds no token and is asked again.)
    pub(crate) fn turn(&self, now: Instant, ahead: u32) -> Instant {
        let rate = self.rate_at(now);
        let tat = self.tat.max(now) + rate.interval().saturating_mul(ahead);
        let tolerance = rate.tolerance();
        if tat <= now + tolerance {
            now
        } else {
            tat - tolerance
        }
    }

    /// Tokens ready at `now` (at most the burst).
    pub(crate) fn tokens(&self, now: Instant) -> u32 {
        let rate = self.rate_at(now);
        let room =
            (now + rate.tolerance() + rate.interval()).saturating_duration_since(self.tat.max(now));
        let tokens = room.as_nanos() / rate.interval().as_nanos().max(1);
        u32::try_from(tokens).unwrap_or(u32::MAX).min(rate.burst)
    }
}

/// The rates of providers and tenants, kept while their bookkeeping comes
/// and goes, and those awaiting a token.
#[derive(Debug)]
pub(super) struct Rates<K, P> {
    /// Each rate-limited provider's rate, and its TAT while it is idle
    /// (its entry holds the live one while it has work).
    pub(super) providers: IdMap<P, Gcra>,
    /// Each rate-limited tenant's, likewise.
    pub(super) tenants: IdMap<K, Gcra>,
    /// Providers (slot, generation) whose groups may be parked for a token.
    pub(super) awaiting: Vec<(u32, u32)>,
    /// Tenants (slot, generation) out of the rotation for want of a token.
    pub(super) awaiting_tenants: Vec<(u32, u32)>,
}

impl<K, P> Default for Rates<K, P> {
    fn default() -> Self {
        Self {
            providers: IdMap::default(),
            tenants: IdMap::default(),
            awaiting: Vec::new(),
            awaiting_tenants: Vec::new(),
        }
    }
}

/// What a provider's or tenant's rate shows at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RateReading {
    /// The rate in force.
    pub(crate) rate: Rate,
    /// The rate configured.
    pub(crate) configured: Rate,
    /// Tokens ready now.
    pub(crate) tokens: u32,
}

impl<T, K, P> FairQueue<T, K, P>
where
    K: Clone + Eq + Hash,
    P: Clone + Eq + Hash,
{
    /// Configures `owner`'s request rate, with a full burst: the rate in
    /// force and the most any later change may set. Refused when it has
    /// one already, or `most` others of its kind have one.
    pub(crate) fn configure_rate(
        &mut self,
        owner: Owner<K, P>,
        rate: Rate,
        most: usize,
    ) -> Result<(), RateRefused> {
        let gcra = Gcra::new(rate, Instant::now());
        match owner {
            Owner::Provider(provider) => {
                configure(&mut self.rates.providers, provider.clone(), gcra, most)?;
                let p = self.provider_ix.get(&provider).copied();
                if let Some(entry) = p.and_then(|p| self.providers.get_mut(p)) {
                    entry.rate = Some(gcra);
                }
            }
            Owner::Tenant(tenant) => {
                configure(&mut self.rates.tenants, tenant.clone(), gcra, most)?;
                let t = self.tenant_ix.get(&tenant).copied();
                if let Some(entry) = t.and_then(|t| self.tenants.get_mut(t)) {
                    entry.rate = Some(gcra);
                }
            }
        }
        Ok(())
    }

    /// Changes `owner`'s rate in force to `rate`, at most the one
    /// configured, falling back as `fallback` says (none: for good). Its
    /// TAT stays: a lower rate spaces the grants still to come, none
    /// already made is taken back; a higher one grants what it makes ready.
    pub(crate) fn set_rate(
        &mut self,
        owner: &Owner<K, P>,
        rate: Rate,
        fallback: Option<Fallback>,
    ) -> Result<(), RateRefused> {
        match owner {
            Owner::Provider(provider) => {
                let changed = change(self.rates.providers.get_mut(provider), rate, fallback)?;
                if let Some(p) = self.provider_ix.get(provider).copied() {
                    if let Some(gcra) = self.providers.get_mut(p).and_then(|x| x.rate.as_mut()) {
                        (gcra.rate, gcra.fallback) = changed;
                    }
                    self.unblock_provider(p);
                }
            }
            Owner::Tenant(tenant) => {
                let changed = change(self.rates.tenants.get_mut(tenant), rate, fallback)?;
                if let Some(t) = self.tenant_ix.get(tenant).copied() {
                    if let Some(gcra) = self.tenants.get_mut(t).and_then(|x| x.rate.as_mut()) {
                        (gcra.rate, gcra.fallback) = changed;
                    }
                    self.sync_tenant(t);
                }
            }
        }
        Ok(())
    }

    /// True when some provider or tenant has a rate: admission then asks
    /// [`Self::rate_turn`].
    pub(crate) fn has_rates(&self) -> bool {
        !(self.rates.providers.is_empty() && self.rates.tenants.is_empty())
    }

    /// When a request pushed now for (`tenant`, `provider`) in class
    /// `class` (by rank) could be granted at the earliest under the
    /// provider's and the tenant's rates: its own group's waiters are all
    /// granted before it (FIFO), each taking a token of both. The later of
    /// the two turns, with the rate that sets it; `None` when neither has a
    /// rate.
    pub(crate) fn rate_turn(
        &self,
        tenant: &K,
        provider: &P,
        class: u32,
    ) -> Option<(Rate, Instant)> {
        let p = self.provider_ix.get(provider).copied();
        let t = self.tenant_ix.get(tenant).copied();
        let ahead = t
            .zip(p)
            .and_then(|(t, p)| self.group_ix.get(&(t, p, class)))
            .and_then(|&g| self.groups.get(g))
            .map_or(0, |group| group.waiters.len());
        let now = Instant::now();
        let turn = |gcra: Gcra| (gcra.rate_at(now), gcra.turn(now, ahead));
        let by_provider = self.provider_gcra(p, provider).map(turn);
        let by_tenant = self.tenant_gcra(t, tenant).map(turn);
        match (by_provider, by_tenant) {
            (Some(a), Some(b)) => Some(if b.1 > a.1 { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// `provider`'s rate and TAT (its slot `p`, if it has one): its entry's
    /// while it has work, else the table's.
    fn provider_gcra(&self, p: Option<u32>, provider: &P) -> Option<Gcra> {
        match p.and_then(|p| self.providers.get(p)) {
            Some(entry) => entry.rate,
            None => self.rates.providers.get(provider).copied(),
        }
    }

    /// `tenant`'s, likewise.
    fn tenant_gcra(&self, t: Option<u32>, tenant: &K) -> Option<Gcra> {
        match t.and_then(|t| self.tenants.get(t)) {
            Some(entry) => entry.rate,
            None => self.rates.tenants.get(tenant).copied(),
        }
    }

    /// `owner`'s rate and TAT.
    fn gcra_of(&self, owner: &Owner<K, P>) -> Option<Gcra> {
        match owner {
            Owner::Provider(provider) => {
                self.provider_gcra(self.provider_ix.get(provider).copied(), provider)
            }
            Owner::Tenant(tenant) => self.tenant_gcra(self.tenant_ix.get(tenant).copied(), tenant),
        }
    }

    /// The rate of `owner` and its tokens now, if it has a rate.
    pub(crate) fn rate_reading(&self, owner: &Owner<K, P>) -> Option<RateReading> {
        let gcra = self.gcra_of(owner)?;
        let now = Instant::now();
        Some(RateReading {
            rate: gcra.rate_at(now),
            configured: gcra.configured,
            tokens: gcra.tokens(now),
        })
    }

    /// Every rate-limited provider's reading, in no particular order.
    pub(crate) fn rate_readings(&self) -> Vec<(P, RateReading)> {
        (self.rates.providers.keys())
            .filter_map(|provider| {
                let reading = self.rate_reading(&Owner::Provider(provider.clone()))?;
                Some((provider.clone(), reading))
            })
            .collect()
    }

    /// The earliest instant a provider or tenant awaiting a token gets
    /// one, for the alarm; `None` when none awaits one it lacks now.
    pub(crate) fn next_token(&self) -> Option<Instant> {
        let now = Instant::now();
        let providers = (self.rates.awaiting.iter())
            .filter(|&&(p, generation)| self.providers.generation(p) == Some(generation))
            .filter_map(|&(p, _)| self.providers.get(p)?.rate);
        let tenants = (self.rates.awaiting_tenants.iter())
            .filter(|&&(t, generation)| self.tenants.generation(t) == Some(generation))
            .filter_map(|&(t, _)| self.tenants.get(t)?.rate);
        (providers.chain(tenants))
            .filter(|gcra| !gcra.ready(now))
            .map(|gcra| gcra.turn(now, 0))
            .min()
    }

    /// Puts every awaiting tenant whose token came back in the rotation,
    /// then unblocks every awaiting provider whose token came, each in the
    /// order they began awaiting; forgets those that await no more.
    pub(crate) fn refill(&mut self) {
        let awaiting = std::mem::take(&mut self.rates.awaiting_tenants);
        let mut kept = Vec::with_capacity(awaiting.len());
        for (t, generation) in awaiting {
            if self.tenants.generation(t) != Some(generation) {
                continue;
            }
            self.sync_tenant(t);
            let now = Instant::now();
            match self.tenants.get_mut(t) {
                Some(entry) if entry.rate.is_some_and(|gcra| !gcra.ready(now)) => {
                    kept.push((t, generation));
                }
                Some(entry) => entry.awaiting = false,
                None => {}
            }
        }
        // Syncing lists no tenant anew: those lacking a token were listed.
        kept.append(&mut self.rates.awaiting_tenants);
        self.rates.awaiting_tenants = kept;
        let awaiting = std::mem::take(&mut self.rates.awaiting);
        let mut kept = Vec::with_capacity(awaiting.len());
        for (p, generation) in awaiting {
            if self.providers.generation(p) != Some(generation) {
                continue;
            }
            self.unblock_provider(p);
            match self.providers.get_mut(p) {
                Some(entry) if !entry.blocked.is_empty() => kept.push((p, generation)),
                Some(entry) => entry.awaiting = false,
                None => {}
            }
        }
        // Unblocking parks nothing, so nothing was listed meanwhile.
        kept.append(&mut self.rates.awaiting);
        self.rates.awaiting = kept;
    }

    /// Lists provider `p` as awaiting a token, once.
    pub(super) fn await_token(&mut self, p: u32) {
        let Some(generation) = self.providers.generation(p) else {
            return;
        };
        if let Some(entry) = self.providers.get_mut(p).filter(|x| !x.awaiting) {
            entry.awaiting = true;
            // Entries of providers forgotten since go first, so the list
            // stays within twice the providers with work.
            if self.rates.awaiting.len() >= 2 * self.providers.len() + 64 {
                let providers = &self.providers;
                (self.rates.awaiting)
                    .retain(|&(p, generation)| providers.generation(p) == Some(generation));
            }
            self.rates.awaiting.push((p, generation));
        }
    }

    /// Lists tenant `t` as awaiting a token, once.
    pub(super) fn await_tenant_token(&mut self, t: u32) {
        let Some(generation) = self.tenants.generation(t) else {
            return;
        };
        if let Some(entry) = self.tenants.get_mut(t).filter(|x| !x.awaiting) {
            entry.awaiting = true;
            if self.rates.awaiting_tenants.len() >= 2 * self.tenants.len() + 64 {
                let tenants = &self.tenants;
                (self.rates.awaiting_tenants)
                    .retain(|&(t, generation)| tenants.generation(t) == Some(generation));
            }
            self.rates.awaiting_tenants.push((t, generation));
        }
    }
}

/// Configures a first rate in `table`, or refuses.
fn configure<X: Eq + Hash>(
    table: &mut IdMap<X, Gcra>,
    key: X,
    gcra: Gcra,
    most: usize,
) -> Result<(), RateRefused> {
    if let Some(configured) = table.get(&key) {
        return Err(RateRefused::Configured(configured.configured));
    }
    if table.len() >= most {
        return Err(RateRefused::Full { limit: most as u32 });
    }
    table.insert(key, gcra);
    Ok(())
}

/// Changes the rate in force of a table's entry, at most its configured
/// one, and its fallback (at most that rate); answers what it set, or
/// refuses.
fn change(
    entry: Option<&mut Gcra>,
    rate: Rate,
    fallback: Option<Fallback>,
) -> Result<(Rate, Option<Fallback>), RateRefused> {
    let Some(gcra) = entry else {
        return Err(RateRefused::Unconfigured);
    };
    if !rate.within(&gcra.configured) {
        return Err(RateRefused::Raised(gcra.configured));
    }
    if let Some(fallback) = fallback.filter(|f| !f.then.within(&rate)) {
        return Err(RateRefused::FallbackAbove(fallback.then));
    }
    (gcra.rate, gcra.fallback) = (rate, fallback);
    Ok((rate, fallback))
}
