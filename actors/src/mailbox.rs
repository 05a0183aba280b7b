//! Bounded mailboxes on top of ractor's unbounded ones.
//!
//! ractor queues without limit, so every actor of the engine is reached only
//! through a [`Mailbox`]: a sender first takes a slot from one of the actor's
//! slot pools (a lock-free counter, see [`pool`]), the slot travels inside the
//! [`Envelope`] and is returned when the actor opens it. Two pools of slots
//! exist per actor:
//!
//! - *message* slots for ordinary requests: a full pool answers
//!   [`MailboxError::Busy`] at once ([`Mailbox::try_send`]), or waits within a
//!   deadline for internal senders ([`Mailbox::send_within`]);
//! - *release* slots, taken when a grant is made and held by the grant, so the
//!   grant's `Drop` can always deliver its release message
//!   ([`ReleaseSlot::send`]) even while the message slots are exhausted.
//!
//! A [`Mailbox`] sends one ractor message per envelope. A hot actor takes a
//! [`BatchMailbox`] instead (see [`batch`]): the same two pools, but envelopes
//! go into a lock-free FIFO that the actor drains whole per wake-up.
//!
//! Invariants:
//! - Messages queued in ractor's mailbox ≤ message slots + release slots.
//! - A release never waits and never fails for lack of room; it fails only if
//!   the actor is gone, in which case the message is handed back.
//! - A slot is returned exactly once: when the actor opens the envelope, or when
//!   the envelope is dropped undelivered.

mod batch;
mod pool;

use std::fmt;
use std::sync::Arc;

use ractor::{ActorRef, Message};
use tokio::time::Instant;

#[cfg(test)]
pub(crate) use batch::Stopped;
pub(crate) use batch::{batch, BatchInbox, BatchMailbox, Wake, WakeTarget};
use pool::{Slot, SlotPool};

/// The sizes of one actor's two slot pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MailboxBound {
    /// Ordinary messages that may wait in the mailbox at once.
    pub(crate) messages: usize,
    /// Release messages that outstanding grants may still send.
    pub(crate) releases: usize,
}

/// The slot pools of one actor, created before the actor so that its
/// `pre_start` can attach its own reference.
#[derive(Clone)]
pub(crate) struct MailboxSlots {
    messages: Arc<SlotPool>,
    releases: Arc<SlotPool>,
    bound: MailboxBound,
}

impl MailboxSlots {
    pub(crate) fn new(bound: MailboxBound) -> Self {
        Self {
            messages: SlotPool::new(bound.messages),
            releases: SlotPool::new(bound.releases),
            bound,
        }
    }

    /// Binds the slots to the actor they guard.
    pub(crate) fn attach<M: Message>(self, actor: ActorRef<Envelope<M>>) -> Mailbox<M> {
        Mailbox { actor, slots: self }
    }

    /// A message slot if one is free, `Busy` at once if not.
    fn try_message<M>(&self, msg: M) -> Result<(Slot, M), MailboxError<M>> {
        match self.messages.try_take() {
            Some(slot) => Ok((slot, msg)),
            None => Err(MailboxError::Busy(msg)),
        }
    }

    /// A message slot, waiting for one until `deadline`.
    async fn message_within<M>(
        &self,
        msg: M,
        deadline: Instant,
    ) -> Result<(Slot, M), MailboxError<M>> {
        match self.messages.take_within(deadline).await {
            Some(slot) => Ok((slot, msg)),
            None => Err(MailboxError::Timeout(msg)),
        }
    }

    /// A release slot, or `None` when every one is held.
    fn try_release(&self) -> Option<Slot> {
        self.releases.try_take()
    }

    /// Envelopes opened (or dropped undelivered) since the slots were made,
    /// wrapping: every envelope returns its slot exactly once.
    #[cfg(feature = "testing")]
    fn opened(&self) -> usize {
        self.messages
            .returned()
            .wrapping_add(self.releases.returned())
    }
}

impl fmt::Debug for MailboxSlots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MailboxSlots")
            .field("bound", &self.bound)
            .field("free_messages", &self.messages.free())
            .field("free_releases", &self.releases.free())
            .finish()
    }
}

/// A message together with the mailbox slot it occupies.
pub(crate) struct Envelope<M> {
    _slot: Slot,
    msg: M,
}

impl<M> Envelope<M> {
    /// Takes the message out, returning its slot to the sender side.
    pub(crate) fn open(self) -> M {
        self.msg
    }
}

/// Why a message could not be queued; the message is handed back.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum MailboxError<M> {
    /// Every message slot is taken.
    Busy(M),
    /// No slot freed up before the deadline.
    Timeout(M),
    /// The actor has stopped; the message went with it.
    Closed,
}

