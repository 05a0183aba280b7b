//! Bounded mailboxes for the control plane's actors.
//!
//! ractor's mailboxes are unbounded. A handle takes a slot from the actor's
//! semaphore before it casts; the slot travels in the [`Envelope`] and is
//! returned when the actor opens it. Timer ticks an actor schedules for
//! itself carry no slot: each actor keeps at most one tick per duty in
//! flight, so they are bounded by construction.
//!
//! The engine's mailbox follows the same rule with more (lock-free, model
//! checked slot pools, release slots, waiting senders); the control plane
//! keeps this one because it does not depend on the engine (record 0062,
//! `docs/decisions/0062-two-bounded-mailboxes-one-rule.md`).
//!
//! Invariants:
//! - Messages queued ≤ slots + the actor's own ticks.
//! - A full mailbox answers [`ActorCallError::Busy`] at once; nothing waits.

use std::fmt;
use std::sync::Arc;

use ractor::{ActorRef, Message};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// Why a call to a control-plane actor failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ActorCallError {
    /// The actor's mailbox is full; try again later.
    #[error("actor mailbox is full")]
    Busy,
    /// The actor has stopped.
    #[error("actor has stopped")]
    Stopped,
}

/// A message and, when sent by a handle, its mailbox slot.
pub(crate) struct Envelope<M> {
    msg: M,
    _slot: Option<OwnedSemaphorePermit>,
}

impl<M> Envelope<M> {
    /// A message the actor sends itself (a tick): no slot.
    pub(crate) fn tick(msg: M) -> Self {
        Self { msg, _slot: None }
    }

    /// Takes the message out, returning the slot.
    pub(crate) fn open(self) -> M {
        self.msg
    }
}

impl<M> fmt::Debug for Envelope<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Envelope").finish_non_exhaustive()
    }
}

/// An actor reached through a bounded number of slots.
pub(crate) struct Mailbox<M> {
    actor: ActorRef<Envelope<M>>,
    slots: Arc<Semaphore>,
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
            .field("free_slots", &self.slots.available_permits())
            .finish()
    }
}

impl<M: Message> Mailbox<M> {
    pub(crate) fn new(actor: ActorRef<Envelope<M>>, slots: usize) -> Self {
        Self {
            actor,
            slots: Arc::new(Semaphore::new(slots)),
        }
    }

    pub(crate) fn actor(&self) -> &ActorRef<Envelope<M>> {
        &self.actor
    }

    /// Sends `msg` if a slot is free.
    pub(crate) fn try_send(&self, msg: M) -> Result<(), ActorCallError> {
        let slot = self
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| ActorCallError::Busy)?;
        self.actor
            .send_message(Envelope {
                msg,
                _slot: Some(slot),
            })
            .map_err(|_| ActorCallError::Stopped)
    }

    /// Sends the message `make` builds around a reply sender, and waits for
    /// the reply.
    pub(crate) async fn call<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> M,
    ) -> Result<T, ActorCallError> {
        let (reply, answer) = oneshot::channel();
        self.try_send(make(reply))?;
        answer.await.map_err(|_| ActorCallError::Stopped)
    }
}
