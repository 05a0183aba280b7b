//! The scheduler actor's state and its named operations.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::identity::{ProviderId, TenantId};
use crate::ledger::Ledger;
use crate::limits::LimitField;
use crate::mailbox::BatchMailbox;
use crate::scheduler::queue::{Bound, Ceilings, FairQueue, IndexMap, RunningKey, WaiterKey};
use crate::scheduler::{Answer, CeilingInUse, Msg, RunningGrant};

/// A queued request, as the queue holds it.
pub(crate) struct Waiter {
    ticket: u64,
    reply: oneshot::Sender<Answer>,
}

pub(crate) struct State {
    queue: FairQueue<Waiter, TenantId, ProviderId>,
    tickets: IndexMap<u64, WaiterKey>,
    mailbox: BatchMailbox<Msg>,
    ledger: Arc<Ledger>,
    closed: bool,
}

impl State {
    pub(crate) fn new(ceilings: Ceilings, mailbox: BatchMailbox<Msg>, ledger: Arc<Ledger>) -> Self {
        Self {
            queue: FairQueue::new(ceilings),
            tickets: IndexMap::default(),
            mailbox,
            ledger,
            closed: false,
        }
    }

    /// Queues a request, or answers at once when refused or closed.
    pub(crate) fn enqueue(
        &mut self,
        ticket: u64,
        tenant: TenantId,
        provider: ProviderId,
        reply: oneshot::Sender<Answer>,
    ) {
        if self.closed {
            let _ = reply.send(Answer::Closed);
            return;
        }
        match self.queue.push(tenant, provider, Waiter { ticket, reply }) {
            Ok(key) => {
                self.tickets.insert(ticket, key);
            }
            Err((refused, waiter)) => {
                let _ = waiter.reply.send(Answer::Refused(refused));
            }
        }
    }

    /// Removes a waiter that gave up, refunding its queue slot.
    pub(crate) fn cancel(&mut self, ticket: u64) {
        if let Some(key) = self.tickets.remove(&ticket) {
            self.queue.cancel(key);
        }
    }

    /// Returns a finished request's running capacity.
    pub(crate) fn release(&mut self, running: RunningKey) {
        self.queue.release_running(running);
    }

    /// Grants every waiter whose turn it is while capacity allows.
    pub(crate) fn grant_ready(&mut self) {
        while let Some(grant) = self.queue.next_grant() {
            self.tickets.remove(&grant.item.ticket);
            let Some(slot) = self.mailbox.reserve_release() else {
                // The release pool is sized for every grant the limits
                // allow; running out means a sizing bug, answered as busy.
                self.queue.release_running(grant.running);
                let _ = grant.item.reply.send(Answer::Busy);
                continue;
            };
            let running = RunningGrant::new(grant.running, slot);
            if let Err(Answer::Granted(unwanted)) = grant.item.reply.send(Answer::Granted(running))
            {
                // The waiter left between its deadline and its turn.
                self.queue.release_running(unwanted.disarm());
            }
        }
    }

    /// Applies lowered ceilings; totals and per-group ceilings never go
    /// below actual use.
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

    /// Closes admission: every queued waiter hears `Closed`.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        for (_, key) in self.tickets.drain() {
            if let Some(waiter) = self.queue.cancel(key) {
                let _ = waiter.reply.send(Answer::Closed);
            }
        }
    }

    pub(crate) fn counts(&self) -> (u32, u32) {
        (self.queue.pending(), self.queue.running())
    }

    /// Publishes the counts to the ledger's gauges.
    pub(crate) fn report(&self) {
        let gauges = &self.ledger.gauges;
        gauges
            .pending_requests
            .store(self.queue.pending(), Ordering::Release);
        gauges
            .running_requests
            .store(self.queue.running(), Ordering::Release);
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
