//! [`IngressRequest`]: finite ownership of one inbound event (a NATS
//! delivery, an HTTP webhook) under the same tenant limits as outbound
//! calls.
//!
//! An inbound event is admitted exactly like an outbound request: its
//! payload is staged (charged) first, it waits in the tenant's queue within
//! the plan's deadlines, the dispatch authority must allow it, and it then
//! holds one of the tenant's and the provider's running slots until it is
//! dropped.
//!
//! Invariants:
//! - An event the pools refused holds nothing: the source keeps it
//!   unacknowledged and decides about redelivery.
//! - An admitted event holds its running capacity, client lease and payload
//!   charge until the `IngressRequest` (and every clone of its running
//!   request) is dropped — after the source acknowledged it.

use std::fmt;

use bytes::Bytes;

use crate::admission::RunningRequest;
use crate::epoch::TypedSlot;
use crate::identity::{OriginKind, ProviderId};
use crate::plan::ExecutionPlan;

/// One inbound event to admit.
#[derive(Clone)]
pub struct IngressEvent {
    /// The sealed plan of the activation that will handle the event: its
    /// tenant, session, ledger and deadlines.
    pub plan: ExecutionPlan,
    /// The logical provider the event arrived through.
    pub provider: ProviderId,
    /// The origin slot it arrived on, from the install receipt.
    pub slot: TypedSlot,
    /// The protocol of that origin.
    pub kind: OriginKind,
    /// The event's payload; charged before the event is queued.
    pub payload: Bytes,
}

impl fmt::Debug for IngressEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IngressEvent")
            .field("plan", &self.plan)
            .field("provider", &self.provider)
            .field("slot", &self.slot)
            .field("kind", &self.kind)
            .field("payload", &self.payload.len())
            .finish()
    }
}

/// An admitted inbound event: its charged payload and the running capacity
/// its handling holds.
///
/// Acknowledge the event at its source after handling it, then drop this:
/// the capacity returns with the last clone of [`Self::running`].
#[must_use = "dropping an ingress request ends its ownership at once"]
pub struct IngressRequest {
    running: RunningRequest,
}

impl IngressRequest {
    pub(crate) fn new(running: RunningRequest) -> Self {
        Self { running }
    }

    /// The event's payload (charged while this request lives).
    pub fn payload(&self) -> &Bytes {
        self.running.input().bytes()
    }

    /// The plan of the activation handling the event.
    pub fn plan(&self) -> &ExecutionPlan {
        self.running.plan()
    }

    /// The running request: outbound calls made while handling the event
    /// may share it, and results staged on it keep the capacity.
    pub fn running(&self) -> &RunningRequest {
        &self.running
    }

    /// Gives up the wrapper, keeping the running ownership.
    pub fn into_running(self) -> RunningRequest {
        self.running
    }
}

impl fmt::Debug for IngressRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IngressRequest")
            .field("running", &self.running)
            .finish()
    }
}
