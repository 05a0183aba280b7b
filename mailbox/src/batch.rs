//! The batched route into a hot actor: envelopes go into a lock-free FIFO
//! that the actor drains whole on each wake-up, and ractor carries at most
//! one [`Wake`] at a time.
//!
//! A sender pushes its envelope, then raises the `scheduled` flag; only the
//! sender that raised it sends the actor a `Wake`. On a `Wake` the actor
//! lowers the flag *before* draining, so an envelope pushed after the drain
//! began is either drained now or raises the flag (and sends a `Wake`) again.
//! One ractor message, its boxing and its wake-up thus serve a whole batch,
//! and the actor sees the batch before it answers anyone.
//!
//! Invariants:
//! - No envelope is left behind: every push is followed by a drain that sees
//!   it (the flag is swapped on both sides, so each drain synchronises with
//!   every push before its swap).
//! - At most one `Wake` waits in ractor's mailbox: the flag goes up once
//!   between two drains.
//! - Envelopes in the FIFO ≤ message slots + release slots, as for
//!   [`Mailbox`](crate::Mailbox): each carries its slot until opened.
//! - Order is FIFO for envelopes ordered by happens-before (one sender's
//!   envelopes, a release after the grant's enqueue).
//! - A drain takes at most [`DRAIN_LIMIT`] envelopes and wakes the actor
//!   again if it stopped there, so one drain never monopolises a worker.

use std::fmt;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use ractor::{ActorRef, Message};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::envelope::Envelope;
use crate::fifo::{Shared, Stopped, Wake, WakeTarget};
use crate::mailbox::{MailboxBound, MailboxError, MailboxSlots, ReleaseSlot, Target};
use crate::sync::{AtomicBool, Ordering};

/// Most envelopes one drain takes before handing the worker back.
#[cfg(not(all(test, loom)))]
pub const DRAIN_LIMIT: usize = 256;
/// Two under the model checks, so that their three envelopes can cut a
/// drain short (and two need not).
#[cfg(all(test, loom))]
pub const DRAIN_LIMIT: usize = 2;

/// Creates the two halves of a batched mailbox before its actor exists:
/// the slots, to attach once the actor is spawned, and the inbox the actor
/// keeps in its state.
pub fn batch<M>(bound: MailboxBound) -> (BatchSlots<M>, BatchInbox<M>) {
    let (queue, rx) = mpsc::unbounded_channel();
    let scheduled = Arc::new(AtomicBool::new(false));
    let slots = BatchSlots {
        slots: MailboxSlots::new(bound),
        queue,
        scheduled: Arc::clone(&scheduled),
    };
    let inbox = BatchInbox {
        rx,
        scheduled,
        buffer: Vec::new(),
    };
    (slots, inbox)
}

/// The slot pools and FIFO of a batched actor, not yet bound to it.
pub struct BatchSlots<M> {
    slots: MailboxSlots,
    queue: mpsc::UnboundedSender<Envelope<M>>,
    scheduled: Arc<AtomicBool>,
}

impl<M> Clone for BatchSlots<M> {
    fn clone(&self) -> Self {
        Self {
            slots: self.slots.clone(),
            queue: self.queue.clone(),
            scheduled: Arc::clone(&self.scheduled),
        }
    }
}

impl<M> BatchSlots<M> {
    /// Binds the slots to the actor that drains the FIFO.
    pub fn attach(self, actor: ActorRef<Wake>) -> BatchMailbox<M> {
        BatchMailbox {
            shared: Arc::new(Shared {
                queue: self.queue,
                scheduled: self.scheduled,
                actor,
            }),
            slots: self.slots,
        }
    }
}

impl<M> fmt::Debug for BatchSlots<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchSlots")
            .field("slots", &self.slots)
            .finish()
    }
}

/// The typed, bounded face of a batched actor: [`Mailbox`](crate::Mailbox)'s
/// operations, delivered through the FIFO.
pub struct BatchMailbox<M> {
    shared: Arc<Shared<M>>,
    slots: MailboxSlots,
}

impl<M> Clone for BatchMailbox<M> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            slots: self.slots.clone(),
        }
    }
}

