//! The two owned tokens a request holds in the scheduler: its queue ticket
//! while it waits, and its running grant once admitted.
//!
//! Each carries a release slot reserved in the scheduler's mailbox when it
//! was made, so its `Drop` always delivers its message.

use std::fmt;

use crate::mailbox::ReleaseSlot;
use crate::scheduler::queue::RunningKey;
use crate::scheduler::Msg;

/// A queued request's claim on its place in line. Dropping it while still
/// armed cancels the waiter and refunds its queue slot.
#[must_use = "dropping a ticket cancels the queued request"]
pub(crate) struct QueueTicket {
    ticket: u64,
    slot: Option<ReleaseSlot<Msg>>,
}

impl QueueTicket {
    pub(crate) fn new(ticket: u64, slot: ReleaseSlot<Msg>) -> Self {
        Self {
            ticket,
            slot: Some(slot),
        }
    }

    /// The waiter has its answer; nothing to cancel. Frees the slot.
    pub(crate) fn disarm(mut self) {
        self.slot = None;
    }
}

impl Drop for QueueTicket {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            // A stopped scheduler has no queue left to cancel from.
            let _ = slot.send(Msg::Cancel {
                ticket: self.ticket,
            });
        }
    }
}

impl fmt::Debug for QueueTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueTicket")
            .field("ticket", &self.ticket)
            .field("armed", &self.slot.is_some())
            .finish()
    }
}

/// Running capacity granted to one request: counted against its tenant,
/// its logical provider and the total until dropped.
#[must_use = "dropping a running grant returns its capacity at once"]
pub(crate) struct RunningGrant {
    running: RunningKey,
    slot: Option<ReleaseSlot<Msg>>,
}

impl RunningGrant {
    pub(crate) fn new(running: RunningKey, slot: ReleaseSlot<Msg>) -> Self {
        Self {
            running,
            slot: Some(slot),
        }
    }

    /// Takes the grant apart without sending its release: for the scheduler
    /// itself, which returns the capacity directly.
    pub(crate) fn disarm(mut self) -> RunningKey {
        self.slot = None;
        self.running
    }
}

impl Drop for RunningGrant {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let _ = slot.send(Msg::Release {
                running: self.running,
            });
        }
    }
}

impl fmt::Debug for RunningGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunningGrant")
            .field("running", &self.running)
            .finish()
    }
}
