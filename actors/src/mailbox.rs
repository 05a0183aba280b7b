//! The engine's bounded mailboxes: `provider-pools-mailbox`, which the
//! control plane uses too, and the engine's quiescence probe on top of it.
//!
//! Every actor of the engine is reached only through a [`Mailbox`] or a
//! [`BatchMailbox`]; the rule, the two slot pools and their invariants are
//! that crate's doc.

#[cfg(test)]
pub(crate) use provider_pools_mailbox::Stopped;
pub(crate) use provider_pools_mailbox::{
    batch, BatchInbox, BatchMailbox, Envelope, Mailbox, MailboxBound, MailboxError, MailboxSlots,
    ReleaseSlot, Wake, WakeTarget,
};

/// What a quiescence probe heard (`ProviderPools::wait_quiescent`).
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

/// Sends a probe `msg` through `mailbox`'s ordinary message slots, waiting
/// for room until `deadline`, then waits for its `answer` until `deadline`.
///
/// # Cancel safety
///
/// Cancel safe: a dropped future has queued nothing, or a probe whose
/// answer goes unheard.
#[cfg(feature = "testing")]
pub(crate) async fn probe<M: ractor::Message, T>(
    mailbox: &Mailbox<M>,
    msg: M,
    answer: tokio::sync::oneshot::Receiver<T>,
    deadline: tokio::time::Instant,
) -> Probed<T> {
    match mailbox.send_within(msg, deadline).await {
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
