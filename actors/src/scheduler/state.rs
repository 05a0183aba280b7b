//! What the queue owner owns: the fair queue, the waiters by deadline, and
//! whether admission closed; and the named operations on them.
//!
//! Every operation here runs with the state locked by whoever owns the
//! queue at the moment (see [`super::core`]); none blocks or wakes anything
//! but the waiter it answers.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;

use crate::accounts::Accounts;
use crate::fairness::Fairness;
use crate::identity::{ProviderId, TenantId};
use crate::limits::LimitField;
use crate::priority::{MinShares, Priority};
use crate::scheduler::cell::Cell;
use crate::scheduler::deadlines::Deadlines;
use crate::scheduler::queue::{
    Bound, Ceilings, Expiry, FairQueue, Fallback, QueueUsage, Rate, RateReading, RateRefused,
    RunningKey, TenantBacklog,
};
use crate::scheduler::{
    CeilingInUse, Ended, OwnCeiling, OwnCeilingRefused, RateBound, RateOwner, OWN_CEILINGS,
};

/// An operation left for the queue owner by a caller that found the queue
/// owned.
#[derive(Debug)]
pub(crate) enum Op {
    /// Queue a waiter whose entry is `cell`.
    Enqueue {
        cell: Arc<Cell>,
        tenant: TenantId,
        provider: ProviderId,
        class: Priority,
        deadline: Instant,
    },
    /// The waiter of `cell` left while queued.
    Cancel(Arc<Cell>),
    /// A running grant ended.
    Release(RunningKey),
}

/// How an admit applied by its own caller ended.
#[derive(Debug)]
pub(crate) enum Admitted {
    /// Granted at once.
    Granted(RunningKey),
    /// Queued; the answer comes through `cell`.
    Queued(Arc<Cell>),
    /// Refused at once, or admission is closed.
    Ended(Ended),
}

/// The queue and its bookkeeping. A queue item is a waiter's entry, or
/// `None` for the one admit being applied by its own caller right now (never
/// left in the queue past that call).
pub(crate) struct State {
    queue: FairQueue<Option<Arc<Cell>>, TenantId, ProviderId>,
    deadlines: Deadlines,
    accounts: Arc<Accounts>,
    closed: bool,
    /// The instant the scheduler's alarm was last asked for.
    alarm: Option<Instant>,
}

impl State {
    pub(crate) fn new(ceilings: Ceilings, accounts: Arc<Accounts>) -> Self {
        Self {
            queue: FairQueue::new(ceilings),
            deadlines: Deadlines::default(),
            accounts,
            closed: false,
            alarm: None,
        }
    }

    /// Applies an admit for its own caller: granted at once when its turn
    /// is now (without a waiter when nobody is queued), else queued with a
    /// fresh entry.
    pub(crate) fn admit(
        &mut self,
        tenant: &TenantId,
        provider: ProviderId,
        class: Priority,
        deadline: Instant,
    ) -> Admitted {
        if self.closed {
            return Admitted::Ended(Ended::Closed);
        }
        let class = class.rank() as u32;
        if let Some(late) = self.rate_late(tenant, &provider, class, deadline) {
            return Admitted::Ended(Ended::RateLimited(late));
        }
        // Nobody in line and its turn now: granted without a waiter.
        if let Some(running) = self.queue.grant_at_once(tenant, &provider, class) {
            return Admitted::Granted(running);
        }
        let key = match self.queue.push_in(tenant.clone(), provider, class, None) {
            Ok(key) => key,
            Err((refused, _)) => return Admitted::Ended(Ended::Refused(refused)),
        };
        if let Some(running) = self.grant_ready() {
            return Admitted::Granted(running);
        }
        let cell = Arc::new(Cell::new());
        cell.queued_at(key);
        if let Some(item) = self.queue.item_mut(key) {
            *item = Some(Arc::clone(&cell));
        }
        self.deadlines
            .push(Arc::clone(&cell), deadline, self.queue.pending());
        Admitted::Queued(cell)
    }

    /// Applies an operation a caller left.
    pub(crate) fn apply(&mut self, op: Op) {
        match op {
            Op::Enqueue {
                cell,
                tenant,
                provider,
                class,
                deadline,
            } => self.enqueue(cell, tenant, provider, class, deadline),
            Op::Cancel(cell) => self.cancel(&cell),
            Op::Release(running) => self.queue.release_running(running),
        }
    }

    /// Queues a waiter whose caller left it for the owner; answers at once
    /// when refused or closed, and not at all when it left meanwhile.
    fn enqueue(
        &mut self,
        cell: Arc<Cell>,
        tenant: TenantId,
        provider: ProviderId,
        class: Priority,
        deadline: Instant,
    ) {
        if !cell.is_waiting() {
            return;
        }
        if self.closed {
            let _ = cell.answer(Err(Ended::Closed));
            return;
        }
        let class = class.rank() as u32;
        if let Some(late) = self.rate_late(&tenant, &provider, class, deadline) {
            let _ = cell.answer(Err(Ended::RateLimited(late)));
            return;
        }
        match (self.queue).push_in(tenant, provider, class, Some(Arc::clone(&cell))) {
            Ok(key) => {
                cell.queued_at(key);
                self.deadlines.push(cell, deadline, self.queue.pending());
            }
            Err((refused, _)) => {
                let _ = cell.answer(Err(Ended::Refused(refused)));
            }
        }
    }

