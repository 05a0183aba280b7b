//! Admission: the fair queue of requests waiting for running capacity,
//! and the pending and running counts per tenant and per logical provider.
//!
//! It decides who runs when — the highest priority class first, each
//! keeping its minimum share; within a class, tenants by the fairness
//! policy, then providers within a tenant, FIFO within a group — under the
//! pending bounds (checked when a
//! request is queued: a full queue refuses at once) and the running ceilings
//! (checked at every grant). See [`queue`] for the exact order and costs.
//!
//! # Execution model
//!
//! The queue is driven by its callers ([`core`]): no task of its own sits
//! between a request and its grant.
//!
//! - An admit that finds the queue free applies itself on the caller's task:
//!   granted at once when capacity is free and nobody is in line ahead,
//!   else queued with an entry ([`cell`]) through which its answer comes.
//! - A grant's drop returns its capacity the same way, granting the next
//!   waiter by the rotation and waking only that waiter's task.
//! - A caller that finds the queue owned leaves its operation for the owner
//!   (combining); an owner applies bounded batches and, past two of them,
//!   hands the rest to the scheduler actor.
//! - The scheduler actor ([`actor`]) stays in the supervision tree for
//!   control: lowering ceilings, closing, counting for shutdown, and the one
//!   alarm at the earliest deadline in line ([`deadlines`]), which times
//!   out waiters — no timer per waiter. If it stops, admission closes.
//!
//! Hops per request: none when the queue is free; a wake-up of the waiter's
//! own task when it had to queue. The actor is woken only for a hand-over,
//! a deadline earlier than its alarm, the alarm itself, or control.
//!
//! Mailbox (control only): batched (see [`crate::mailbox::BatchMailbox`]),
//! 64 message slots and one release slot, the registry's `Close`.

mod actor;
mod cell;
mod core;
mod deadlines;
mod grant;
mod handle;
pub(crate) mod queue;
mod state;

#[cfg(test)]
mod fixtures;
#[cfg(all(test, loom))]
mod loom_model;
#[cfg(test)]
mod tests;

use std::time::Duration;

use ractor::RpcReplyPort;

pub(crate) use self::core::Core;
pub(crate) use grant::{RunningGrant, Waiting};
pub(crate) use handle::{CeilingsRefused, CloseSlot, SchedulerHandle};
pub(crate) use state::bound_field;

use crate::identity::{ProviderId, TenantId};
use crate::limits::{LimitField, Limits};
use crate::mailbox::MailboxBound;
use queue::{Ceilings, Refused};
pub(crate) use queue::{Fallback, Rate, RateReading, RateRefused, MAX_WEIGHT};

/// The scheduler's (control) mailbox bound.
fn mailbox_bound() -> MailboxBound {
    MailboxBound {
        messages: 64,
        // The registry's `Close`.
        releases: 1,
    }
}

/// The most operations callers may leave for the queue's owner before a
/// new admit is refused busy: a burst that fits the pending bound is
/// queued, not refused.
pub(crate) fn deferred_bound(limits: &Limits) -> usize {
    64 + limits.pending_requests as usize
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

/// How an admit ended without a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// A pending bound refused the request.
    Refused(Refused),
    /// The provider's or tenant's rate cannot grant the request before its
    /// deadline.
    RateLimited(RateBound),
    /// Admission closed before the request was granted.
    Closed,
    /// The request's deadline passed while it waited.
    TimedOut,
    /// Too many operations were waiting for the queue's owner.
    Busy,
}

/// A request refused at once because its provider's or tenant's rate
/// cannot grant it before its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RateBound {
    /// The rate in force.
    pub(crate) rate: Rate,
    /// How long from now its turn would come at the earliest.
    pub(crate) wait: Duration,
}

/// What an admit gets at once.
#[derive(Debug)]
pub(crate) enum AdmitReply {
    /// Granted on the caller's task.
    Granted(RunningGrant),
    /// In line: the future completes with the answer.
    Waiting(Waiting),
    /// Refused or closed at once.
    Ended(Ended),
}

/// A lowering the scheduler refused: a ceiling below its actual use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CeilingInUse {
    pub(crate) field: LimitField,
    pub(crate) used: u32,
    pub(crate) requested: u32,
}

/// Most tenants (and, apart, providers) with a running ceiling of their
/// own at once.
pub(crate) const OWN_CEILINGS: usize = 1_024;

/// Whose own running ceiling, in the engine's identities.
pub(crate) type OwnCeiling = queue::Owner<TenantId, ProviderId>;
pub(crate) use queue::Expiry;

/// Whose request rate, in the engine's identities: a tenant's or a
/// provider's.
pub(crate) type RateOwner = queue::Owner<TenantId, ProviderId>;

/// A tenant's or provider's own running ceiling refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OwnCeilingRefused {
    /// It already runs more.
    InUse(CeilingInUse),
    /// [`OWN_CEILINGS`] others have one already.
    Full { limit: u32 },
}

/// Control messages of the scheduler actor.
enum Msg {
    /// Apply lowered ceilings, refusing any below actual use.
    SetCeilings {
        ceilings: Ceilings,
        reply: RpcReplyPort<Result<(), CeilingInUse>>,
    },
    /// Admission closed: answer every queued waiter `Closed`.
    Close,
    /// Report (pending, running) once operations in flight have landed.
    Counts { reply: RpcReplyPort<(u32, u32)> },
}
