//! [`Envelope`]: a message and the mailbox slot it occupies, the one thing
//! every route of the crate carries to an actor.
//!
//! Invariants:
//! - An envelope returns its slot exactly once: when the actor opens it, or
//!   when it is dropped undelivered (the slot's own `Drop`).
//! - Only an actor's own ticks travel without a slot.

use std::fmt;

use crate::pool::Slot;

/// A message together with the mailbox slot it occupies, if any.
pub struct Envelope<M> {
    pub(crate) slot: Option<Slot>,
    pub(crate) msg: M,
}

impl<M> Envelope<M> {
    /// A message an actor sends itself (a timer tick): it carries no slot.
    ///
    /// Only for an actor's own scheduled messages, each duty keeping at most
    /// one in flight, so that ticks are bounded by construction; anything a
    /// handle sends goes through [`Mailbox`](crate::Mailbox) and takes a slot.
    pub fn tick(msg: M) -> Self {
        Self { slot: None, msg }
    }

    /// Takes the message out, returning its slot to the sender side.
    pub fn open(self) -> M {
        self.msg
    }
}

impl<M> fmt::Debug for Envelope<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Envelope")
            .field("tick", &self.slot.is_none())
            .finish_non_exhaustive()
    }
}
