//! The future of one admission ([`ProviderPools::admit`]), written by hand
//! so that what a pending waiter's task carries is exactly what its grant
//! will need: every pending waiter holds one, so its size is memory per
//! waiter (BENCHMARKS.md, "Where the time goes").
//!
//! At its first poll it charges, leases and applies the admit (see
//! [`ProviderPools::enqueue`]); granted or refused there, it completes
//! without suspending. Queued, it keeps only its place in line and what
//! it [`Carried`] — the plan and input for the grant, the lease, the
//! charges, the deadline and the admission's watch — and completes when
//! the queue answers through the waiter's entry.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::Instant;

use crate::admission::{AdmitError, AdmitRequest, PoolReady, StagedInput, REQUEST_OVERHEAD};
use crate::budget::Charge;
use crate::epoch::{ClientLease, TypedSlot};
use crate::identity::{OriginKind, ProviderId};
use crate::observe::AdmitWatch;
use crate::plan::ExecutionPlan;
use crate::provider_pools::ProviderPools;
use crate::scheduler::{self, AdmitReply, Ended, RunningGrant, Waiting};
use crate::tenants::{SharedCharge, TenantShares};

/// The future [`ProviderPools::admit`] awaits.
pub(crate) struct Admitting<'a> {
    pools: &'a ProviderPools,
    step: Step<'a>,
}

enum Step<'a> {
    /// Not polled yet: nothing charged, nothing queued.
    Start(AdmitRequest),
    /// In line. The waiter comes first, so that a dropped future leaves the
    /// line before its lease and charges go.
    Parked(Waiting, Carried<'a>),
    /// Completed.
    Done,
}

/// What an admitted request carries into its grant, from its first poll to
/// its answer.
struct Carried<'a> {
    plan: ExecutionPlan,
    input: StagedInput,
    lease: ClientLease,
    charge: SharedCharge,
    deadline: Instant,
    /// One of the tenant's `requests_per_tenant` admissions, until answered.
    admitting: Charge,
    watch: AdmitWatch<'a>,
}

impl<'a> Admitting<'a> {
    pub(crate) fn new(pools: &'a ProviderPools, request: AdmitRequest) -> Self {
        Self {
            pools,
            step: Step::Start(request),
        }
    }

    /// The first poll: charge, lease and apply the admit; in line, the
    /// waiter and what it carries, else the answer.
    fn start(&self, request: AdmitRequest) -> Started<'a> {
        let pools = self.pools;
        let AdmitRequest {
            plan,
            provider,
            slot,
            kind,
            input,
        } = request;
        // One clock read for the watch's start and the deadline.
        let now = Instant::now();
        let watch = AdmitWatch::start(
            now,
            pools.inner.observer.get(),
            plan.tenant(),
            &provider,
            slot.slot(),
        );
        let enqueued = {
            let _entered = watch.enter();
            // The provider id moves into the queue; the plan and input stay
            // for the grant.
            pools.enqueue(&plan, &input, provider, &slot, kind, now)
        };
        let queued = match enqueued {
            Ok(queued) => {
                watch.record_epoch(queued.lease.epoch().get());
                queued
            }
            Err(err) => return Started::Answered(finish(watch, Err(err))),
        };
        let Queued {
            admission,
            lease,
            charge,
            deadline,
            admitting,
        } = queued;
        let carried = Carried {
            plan,
            input,
            lease,
            charge,
            deadline,
            admitting,
            watch,
        };
        let answer = match admission {
            AdmitReply::Waiting(waiting) => return Started::InLine(waiting, carried),
            AdmitReply::Granted(grant) => Ok(grant),
            AdmitReply::Ended(ended) => Err(ended),
        };
        Started::Answered(carried.complete(pools, answer))
    }
}

/// An admission's result.
type AdmitResult = Result<PoolReady, AdmitError>;

/// How the first poll ended.
enum Started<'a> {
    /// In line: the waiter and what it carries.
    InLine(Waiting, Carried<'a>),
    /// Answered at once.
    Answered(AdmitResult),
}

impl Future for Admitting<'_> {
    type Output = AdmitResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let (mut waiting, carried) = match std::mem::replace(&mut this.step, Step::Done) {
            Step::Start(request) => match this.start(request) {
                Started::InLine(waiting, carried) => (waiting, carried),
                Started::Answered(answer) => return Poll::Ready(answer),
            },
            Step::Parked(waiting, carried) => (waiting, carried),
            // Polled after completion: nothing is held any more.
            Step::Done => return Poll::Ready(Err(AdmitError::Closed)),
        };
        match Pin::new(&mut waiting).poll(cx) {
            Poll::Pending => {
                this.step = Step::Parked(waiting, carried);
                Poll::Pending
            }
            Poll::Ready(answer) => Poll::Ready(carried.complete(this.pools, answer)),
        }
    }
}