impl<M> fmt::Debug for BatchMailbox<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchMailbox")
            .field("actor", &self.shared.actor.get_id())
            .field("slots", &self.slots)
            .finish()
    }
}

impl<M: Message> BatchMailbox<M> {
    /// The actor behind this mailbox.
    pub fn actor(&self) -> &ActorRef<Wake> {
        &self.shared.actor
    }

    /// Queues `msg` if a message slot is free, answering `Busy` at once if not.
    ///
    /// # Errors
    ///
    /// [`MailboxError::Busy`] with `msg` when every message slot is taken;
    /// [`MailboxError::Closed`] when the actor has stopped.
    pub fn try_send(&self, msg: M) -> Result<(), MailboxError<M>> {
        let (slot, msg) = self.slots.try_message(msg)?;
        self.deliver(Envelope {
            slot: Some(slot),
            msg,
        })
    }

    /// Queues `msg`, waiting for a message slot until `deadline`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future has queued nothing and holds no slot.
    ///
    /// # Errors
    ///
    /// [`MailboxError::Timeout`] with `msg` when no slot freed up in time;
    /// [`MailboxError::Closed`] when the actor has stopped.
    pub async fn send_within(&self, msg: M, deadline: Instant) -> Result<(), MailboxError<M>> {
        let (slot, msg) = self.slots.message_within(msg, deadline).await?;
        self.deliver(Envelope {
            slot: Some(slot),
            msg,
        })
    }

    /// Reserves the room for one future release message; `None` when every
    /// release slot is held.
    pub fn reserve_release(&self) -> Option<ReleaseSlot<M>> {
        let slot = self.slots.try_release()?;
        Some(ReleaseSlot {
            target: Target::Batch(Arc::clone(&self.shared)),
            slot,
        })
    }

    /// Envelopes this actor has opened (or dropped undelivered) so far,
    /// wrapping: a statistic for quiescence checks.
    pub fn opened(&self) -> usize {
        self.slots.opened()
    }

    fn deliver(&self, envelope: Envelope<M>) -> Result<(), MailboxError<M>> {
        self.shared
            .push(envelope)
            .map_err(|Stopped| MailboxError::Closed)
    }
}

/// The actor's half: the FIFO it drains on each [`Wake`].
pub struct BatchInbox<M> {
    rx: mpsc::UnboundedReceiver<Envelope<M>>,
    scheduled: Arc<AtomicBool>,
    /// Reused between drains, so a drain allocates nothing once warm.
    buffer: Vec<Envelope<M>>,
}

impl<M> fmt::Debug for BatchInbox<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchInbox")
            .field("queued", &self.rx.len())
            .finish()
    }
}

impl<M> BatchInbox<M> {
    /// Opens every envelope queued now (at most [`DRAIN_LIMIT`]), oldest
    /// first, and hands each message to `apply`. Call it on every [`Wake`];
    /// `myself` is woken again when the limit cut the drain short.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it completes on its first poll (the read never waits),
    /// so it is never dropped half-way; dropped before that poll it has
    /// done nothing.
    pub async fn drain(&mut self, myself: &impl WakeTarget, mut apply: impl FnMut(M)) {
        // Lowered before reading: a later push raises it and wakes us again.
        self.scheduled.swap(false, Ordering::AcqRel);
        let (rx, buffer) = (&mut self.rx, &mut self.buffer);
        // The FIFO is read without the task's waker (the flag wakes the
        // actor, not the channel) and outside the coop budget, so a drain
        // never stops early with its flag lowered. An envelope whose push
        // is still in progress ends this drain; its sender's flag swap
        // comes after ours and brings the next one.
        tokio::task::unconstrained(poll_fn(|_| {
            let mut cx = Context::from_waker(Waker::noop());
            let _ = rx.poll_recv_many(&mut cx, buffer, DRAIN_LIMIT);
            Poll::Ready(())
        }))
        .await;
        let cut_short = self.buffer.len() >= DRAIN_LIMIT;
        for envelope in self.buffer.drain(..) {
            apply(envelope.open());
        }
        if cut_short && !self.scheduled.swap(true, Ordering::AcqRel) {
            // Stopping: the rest is dropped with the inbox.
            let _ = myself.wake();
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(all(test, loom))]
mod loom_model;
