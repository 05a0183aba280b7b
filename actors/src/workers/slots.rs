//! [`TaskSlots`]: what the worker-pool and cleanup handles share — the
//! actor's mailbox, the slot budget (reserved for each task, lowered through
//! the handle), the startup limit that sized the actor's release slots, and
//! the close flag.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ractor::{ActorCell, Message, RpcReplyPort};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::budget::{Budget, InUse};
use crate::mailbox::Mailbox;
use crate::workers::tasks::{answer_within, WaitError};

/// The two questions both pool actors answer.
pub(crate) trait IdleQuery: Message + Sized {
    /// What `counts` reports.
    type Counts: Send + 'static;
    /// The message asking to be answered once no task runs.
    fn when_idle(reply: oneshot::Sender<Result<(), WaitError>>) -> Self;
    /// The message asking for the counts.
    fn counts(reply: RpcReplyPort<Self::Counts>) -> Self;
}

/// The shared face of a task-pool actor.
pub(crate) struct TaskSlots<M> {
    pub(crate) mailbox: Mailbox<M>,
    pub(crate) slots: Arc<Budget>,
    /// The startup limit, which sized the release slots.
    startup: u32,
    /// Set once by `close`; read by the handle and the actor.
    pub(crate) closed: Arc<AtomicBool>,
}

impl<M> Clone for TaskSlots<M> {
    fn clone(&self) -> Self {
        Self {
            mailbox: self.mailbox.clone(),
            slots: Arc::clone(&self.slots),
            startup: self.startup,
            closed: Arc::clone(&self.closed),
        }
    }
}

impl<M> fmt::Debug for TaskSlots<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskSlots")
            .field("mailbox", &self.mailbox)
            .field("slots", &self.slots)
            .field("closed", &self.closed.load(Ordering::Acquire))
            .finish()
    }
}

impl<M: IdleQuery> TaskSlots<M> {
    pub(crate) fn new(
        mailbox: Mailbox<M>,
        slots: Arc<Budget>,
        startup: u32,
        closed: Arc<AtomicBool>,
    ) -> Self {
        Self {
            mailbox,
            slots,
            startup,
            closed,
        }
    }

    /// Refuses every later task; accepted tasks run on. Idempotent; needs no
    /// mailbox room.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Waits until no task runs: every accepted task joined and its charges
    /// released.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the actor answers a waiter that left into the void.
    ///
    /// # Errors
    ///
    /// [`WaitError::Timeout`] when `deadline` passes first (nothing is
    /// aborted), [`WaitError::Busy`] when too many waiters wait,
    /// [`WaitError::Closed`] when the actor is gone.
    pub(crate) async fn when_idle(&self, deadline: Instant) -> Result<(), WaitError> {
        let (reply, answer) = oneshot::channel();
        self.mailbox
            .send_within(M::when_idle(reply), deadline)
            .await?;
        answer_within(answer, deadline).await?
    }

    /// What the actor counts.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Errors
    ///
    /// [`WaitError::Timeout`] or [`WaitError::Closed`].
    pub(crate) async fn counts(&self, deadline: Instant) -> Result<M::Counts, WaitError> {
        let (reply, answer) = oneshot::channel();
        self.mailbox
            .send_within(M::counts(reply.into()), deadline)
            .await?;
        answer_within(answer, deadline).await
    }

    /// Envelopes the actor has opened so far (wrapping).
    #[cfg(feature = "testing")]
    pub(crate) fn opened(&self) -> usize {
        self.mailbox.opened()
    }

    /// A quiescence probe: the counts question, answered once the actor has
    /// handled everything queued before it.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future loses only the answer.
    #[cfg(feature = "testing")]
    pub(crate) async fn probe(&self, deadline: Instant) -> crate::mailbox::Probed<()> {
        use crate::mailbox::Probed;
        match self.counts(deadline).await {
            Ok(_) => Probed::Answered(()),
            Err(WaitError::Closed) => Probed::Gone,
            Err(WaitError::Timeout | WaitError::Busy) => Probed::Late,
        }
    }

    /// Lowers (or restores) the slots; a limit above the startup limit,
    /// which sized the release slots, is taken as the startup limit.
    ///
    /// # Errors
    ///
    /// [`InUse`] when more slots are held than `limit`; the old limit stays.
    pub(crate) fn set_limit(&self, limit: u32) -> Result<(), InUse> {
        self.slots.set_limit(limit.min(self.startup))
    }

    /// The actor, for the supervisor to recognise its events.
    pub(crate) fn cell(&self) -> ActorCell {
        self.mailbox.actor().get_cell()
    }
}
