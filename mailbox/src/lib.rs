//! Bounded mailboxes on top of ractor's unbounded ones, for the engine and
//! the control plane alike.
//!
//! ractor queues without limit, so an actor is reached only through a
//! [`Mailbox`]: a sender first takes a slot from one of the actor's slot
//! pools (a lock-free counter, [`SlotPool`]), the slot travels inside the
//! [`Envelope`] and is returned when the actor opens it. Two pools of slots
//! exist per actor, sized by its [`MailboxBound`]:
//!
//! - *message* slots for ordinary requests: a full pool answers
//!   [`MailboxError::Busy`] at once ([`Mailbox::try_send`]), or waits within a
//!   deadline for internal senders ([`Mailbox::send_within`]);
//! - *release* slots, taken when a grant is made and held by the grant, so the
//!   grant's `Drop` can always deliver its release message
//!   ([`ReleaseSlot::send`]) even while the message slots are exhausted. An
//!   actor that makes no grants has none.
//!
//! A message an actor schedules for itself (a timer tick,
//! [`Envelope::tick`]) carries no slot: each duty keeps at most one tick in
//! flight, so ticks are bounded by construction.
//!
//! A [`Mailbox`] sends one ractor message per envelope. A hot actor takes a
//! [`BatchMailbox`] instead ([`batch`]): the same two pools, but envelopes go
//! into a lock-free FIFO that the actor drains whole per [`Wake`].
//!
//! Invariants:
//! - Messages queued in ractor's mailbox ≤ message slots + release slots +
//!   the actor's own ticks.
//! - A release never waits and never fails for lack of room; it fails only if
//!   the actor is gone ([`ActorGone`]).
//! - A refused message is handed back ([`MailboxError`]).
//! - A slot is returned exactly once: when the actor opens the envelope, or
//!   when the envelope is dropped undelivered.
//!
//! The lock-free parts are model-checked with loom: every `--cfg loom`
//! build runs them on loom's atomics (module `sync`), this crate's models
//! and those of a crate built on it (`scripts/test` runs both).

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

mod batch;
mod envelope;
mod fifo;
mod mailbox;
mod pool;
mod sync;

/// The loom model runner of every model check built on this crate.
#[cfg(loom)]
#[doc(hidden)]
pub use sync::model as loom_model;

pub use batch::{batch, BatchInbox, BatchMailbox, BatchSlots, DRAIN_LIMIT};
pub use envelope::Envelope;
pub use fifo::{Stopped, Wake, WakeTarget};
pub use mailbox::{ActorGone, Mailbox, MailboxBound, MailboxError, MailboxSlots, ReleaseSlot};
pub use pool::{Slot, SlotPool};
