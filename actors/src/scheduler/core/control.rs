//! The admission core's face to the scheduler actor: its wake-ups, the
//! hand-over it takes, the deadline alarm, and the control operations
//! (ceilings, close, stop, counts, demand, usage), which lock the state directly.

use tokio::time::Instant;

use super::{Core, HANDED, PASSES, STOPPED};
use crate::fairness::Fairness;
use crate::identity::{ProviderId, TenantId};
use crate::priority::MinShares;
use crate::scheduler::queue::{Ceilings, Expiry, QueueUsage, RunningKey, TenantBacklog};
use crate::scheduler::{CeilingInUse, OwnCeiling, OwnCeilingRefused};
use crate::scheduler::{Fallback, Rate, RateOwner, RateReading, RateRefused};
use crate::sync::Ordering;

impl Core {
    /// The alarm rang: wakes the actor to time out the waiters due.
    pub(crate) fn ring(&self) {
        self.nudge();
    }

    /// True when no caller owns the queue and nothing waits for an owner.
    pub(crate) fn is_unowned(&self) -> bool {
        self.word.load(Ordering::Acquire) == 0
    }

    /// Actor: a wake-up arrived; later nudges send another.
    pub(crate) fn woken(&self) {
        self.nudged.store(0, Ordering::Release);
    }

    /// Actor: if ownership was handed over, applies the counted operations
    /// in bounded passes (handing over to itself again past them).
    pub(crate) fn run_handed(&self) {
        let previous = self.handoff.fetch_and(!HANDED, Ordering::AcqRel);
        if previous & HANDED != 0 {
            self.give_up(Some(PASSES));
        }
    }

    /// Actor: times out every waiter whose deadline has passed; returns
    /// the earliest deadline still waiting, for the alarm.
    pub(crate) fn expire(&self, now: Instant) -> Option<Instant> {
        let mut state = self.lock();
        state.expire(now);
        state.alarm_rang();
        let next = state.alarm_due();
        state.report();
        next
    }

    /// Applies new ceilings, refusing any below actual use.
    pub(crate) fn set_ceilings(&self, ceilings: Ceilings) -> Result<(), CeilingInUse> {
        let mut state = self.lock();
        let set = state.set_ceilings(ceilings);
        let own = state.grant_ready();
        debug_assert!(own.is_none());
        state.report();
        set
    }

    /// Gives a tenant or provider its own running ceiling, or takes it
    /// away; a raise grants what it makes ready. A provider's may carry an
    /// expiry; with `drain`, a ceiling below use is accepted.
    pub(crate) fn set_own_ceiling(
        &self,
        owner: OwnCeiling,
        ceiling: Option<u32>,
        expiry: Option<Expiry>,
        drain: bool,
    ) -> Result<(), OwnCeilingRefused> {
        let mut state = self.lock();
        let set = state.set_own_ceiling(owner, ceiling, expiry, drain);
        let own = state.grant_ready();
        debug_assert!(own.is_none());
        state.report();
        set
    }

    /// Chooses the fairness policy; the next grant follows it.
    pub(crate) fn set_fairness(&self, fairness: Fairness) {
        self.lock().set_fairness(fairness);
    }

    /// Sets each priority class's minimum share (see
    /// [`crate::MinShares`]).
    pub(crate) fn set_min_shares(&self, shares: MinShares) {
        self.lock().set_min_shares(shares);
    }

    /// Gives `tenant` its weight, from its next grant on (eligibility is
    /// unchanged, so nothing becomes ready); false when the table of
    /// weights is full.
    pub(crate) fn set_weight(&self, tenant: TenantId, weight: u32) -> bool {
        self.lock().set_weight(tenant, weight)
    }

    /// `tenant`'s weight: 1 unless set otherwise.
    pub(crate) fn weight_of(&self, tenant: &TenantId) -> u32 {
        self.lock().weight_of(tenant)
    }

    /// Configures a provider's or tenant's request rate: in force at once,
    /// and the most any later change may set.
    pub(crate) fn configure_rate(&self, owner: RateOwner, rate: Rate) -> Result<(), RateRefused> {
        let mut state = self.lock();
        let set = state.configure_rate(owner, rate);
        self.finish_pass(&mut state);
        set
    }

    /// Changes a rate in force, at most its configured one, with its
    /// fallback if any; what a raise makes ready is granted, and the alarm
    /// is asked for the next token.
    pub(crate) fn set_rate(
        &self,
        owner: &RateOwner,
        rate: Rate,
        fallback: Option<Fallback>,
    ) -> Result<(), RateRefused> {
        let mut state = self.lock();
        let set = state.set_rate(owner, rate, fallback);
        self.finish_pass(&mut state);
        set
    }

    /// `owner`'s rate and its tokens now, if it has a rate.
    pub(crate) fn rate_reading(&self, owner: &RateOwner) -> Option<RateReading> {
        self.lock().rate_reading(owner)
    }

    /// Every rate-limited provider's rate and tokens now.
    pub(crate) fn rate_readings(&self) -> Vec<(ProviderId, RateReading)> {
        self.lock().rate_readings()
    }

    /// Closes admission: every queued waiter and every later admit hears
    /// `Closed`; running grants still return their capacity.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.close();
        state.report();
    }

    /// Actor: it is going away. Closes admission, and applies whatever was
    /// handed to it, since nothing will hand it on.
    pub(crate) fn stop(&self) {
        self.close();
        let previous = self.handoff.fetch_or(STOPPED, Ordering::AcqRel);
        if previous & HANDED != 0 && self.handoff.fetch_and(!HANDED, Ordering::AcqRel) & HANDED != 0
        {
            self.give_up(None);
        }
    }

    /// Every tenant's queued and running requests on `provider`.
    pub(crate) fn demand(&self, provider: &ProviderId) -> Vec<TenantBacklog<TenantId>> {
        self.lock().demand(provider)
    }

    /// True when `running`'s grant must not start: the expiring share it
    /// was granted under has fallen back below what its provider runs.
    /// Releases still left for the owner count as running, which errs
    /// towards refusing.
    pub(crate) fn share_lapsed(&self, running: &RunningKey) -> bool {
        self.lock().share_lapsed(running)
    }

    /// Every tenant's and provider's queued and running requests.
    pub(crate) fn usage(&self) -> QueueUsage<TenantId, ProviderId> {
        self.lock().usage()
    }

    /// (pending, running).
    pub(crate) fn counts(&self) -> (u32, u32) {
        self.lock().counts()
    }
}