impl Carried<'_> {
    /// The request's grant (its lease re-taken on the provider's current
    /// epoch if a rotation retired its own meanwhile), or the error the
    /// queue's answer means; recorded on the admission's watch.
    fn complete(self, pools: &ProviderPools, answer: Result<RunningGrant, Ended>) -> AdmitResult {
        drop(self.admitting);
        let ready = answer.map_err(ended_error).map(|grant| PoolReady {
            grant,
            lease: pools.current_lease(self.lease, &self.watch),
            plan: self.plan,
            input: self.input,
            charge: self.charge,
            deadline: self.deadline,
            generation: pools.inner.generation.id(),
            granted: pools.inner.accounts.next_sequence(),
        });
        finish(self.watch, ready)
    }
}

/// Records the outcome on the admission's watch and hands it on.
fn finish<T>(watch: AdmitWatch<'_>, result: Result<T, AdmitError>) -> Result<T, AdmitError> {
    watch.finish(&result);
    result
}

impl ProviderPools {
    /// Charges the request (to the metadata share its `input` holds when
    /// staged for the same tenant), leases its client and queues it, its
    /// deadline counted from `now`; from the returned [`Queued`] on,
    /// dropping it cancels the waiter.
    pub(super) fn enqueue(
        &self,
        plan: &ExecutionPlan,
        input: &StagedInput,
        provider: ProviderId,
        slot: &TypedSlot,
        kind: OriginKind,
        now: Instant,
    ) -> Result<Queued, AdmitError> {
        if !self.is_open() {
            return Err(AdmitError::Closed);
        }
        let accounts = &self.inner.accounts;
        let deadline = (now + accounts.queue_age()).min(plan.earliest_deadline());
        if now >= deadline {
            return Err(AdmitError::Timeout);
        }
        // The tenant's own admissions first: a tenant at its share is
        // refused here, before it takes room in the admission queue (or
        // among the operations left for its owner) other tenants need.
        let admitting = accounts.tenants.admit(plan.tenant())?;
        // The input staged for this tenant holds its metadata share already.
        let charge = match input.metadata_share(plan.tenant(), &accounts.metadata) {
            Some(own) => {
                TenantShares::charge_metadata_on(own, &accounts.metadata, REQUEST_OVERHEAD)?
            }
            None => accounts.tenants.charge_metadata(
                plan.tenant(),
                &accounts.metadata,
                REQUEST_OVERHEAD,
            )?,
        };
        let lease = self.client(&provider, slot, kind)?;

        let admission =
            (self.inner.queue).admit(plan.tenant(), provider, plan.priority(), deadline);
        Ok(Queued {
            admission,
            lease,
            charge,
            deadline,
            admitting,
        })
    }
}

/// An admit applied to the queue: its first answer (a grant, a place in
/// line, or a refusal), and what the grant will carry.
pub(super) struct Queued {
    pub(super) admission: AdmitReply,
    pub(super) lease: ClientLease,
    pub(super) charge: SharedCharge,
    pub(super) deadline: Instant,
    /// One of the tenant's `requests_per_tenant` admissions, until the
    /// waiter is answered or dropped.
    pub(super) admitting: Charge,
}

/// The error an admit that ended without a grant answers.
pub(super) fn ended_error(ended: Ended) -> AdmitError {
    match ended {
        Ended::Refused(refused) => {
            let field = scheduler::bound_field(refused.bound);
            AdmitError::capacity(field, refused.used, refused.limit)
        }
        Ended::RateLimited(late) => AdmitError::RateLimited {
            requests: late.rate.requests,
            period: late.rate.period,
            wait: late.wait,
        },
        Ended::Closed => AdmitError::Closed,
        Ended::TimedOut => AdmitError::Timeout,
        Ended::Busy => AdmitError::Busy,
    }
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use super::Admitting;
    use crate::admission::AdmitRequest;

    /// tokio places a task in 128-byte steps, with 104 bytes of its own
    /// beside the future: a caller's `async` block that keeps its
    /// `AdmitRequest` beside `admit`'s future (and a reference to the
    /// pools) stays in a 384-byte task while the two take at most 256.
    #[test]
    fn a_waiter_s_future_fits_a_384_byte_task() {
        let (request, admitting) = (size_of::<AdmitRequest>(), size_of::<Admitting<'_>>());
        assert!(request + admitting <= 256, "{request} + {admitting} bytes");
    }
}
