//! The admission path: staging input, queueing, granting, dispatching.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::Instrument;

use crate::admission::{AdmitError, AdmitRequest, PoolReady, StagedInput, REQUEST_OVERHEAD};
use crate::dispatch::{DispatchAuthority, ProviderCall};
use crate::identity::ProviderId;
use crate::mailbox::MailboxError;
use crate::observe::{spans, AdmitWatch};
use crate::plan::ExecutionPlan;
use crate::pools::ProviderPools;
use crate::scheduler::{self, Answer, QueueTicket};

impl ProviderPools {
    /// Charges `bytes` to the metadata budget as a request's input.
    ///
    /// The charge stays with the returned buffer and every clone of it:
    /// cancelling a request that carried it refunds nothing still held.
    ///
    /// # Errors
    ///
    /// [`AdmitError::Capacity`] when the metadata budget has no room.
    pub fn stage_input(&self, bytes: Bytes) -> Result<StagedInput, AdmitError> {
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        let charge = self.inner.ledger.metadata.try_reserve(len)?;
        Ok(StagedInput::new(bytes, charge))
    }

    /// Queues a request for capacity on its provider and waits for its turn.
    ///
    /// Before anything is queued the request's metadata is charged and its
    /// client leased; the scheduler refuses at once when the pending bound
    /// (total, the tenant's, or the provider's) is reached. The wait ends at
    /// the request's deadline: the queue age in force now, narrowed by the
    /// plan's Store and I/O deadlines. The granted [`PoolReady`] keeps that
    /// deadline.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future removes the waiter and refunds its queue slot and
    /// request charge; a grant that raced the drop is returned at once. The
    /// staged input's charge stays with whoever still holds the input.
    ///
    /// # Errors
    ///
    /// [`AdmitError::Capacity`] (naming the bound), [`AdmitError::Busy`],
    /// [`AdmitError::Timeout`], [`AdmitError::Closed`],
    /// [`AdmitError::Unavailable`] and [`AdmitError::Slot`].
    pub async fn admit(&self, request: AdmitRequest) -> Result<PoolReady, AdmitError> {
        let watch = AdmitWatch::start(
            self.inner.observer.get(),
            request.plan.tenant(),
            &request.provider,
            request.slot.slot(),
        );
        let result = self
            .queue_for_turn(request, watch.span())
            .instrument(watch.span().clone())
            .await;
        watch.finish(&result);
        result
    }

    /// The admission itself; `span` is the admission's span.
    async fn queue_for_turn(
        &self,
        request: AdmitRequest,
        span: &tracing::Span,
    ) -> Result<PoolReady, AdmitError> {
        let AdmitRequest {
            plan,
            provider,
            slot,
            kind,
            input,
        } = request;
        if !self.is_open() {
            return Err(AdmitError::Closed);
        }
        let ledger = &self.inner.ledger;
        let now = Instant::now();
        let deadline = (now + ledger.queue_age()).min(plan.earliest_deadline());
        if now >= deadline {
            return Err(AdmitError::Timeout);
        }
        let charge = ledger.metadata.try_reserve(REQUEST_OVERHEAD)?;
        let lease = self.client(&provider, &slot, kind)?;
        span.record("epoch", lease.epoch().get());

        let scheduler = &self.inner.scheduler;
        let slot = scheduler.reserve_release().ok_or(AdmitError::Busy)?;
        let ticket = self.inner.tickets.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        let enqueue = scheduler::Msg::Enqueue {
            ticket,
            tenant: plan.tenant().clone(),
            provider,
            reply,
        };
        scheduler.try_send(enqueue).map_err(|err| match err {
            MailboxError::Busy(_) | MailboxError::Timeout(_) => AdmitError::Busy,
            MailboxError::Closed => AdmitError::Closed,
        })?;
        // From here a dropped future cancels its waiter through the ticket.
        let ticket = QueueTicket::new(ticket, slot);

        let answer = match tokio::time::timeout_at(deadline, answer).await {
            Ok(answer) => answer,
            Err(_elapsed) => return Err(AdmitError::Timeout),
        };
        ticket.disarm();
        let grant = match answer {
            Ok(Answer::Granted(grant)) => grant,
            Ok(Answer::Refused(refused)) => {
                let field = scheduler::bound_field(refused.bound);
                return Err(AdmitError::capacity(field, refused.used, refused.limit));
            }
            Ok(Answer::Busy) => return Err(AdmitError::Busy),
            Ok(Answer::Closed) | Err(_) => return Err(AdmitError::Closed),
        };
        Ok(PoolReady {
            grant,
            lease,
            plan,
            input,
            charge,
            deadline,
            generation: self.inner.generation.id(),
            granted: ledger.next_sequence(),
            metadata: Arc::clone(&ledger.metadata),
        })
    }

    /// A fresh dispatch: asks `authority` whether `plan` may call `provider`
    /// now, and binds the provider's current epoch.
    ///
    /// # Errors
    ///
    /// [`AdmitError::Revoked`] when the authority denies,
    /// [`AdmitError::Unavailable`] when the provider has no current epoch,
    /// [`AdmitError::Closed`] after retirement.
    pub fn dispatch(
        &self,
        authority: &dyn DispatchAuthority,
        plan: &ExecutionPlan,
        provider: &ProviderId,
    ) -> Result<ProviderCall, AdmitError> {
        let span = tracing::debug_span!(
            spans::DISPATCH,
            provider = provider.as_str(),
            epoch = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let decided = self.decide_dispatch(authority, plan, provider);
        match &decided {
            Ok(call) => {
                span.record("epoch", call.epoch.get());
                span.record("outcome", "dispatched");
            }
            Err(err) => {
                span.record("epoch", 0u64);
                span.record("outcome", err.code());
            }
        }
        decided
    }

    fn decide_dispatch(
        &self,
        authority: &dyn DispatchAuthority,
        plan: &ExecutionPlan,
        provider: &ProviderId,
    ) -> Result<ProviderCall, AdmitError> {
        if !self.is_open() {
            return Err(AdmitError::Closed);
        }
        authority
            .authorize(plan, provider)
            .map_err(AdmitError::Revoked)?;
        let epoch = self
            .inner
            .directory
            .current_epoch(provider)
            .ok_or_else(|| AdmitError::Unavailable {
                provider: provider.clone(),
            })?;
        Ok(ProviderCall {
            session: plan.session(),
            ledger: plan.ledger(),
            provider: provider.clone(),
            epoch,
            generation: self.inner.generation.id(),
            sequence: self.inner.ledger.next_sequence(),
        })
    }
}
