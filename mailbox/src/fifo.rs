//! The sending half of a batched actor's FIFO, shared by its mailbox and
//! every release slot: [`Shared::push`] queues an envelope and wakes the
//! actor with one [`Wake`] unless a wake-up is already pending.
//!
//! Invariants:
//! - At most one [`Wake`] is pending at a time (the `scheduled` flag); the
//!   drain that lowers the flag (`batch.rs`) takes every envelope queued
//!   before it.
//! - A stopped actor takes no envelope: `push` answers [`Stopped`].

use std::sync::Arc;

use ractor::{ActorId, ActorRef, ActorStatus};
use tokio::sync::mpsc;

use crate::envelope::Envelope;
use crate::sync::{AtomicBool, Ordering};

/// The one ractor message of a batched actor: "your FIFO has envelopes".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wake;

/// The actor stopped; its FIFO is gone or will be dropped unread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// Where a batched actor's [`Wake`] goes: the actor itself (a stand-in,
/// shared through an `Arc`, in model checks and unit tests).
pub trait WakeTarget {
    /// True once the actor takes no more messages.
    fn stopping(&self) -> bool;
    /// Sends one [`Wake`]; fails once the actor is gone.
    fn wake(&self) -> Result<(), Stopped>;
}

impl<T: WakeTarget + ?Sized> WakeTarget for Arc<T> {
    fn stopping(&self) -> bool {
        (**self).stopping()
    }

    fn wake(&self) -> Result<(), Stopped> {
        (**self).wake()
    }
}

impl WakeTarget for ActorRef<Wake> {
    fn stopping(&self) -> bool {
        self.get_status() >= ActorStatus::Draining
    }

    fn wake(&self) -> Result<(), Stopped> {
        self.send_message(Wake).map_err(|_| Stopped)
    }
}

/// The sending half the mailbox and every release slot share.
pub(crate) struct Shared<M, A = ActorRef<Wake>> {
    pub(crate) queue: mpsc::UnboundedSender<Envelope<M>>,
    pub(crate) scheduled: Arc<AtomicBool>,
    pub(crate) actor: A,
}

impl<M, A: WakeTarget> Shared<M, A> {
    /// Queues `envelope` and wakes the actor if no wake-up is pending.
    pub(crate) fn push(&self, envelope: Envelope<M>) -> Result<(), Stopped> {
        if self.actor.stopping() {
            return Err(Stopped);
        }
        self.queue.send(envelope).map_err(|_| Stopped)?;
        if !self.scheduled.swap(true, Ordering::AcqRel) {
            // A stopped actor drops its FIFO, and the envelope with it.
            self.actor.wake()?;
        }
        Ok(())
    }
}

impl<M> Shared<M> {
    pub(crate) fn actor_id(&self) -> ActorId {
        self.actor.get_id()
    }
}
