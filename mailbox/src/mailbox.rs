//! The one-message-per-envelope route: [`Mailbox`], the [`MailboxSlots`] it
//! takes from, the [`Envelope`] a slot travels in, [`ReleaseSlot`] and the
//! errors. The rule and its invariants are the crate doc's.

use std::fmt;
use std::sync::Arc;

use ractor::{ActorRef, Message};
use tokio::time::Instant;

use crate::envelope::Envelope;
use crate::fifo::Shared;
use crate::pool::{Slot, SlotPool};

/// The sizes of one actor's two slot pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailboxBound {
    /// Ordinary messages that may wait in the mailbox at once.
    pub messages: usize,
    /// Release messages that outstanding grants may still send (zero for an
    /// actor that makes no grants).
    pub releases: usize,
}

/// The slot pools of one actor, created before the actor so that its
/// `pre_start` can attach its own reference.
#[derive(Clone)]
pub struct MailboxSlots {
    pub(crate) messages: Arc<SlotPool>,
    pub(crate) releases: Arc<SlotPool>,
    bound: MailboxBound,
}

impl MailboxSlots {
    /// Pools of the sizes `bound` gives.
    pub fn new(bound: MailboxBound) -> Self {
        Self {
            messages: SlotPool::new(bound.messages),
            releases: SlotPool::new(bound.releases),
            bound,
        }
    }

    /// Binds the slots to the actor they guard.
    pub fn attach<M: Message>(self, actor: ActorRef<Envelope<M>>) -> Mailbox<M> {
        Mailbox { actor, slots: self }
    }

    /// A message slot if one is free, `Busy` at once if not.
    pub(crate) fn try_message<M>(&self, msg: M) -> Result<(Slot, M), MailboxError<M>> {
        match self.messages.try_take() {
            Some(slot) => Ok((slot, msg)),
            None => Err(MailboxError::Busy(msg)),
        }
    }

    /// A message slot, waiting for one until `deadline`.
    pub(crate) async fn message_within<M>(
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
    pub(crate) fn try_release(&self) -> Option<Slot> {
        self.releases.try_take()
    }

    /// Envelopes opened (or dropped undelivered) since the slots were made,
    /// wrapping: every envelope returns its slot exactly once.
    pub(crate) fn opened(&self) -> usize {
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

/// Why a message could not be queued; the message is handed back.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum MailboxError<M> {
    /// Every message slot is taken.
    #[error("mailbox is full")]
    Busy(M),
    /// No slot freed up before the deadline.
    #[error("no mailbox slot freed up before the deadline")]
    Timeout(M),
    /// The actor has stopped; the message went with it.
    #[error("actor has stopped")]
    Closed,
}

/// The typed, bounded face of one actor.
pub struct Mailbox<M> {
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
    pub fn actor(&self) -> &ActorRef<Envelope<M>> {
        &self.actor
    }

    /// Queues `msg` if a message slot is free, answering `Busy` at once if not.
    ///
    /// # Errors
    ///
    /// [`MailboxError::Busy`] with `msg` when every message slot is taken;
    /// [`MailboxError::Closed`] when the actor has stopped.
    pub fn try_send(&self, msg: M) -> Result<(), MailboxError<M>> {
        let (slot, msg) = self.slots.try_message(msg)?;
        self.deliver(slot, msg)
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
        self.deliver(slot, msg)
    }

    /// Reserves the room for one future release message.
    ///
    /// Returns `None` when every release slot is held by an outstanding grant;
    /// callers size the release pool by the limit on their grants, so `None`
    /// means that limit was reached.
    pub fn reserve_release(&self) -> Option<ReleaseSlot<M>> {
        let slot = self.slots.try_release()?;
        Some(ReleaseSlot {
            target: Target::Actor(self.actor.clone()),
            slot,
        })
    }

    /// Envelopes this actor has opened (or dropped undelivered) so far,
    /// wrapping: a statistic for quiescence checks.
    pub fn opened(&self) -> usize {
        self.slots.opened()
    }

    fn deliver(&self, slot: Slot, msg: M) -> Result<(), MailboxError<M>> {
        self.actor
            .send_message(Envelope {
                slot: Some(slot),
                msg,
            })
            .map_err(|_stopped| MailboxError::Closed)
    }
}

/// Room for exactly one release message, held by a grant from the moment it
/// is made.
#[must_use = "a release slot is held by a grant until it sends its release"]
pub struct ReleaseSlot<M> {
    pub(crate) target: Target<M>,
    pub(crate) slot: Slot,
}

/// The route a release slot delivers through.
pub(crate) enum Target<M> {
    /// One ractor message, as [`Mailbox`] sends.
    Actor(ActorRef<Envelope<M>>),
    /// The batched FIFO of a [`BatchMailbox`].
    Batch(Arc<Shared<M>>),
}

impl<M: Message> ReleaseSlot<M> {
    /// Sends the release message. Never waits and never fails for lack of
    /// room.
    ///
    /// # Errors
    ///
    /// [`ActorGone`] only if the actor has stopped (the slot is returned).
    pub fn send(self, msg: M) -> Result<(), ActorGone> {
        let envelope = Envelope {
            slot: Some(self.slot),
            msg,
        };
        match self.target {
            Target::Actor(actor) => actor.send_message(envelope).map_err(|_stopped| ActorGone),
            Target::Batch(shared) => shared.push(envelope).map_err(|_stopped| ActorGone),
        }
    }
}

/// The actor a release was meant for has stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("actor has stopped")]
pub struct ActorGone;

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