/// What a quiescence probe heard (`ProviderPools::settled`).
#[cfg(feature = "testing")]
#[derive(Debug)]
pub(crate) enum Probed<T> {
    /// The actor answered: it handled everything queued before the probe.
    Answered(T),
    /// The actor has stopped, or stopped before answering.
    Gone,
    /// No room or no answer before the deadline.
    Late,
}

/// The typed, bounded face of one actor.
pub(crate) struct Mailbox<M> {
    actor: ActorRef<Envelope<M>>,
    slots: MailboxSlots,
}

impl<M> Clone for Mailbox<M> {
    fn clone(&self) -> Self {
        Self {
            actor: self.actor.clone(),
            slots: self.slots.clone(),
        }
    }
}

impl<M> fmt::Debug for Mailbox<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mailbox")
            .field("actor", &self.actor.get_id())
            .field("slots", &self.slots)
            .finish()
    }
}

impl<M: Message> Mailbox<M> {
    /// The actor behind this mailbox.
    pub(crate) fn actor(&self) -> &ActorRef<Envelope<M>> {
        &self.actor
    }

    /// Queues `msg` if a message slot is free, answering `Busy` at once if not.
    pub(crate) fn try_send(&self, msg: M) -> Result<(), MailboxError<M>> {
        let (slot, msg) = self.slots.try_message(msg)?;
        self.deliver(slot, msg)
    }

    /// Queues `msg`, waiting for a message slot until `deadline`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future has queued nothing and holds no slot.
    pub(crate) async fn send_within(
        &self,
        msg: M,
        deadline: Instant,
    ) -> Result<(), MailboxError<M>> {
        let (slot, msg) = self.slots.message_within(msg, deadline).await?;
        self.deliver(slot, msg)
    }

    /// Reserves the room for one future release message.
    ///
    /// Returns `None` when every release slot is held by an outstanding grant;
    /// callers size the release pool by the limit on their grants, so `None`
    /// means that limit was reached.
    pub(crate) fn reserve_release(&self) -> Option<ReleaseSlot<M>> {
        let slot = self.slots.try_release()?;
        Some(ReleaseSlot {
            target: Target::Actor(self.actor.clone()),
            slot,
        })
    }

    /// Envelopes this actor has opened (or dropped undelivered) so far,
    /// wrapping.
    #[cfg(feature = "testing")]
    pub(crate) fn opened(&self) -> usize {
        self.slots.opened()
    }

    /// Sends a probe `msg` through the ordinary message slots, waiting for
    /// room until `deadline`, then waits for its `answer` until `deadline`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future has queued nothing, or a probe whose
    /// answer goes unheard.
    #[cfg(feature = "testing")]
    pub(crate) async fn probe<T>(
        &self,
        msg: M,
        answer: tokio::sync::oneshot::Receiver<T>,
        deadline: Instant,
    ) -> Probed<T> {
        match self.send_within(msg, deadline).await {
            Ok(()) => {}
            Err(MailboxError::Closed) => return Probed::Gone,
            Err(MailboxError::Busy(_) | MailboxError::Timeout(_)) => return Probed::Late,
        }
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(Ok(value)) => Probed::Answered(value),
            // Dropped unanswered: the actor stopped with the probe queued.
            Ok(Err(_)) => Probed::Gone,
            Err(_) => Probed::Late,
        }
    }

    fn deliver(&self, slot: Slot, msg: M) -> Result<(), MailboxError<M>> {
        self.actor
            .send_message(Envelope { _slot: slot, msg })
            .map_err(|_stopped| MailboxError::Closed)
    }
}

/// Room for exactly one release message, held by a grant from the moment it
/// is made.
#[must_use = "a release slot is held by a grant until it sends its release"]
pub(crate) struct ReleaseSlot<M> {
    target: Target<M>,
    slot: Slot,
}

/// The route a release slot delivers through.
enum Target<M> {
    /// One ractor message, as [`Mailbox`] sends.
    Actor(ActorRef<Envelope<M>>),
    /// The batched FIFO of a [`BatchMailbox`].
    Batch(Arc<batch::Shared<M>>),
}

impl<M: Message> ReleaseSlot<M> {
    /// Sends the release message. Never waits and never fails for lack of
    /// room; fails only if the actor has stopped.
    pub(crate) fn send(self, msg: M) -> Result<(), ActorGone> {
        let envelope = Envelope {
            _slot: self.slot,
            msg,
        };
        match self.target {
            Target::Actor(actor) => actor.send_message(envelope).map_err(|_stopped| ActorGone),
            Target::Batch(shared) => shared.push(envelope).map_err(|_stopped| ActorGone),
        }
    }
}

/// The actor a release was meant for has stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ActorGone;

impl<M> fmt::Debug for ReleaseSlot<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let actor = match &self.target {
            Target::Actor(actor) => actor.get_id(),
            Target::Batch(shared) => shared.actor_id(),
        };
        f.debug_struct("ReleaseSlot")
            .field("actor", &actor)
            .finish()
    }
}

#[cfg(test)]
mod tests;
