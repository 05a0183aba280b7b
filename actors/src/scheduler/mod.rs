//! The scheduler actor: the single owner of the admission queue and of the
//! pending and running counts per tenant and per logical provider.
//!
//! It decides who runs when — tenants in rotation, then providers within a
//! tenant, FIFO within a group — under the pending bounds (checked when a
//! request is queued: a full queue refuses at once) and the running ceilings
//! (checked at every grant). See [`queue`] for the exact order and costs.
//!
//! Hops per request: one `Enqueue` (answered at once when refused or when
//! capacity is free, otherwise when the request's turn comes), one `Release`
//! when the running owner is dropped, and one `Cancel` only if the waiter
//! gave up while queued.
//!
//! Mailbox: batched (see [`crate::mailbox::BatchMailbox`]): messages go into
//! a lock-free FIFO and ractor carries one wake-up per batch. Each wake-up
//! yields once, applies every queued message, then grants once, so a batch of releases
//! answers a batch of waiters and the counts are published once. Control
//! messages (`SetCeilings`, `Close`, `Counts`) first grant what the batch so
//! far made ready, so they act on a settled queue.
//!
//! Bounds: `64 + pending_requests` message slots (startup limit), so a
//! burst that fits the queue is never refused as busy; release slots for every queued ticket and
//! every running grant, plus the grants not yet received by their waiters,
//! plus the registry's `Close` (`1 + pending_requests + 2 × running_requests`,
//! startup limits).

mod actor;
mod grant;
pub(crate) mod queue;
mod state;

use ractor::RpcReplyPort;
use tokio::sync::oneshot;

pub(crate) use actor::{SchedulerActor, SchedulerArgs};
pub(crate) use grant::{QueueTicket, RunningGrant};
pub(crate) use state::bound_field;

use crate::identity::{ProviderId, TenantId};
use crate::limits::{LimitField, Limits};
use crate::mailbox::MailboxBound;
use queue::{Ceilings, Refused, RunningKey};

/// The scheduler's mailbox bound for the given startup limits.
pub(crate) fn mailbox_bound(limits: &Limits) -> MailboxBound {
    MailboxBound {
        // A burst that fits the pending bound is queued, not refused busy.
        messages: 64 + limits.pending_requests as usize,
        releases: 1 + limits.pending_requests as usize + 2 * limits.running_requests as usize,
    }
}

/// The queue ceilings that `limits` set.
pub(crate) fn ceilings(limits: &Limits) -> Ceilings {
    Ceilings {
        pending_total: limits.pending_requests,
        pending_per_tenant: limits.requests_per_tenant,
        pending_per_provider: limits.requests_per_provider,
        running_total: limits.running_requests,
        running_per_tenant: limits.running_per_tenant,
        running_per_provider: limits.running_per_provider,
    }
}

/// What a queued request hears back.
#[derive(Debug)]
pub(crate) enum Answer {
    /// Capacity is granted; the grant returns it when dropped.
    Granted(RunningGrant),
    /// A pending bound refused the request at once.
    Refused(Refused),
    /// Admission closed before the request was granted.
    Closed,
    /// The scheduler had no release slot for the grant (a sizing bug).
    Busy,
}

/// A lowering the scheduler refused: a ceiling below its actual use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CeilingInUse {
    pub(crate) field: LimitField,
    pub(crate) used: u32,
    pub(crate) requested: u32,
}

/// Messages of the scheduler actor.
pub(crate) enum Msg {
    /// Queue a request; the answer goes to `reply`.
    Enqueue {
        ticket: u64,
        tenant: TenantId,
        provider: ProviderId,
        reply: oneshot::Sender<Answer>,
    },
    /// The waiter of `ticket` gave up (sent on the ticket's reserved slot).
    Cancel { ticket: u64 },
    /// A running grant was dropped (sent on the grant's reserved slot).
    Release { running: RunningKey },
    /// Apply lowered ceilings, refusing any below actual use.
    SetCeilings {
        ceilings: Ceilings,
        reply: RpcReplyPort<Result<(), CeilingInUse>>,
    },
    /// Admission closed: answer every queued waiter `Closed`.
    Close,
    /// Report (pending, running).
    Counts { reply: RpcReplyPort<(u32, u32)> },
}
