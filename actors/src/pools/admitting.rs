//! The future of one admission ([`ProviderPools::admit`]), written by hand
//! so that what a pending waiter's task carries is exactly what its grant
//! will need: every pending waiter holds one, so its size is memory per
//! waiter (BENCHMARKS.md, "Memory").
//!
//! At its first poll it charges, leases and applies the admit (see
//! [`ProviderPools::enqueue`]); granted or refused there, it completes
//! without suspending. Queued, it keeps only the [`Parked`] state — the
//! plan and input for the grant, the lease, the charges, the deadline, the
//! admission's watch and the waiter's place in line — and completes when
//! the queue answers through the waiter's entry.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::time::Instant;

use crate::admission::{AdmitError, AdmitRequest, PoolReady, StagedInput};
use crate::budget::Charge;
use crate::epoch::{ClientLease, TypedSlot};
use crate::identity::OriginKind;
use crate::observe::AdmitWatch;
use crate::plan::ExecutionPlan;
use crate::pools::admission::{ended_error, Queued};
use crate::pools::ProviderPools;
use crate::scheduler::{Admission, RunningGrant, Waiting};
use crate::tenants::SharedCharge;

/// The future [`ProviderPools::admit`] awaits.
pub(crate) struct Admitting<'a> {
    pools: &'a ProviderPools,
    step: Step<'a>,
}

enum Step<'a> {
    /// Not polled yet: nothing charged, nothing queued.
    Start(AdmitRequest),
    /// In line.
    Parked(Parked<'a>),
    /// Completed.
    Done,
}

/// A queued admission: what its grant will carry, and its place in line.
struct Parked<'a> {
    /// First, so that a dropped future leaves the line before its lease
    /// and charges go.
    waiting: Waiting,
    plan: ExecutionPlan,
    input: StagedInput,
    slot: TypedSlot,
    kind: OriginKind,
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

    /// The first poll: charge, lease and apply the admit.
    fn start(&mut self, request: AdmitRequest) -> Started<'a> {
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
            let _entered = watch.span().enter();
            // The provider id moves into the queue; the plan and input stay
            // for the grant.
            pools.enqueue(&plan, provider, &slot, kind, now, watch.span())
        };
        let Queued {
            admission,
            lease,
            charge,
            deadline,
            admitting,
        } = match enqueued {
            Ok(queued) => queued,
            Err(err) => return Started::Done(finish(watch, Err(err))),
        };
        let grant = match admission {
            Admission::Waiting(waiting) => {
                return Started::Parked(Parked {
                    waiting,
                    plan,
                    input,
                    slot,
                    kind,
                    lease,
                    charge,
                    deadline,
                    admitting,
                    watch,
                })
            }
            Admission::Granted(grant) => Ok(grant),
            Admission::Ended(ended) => Err(ended_error(ended)),
        };
        drop(admitting);
        let ready = grant.map(|grant| {
            pools.ready(Granted {
                grant,
                plan,
                input,
                slot: &slot,
                kind,
                lease,
                charge,
                deadline,
                span: watch.span(),
            })
        });
        Started::Done(finish(watch, ready))
    }
}

/// How the first poll ended.
enum Started<'a> {
    /// In line.
    Parked(Parked<'a>),
    /// Answered at once.
    Done(Result<PoolReady, AdmitError>),
}

impl Future for Admitting<'_> {
    type Output = Result<PoolReady, AdmitError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut parked = match std::mem::replace(&mut this.step, Step::Done) {
            Step::Start(request) => match this.start(request) {
                Started::Parked(parked) => parked,
                Started::Done(done) => return Poll::Ready(done),
            },
            Step::Parked(parked) => parked,
            // Polled after completion: nothing is held any more.
            Step::Done => return Poll::Ready(Err(AdmitError::Closed)),
        };
        let answer = match Pin::new(&mut parked.waiting).poll(cx) {
            Poll::Pending => {
                this.step = Step::Parked(parked);
                return Poll::Pending;
            }
            Poll::Ready(answer) => answer,
        };
        let Parked {
            waiting,
            plan,
            input,
            slot,
            kind,
            lease,
            charge,
            deadline,
            admitting,
            watch,
        } = parked;
        drop((admitting, waiting));
        let ready = answer.map_err(ended_error).map(|grant| {
            this.pools.ready(Granted {
                grant,
                plan,
                input,
                slot: &slot,
                kind,
                lease,
                charge,
                deadline,
                span: watch.span(),
            })
        });
        Poll::Ready(finish(watch, ready))
    }
}

/// What a grant is assembled from.
pub(crate) struct Granted<'s> {
    pub(crate) grant: RunningGrant,
    pub(crate) plan: ExecutionPlan,
    pub(crate) input: StagedInput,
    pub(crate) slot: &'s TypedSlot,
    pub(crate) kind: OriginKind,
    pub(crate) lease: ClientLease,
    pub(crate) charge: SharedCharge,
    pub(crate) deadline: Instant,
    pub(crate) span: &'s tracing::Span,
}

impl ProviderPools {
    /// The granted request: its lease re-taken on the provider's current
    /// epoch if a rotation retired its own meanwhile.
    fn ready(&self, granted: Granted<'_>) -> PoolReady {
        let Granted {
            grant,
            plan,
            input,
            slot,
            kind,
            lease,
            charge,
            deadline,
            span,
        } = granted;
        PoolReady {
            grant,
            lease: self.current_lease(lease, slot, kind, span),
            plan,
            input,
            charge,
            deadline,
            generation: self.inner.generation.id(),
            granted: self.inner.ledger.next_sequence(),
            ledger: Arc::clone(&self.inner.ledger),
        }
    }
}

/// Records the outcome on the admission's watch and hands it on.
fn finish<T>(watch: AdmitWatch<'_>, result: Result<T, AdmitError>) -> Result<T, AdmitError> {
    watch.finish(&result);
    result
}
