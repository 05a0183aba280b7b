//! Calls to the control plane's actors: a request-reply over the actor's
//! bounded mailbox (`provider-pools-mailbox`, the one the engine uses too),
//! and [`ActorCallError`].
//!
//! Each actor is reached through a [`Mailbox`] of message slots only (no
//! release slots: it makes no grants); the timer ticks it schedules for
//! itself are slot-less [`Envelope::tick`](provider_pools_mailbox::Envelope::tick)s,
//! one per duty in flight.
//!
//! Invariants:
//! - Messages queued ≤ slots + the actor's own ticks.
//! - A full mailbox answers [`ActorCallError::Busy`] at once; nothing waits.

use provider_pools_mailbox::{Mailbox, MailboxError};
use ractor::Message;
use tokio::sync::oneshot;

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

impl<M> From<MailboxError<M>> for ActorCallError {
    /// The refused message is dropped; a deadline that passed (the control
    /// plane never waits for a slot) reads as full.
    fn from(error: MailboxError<M>) -> Self {
        match error {
            MailboxError::Busy(_) | MailboxError::Timeout(_) => Self::Busy,
            MailboxError::Closed => Self::Stopped,
        }
    }
}

/// Sends the message `make` builds around a reply sender if a slot is free,
/// and waits for the reply.
///
/// # Cancel safety
///
/// Once sent, the message is handled even if this future is dropped; only
/// the answer is lost.
///
/// # Errors
///
/// [`ActorCallError::Busy`] at once when every slot is taken;
/// [`ActorCallError::Stopped`] when the actor is gone or stops unanswered.
pub(crate) async fn call<M: Message, T>(
    mailbox: &Mailbox<M>,
    make: impl FnOnce(oneshot::Sender<T>) -> M,
) -> Result<T, ActorCallError> {
    let (reply, answer) = oneshot::channel();
    mailbox.try_send(make(reply))?;
    answer.await.map_err(|_| ActorCallError::Stopped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_message_maps_to_busy_and_a_stopped_actor_to_stopped() {
        assert_eq!(
            ActorCallError::from(MailboxError::Busy(())),
            ActorCallError::Busy
        );
        assert_eq!(
            ActorCallError::from(MailboxError::Timeout(())),
            ActorCallError::Busy
        );
        assert_eq!(
            ActorCallError::from(MailboxError::<()>::Closed),
            ActorCallError::Stopped
        );
    }
}