    /// The refusal of a request for (`tenant`, `provider`) in class `class`
    /// (by rank) whose turn under
    /// the provider's or tenant's rate comes after `deadline`; `None` when
    /// it can come in time, or neither has a rate (one branch when nobody
    /// has).
    fn rate_late(
        &self,
        tenant: &TenantId,
        provider: &ProviderId,
        class: u32,
        deadline: Instant,
    ) -> Option<RateBound> {
        if !self.queue.has_rates() {
            return None;
        }
        let (rate, turn) = self.queue.rate_turn(tenant, provider, class)?;
        (turn > deadline).then(|| RateBound {
            rate,
            wait: turn.saturating_duration_since(Instant::now()),
        })
    }

    /// Removes a waiter that left, refunding its queue slot.
    fn cancel(&mut self, cell: &Cell) {
        if let Some(key) = cell.take_key() {
            self.queue.cancel(key);
        }
    }

    /// Grants every waiter whose turn it is while capacity allows, each
    /// woken through its entry. Returns the running key of the admit being
    /// applied by its own caller, if it was granted.
    pub(crate) fn grant_ready(&mut self) -> Option<RunningKey> {
        let mut own = None;
        while let Some(grant) = self.queue.next_grant() {
            match grant.item {
                None => own = Some(grant.running),
                Some(cell) => {
                    if !cell.answer(Ok(grant.running)) {
                        // The waiter left between its deadline and its turn.
                        self.queue.release_running(grant.running);
                    }
                }
            }
        }
        own
    }

    /// Grants what the tokens that came make ready, then times out every
    /// waiter whose deadline is at or before `now`.
    /// A token that comes at a waiter's deadline is granted before the
    /// deadline times it out.
    pub(crate) fn expire(&mut self, now: Instant) {
        if self.queue.has_rates() {
            self.queue.refill();
            let own = self.grant_ready();
            debug_assert!(own.is_none(), "a caller's own admit left in the queue");
        }
        while let Some(cell) = self.deadlines.pop_due(now) {
            if cell.answer(Err(Ended::TimedOut)) {
                self.cancel(&cell);
            }
        }
    }

    /// The earliest deadline still waiting or token awaited, if the alarm
    /// must be asked for it: earlier than the alarm last asked for (or
    /// none was).
    pub(crate) fn alarm_due(&mut self) -> Option<Instant> {
        let deadline = self.deadlines.earliest();
        let token = if self.queue.has_rates() {
            self.queue.next_token()
        } else {
            None
        };
        let earliest = match (deadline, token) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        if self.alarm.is_some_and(|alarm| alarm <= earliest) {
            return None;
        }
        self.alarm = Some(earliest);
        Some(earliest)
    }

    /// The alarm rang or was cancelled: the next one is asked afresh.
    pub(crate) fn alarm_rang(&mut self) {
        self.alarm = None;
    }

    /// Applies new ceilings; totals and per-group ceilings never go below
    /// actual use.
    pub(crate) fn set_ceilings(&mut self, new: Ceilings) -> Result<(), CeilingInUse> {
        let totals = [
            (
                LimitField::PendingRequests,
                self.queue.pending(),
                new.pending_total,
            ),
            (
                LimitField::RunningRequests,
                self.queue.running(),
                new.running_total,
            ),
        ];
        for (field, used, requested) in totals {
            if used > requested {
                return Err(CeilingInUse {
                    field,
                    used,
                    requested,
                });
            }
        }
        self.queue.set_ceilings(new).map_err(|e| CeilingInUse {
            field: bound_field(e.bound),
            used: e.used,
            requested: e.requested,
        })
    }

    /// Gives a tenant or provider its own running ceiling (`None`: the
    /// node-wide one again), refusing one below its running count, or a new
    /// one past [`OWN_CEILINGS`] of its kind.
    pub(crate) fn set_own_ceiling(
        &mut self,
        owner: OwnCeiling,
        ceiling: Option<u32>,
        expiry: Option<Expiry>,
        drain: bool,
    ) -> Result<(), OwnCeilingRefused> {
        if ceiling.is_some() && !self.queue.has_room(&owner, OWN_CEILINGS) {
            return Err(OwnCeilingRefused::Full {
                limit: OWN_CEILINGS as u32,
            });
        }
        let expiring = match (&owner, ceiling, expiry) {
            (OwnCeiling::Provider(provider), Some(_), Some(mut expiry)) => {
                // Set before the current run fell back, it continues it.
                if let Some(since) = self.queue.run_since(provider) {
                    expiry.since = since;
                }
                Some((provider.clone(), expiry))
            }
            _ => None,
        };
        self.queue
            .set_own_ceiling(owner, ceiling, drain)
            .map_err(|e| {
                OwnCeilingRefused::InUse(CeilingInUse {
                    field: bound_field(e.bound),
                    used: e.used,
                    requested: e.requested,
                })
            })?;
        if let Some((provider, expiry)) = expiring {
            self.queue.expire_own_ceiling(provider, expiry);
        }
        Ok(())
    }

    /// Chooses the fairness policy (see [`FairQueue::set_fairness`]).
    pub(crate) fn set_fairness(&mut self, fairness: Fairness) {
        self.queue.set_fairness(fairness);
    }

    /// Sets each class's minimum share (see [`FairQueue::set_min_shares`]).
    pub(crate) fn set_min_shares(&mut self, shares: MinShares) {
        self.queue.set_min_shares(shares);
    }

    /// Gives `tenant` its weight, 1..=`MAX_WEIGHT` (see
    /// [`FairQueue::set_weight`]); false, changing nothing, when it would
    /// be one past [`OWN_CEILINGS`] tenants with a weight other than 1.
    pub(crate) fn set_weight(&mut self, tenant: TenantId, weight: u32) -> bool {
        let room = self.queue.weighted() < OWN_CEILINGS || self.queue.weight_of(&tenant) != 1;
        if weight != 1 && !room {
            return false;
        }
        self.queue.set_weight(tenant, weight);
        true
    }

    /// `tenant`'s weight: 1 unless set otherwise.
    pub(crate) fn weight_of(&self, tenant: &TenantId) -> u32 {
        self.queue.weight_of(tenant)
    }

    /// Configures a provider's or tenant's request rate (see
    /// [`FairQueue::configure_rate`]), at most [`OWN_CEILINGS`] of each kind.
    pub(crate) fn configure_rate(
        &mut self,
        owner: RateOwner,
        rate: Rate,
    ) -> Result<(), RateRefused> {
        self.queue.configure_rate(owner, rate, OWN_CEILINGS)
    }

    /// Changes a rate in force (see [`FairQueue::set_rate`]).
    pub(crate) fn set_rate(
        &mut self,
        owner: &RateOwner,
        rate: Rate,
        fallback: Option<Fallback>,
    ) -> Result<(), RateRefused> {
        self.queue.set_rate(owner, rate, fallback)
    }

    /// `owner`'s rate and tokens now, if it has a rate.
    pub(crate) fn rate_reading(&self, owner: &RateOwner) -> Option<RateReading> {
        self.queue.rate_reading(owner)
    }

    /// Every rate-limited provider's rate and tokens now.
    pub(crate) fn rate_readings(&self) -> Vec<(ProviderId, RateReading)> {
        self.queue.rate_readings()
    }

    /// Closes admission: every queued waiter hears `Closed`, and every
    /// later admit too. Running grants still come back.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        let cells: Vec<_> = self.deadlines.drain().collect();
        for cell in cells {
            if cell.answer(Err(Ended::Closed)) {
                self.cancel(&cell);
            }
        }
    }

    /// Every tenant's queued and running requests on `provider`.
    pub(crate) fn demand(&self, provider: &ProviderId) -> Vec<TenantBacklog<TenantId>> {
        self.queue.demand(provider)
    }

    /// True when `running`'s grant must not start (see
    /// [`FairQueue::share_lapsed`]).
    pub(crate) fn share_lapsed(&self, running: &RunningKey) -> bool {
        self.queue.share_lapsed(running)
    }

    /// Every tenant's and provider's queued and running requests.
    pub(crate) fn usage(&self) -> QueueUsage<TenantId, ProviderId> {
        self.queue.usage()
    }

    /// (pending, running).
    pub(crate) fn counts(&self) -> (u32, u32) {
        (self.queue.pending(), self.queue.running())
    }

    /// Publishes the counts to the accounts' gauges.
    pub(crate) fn report(&self) {
        let gauges = &self.accounts.gauges;
        gauges
            .pending_requests
            .store(self.queue.pending(), Ordering::Release);
        gauges
            .running_requests
            .store(self.queue.running(), Ordering::Release);
    }

    /// The instant the alarm was last asked for, if any.
    #[cfg(all(test, loom))]
    pub(crate) fn asked_alarm(&self) -> Option<Instant> {
        self.alarm
    }

    /// The earliest awaited token not ready yet.
    #[cfg(all(test, loom))]
    pub(crate) fn next_token(&self) -> Option<Instant> {
        self.queue.next_token()
    }

    #[cfg(test)]
    pub(crate) fn deadline_entries(&self) -> usize {
        self.deadlines.len()
    }
}

/// The limit field a queue bound enforces.
pub(crate) fn bound_field(bound: Bound) -> LimitField {
    match bound {
        Bound::PendingTotal => LimitField::PendingRequests,
        Bound::PendingPerTenant => LimitField::RequestsPerTenant,
        Bound::PendingPerProvider => LimitField::RequestsPerProvider,
        Bound::RunningPerTenant => LimitField::RunningPerTenant,
        Bound::RunningPerProvider => LimitField::RunningPerProvider,
    }
}
