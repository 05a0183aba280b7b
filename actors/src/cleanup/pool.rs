//! [`CleanupPool`], the cleanup actor's handle: its only public face. It
//! admits cleanups itself, so a submission never waits and can be made
//! from a `Drop`.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorStatus, SpawnErr};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::budget::{Budget, Charge, InUse};
use crate::cleanup::actor::{CleanupActor, CleanupArgs};
use crate::cleanup::outcome::Orphan;
use crate::cleanup::{
    mailbox_bound, Cleanup, CleanupCounts, CleanupError, CleanupFailed, CleanupRefused,
    CleanupTicket, CloseFailure, Msg,
};
use crate::ledger::Ledger;
use crate::limits::Limits;
use crate::mailbox::{Mailbox, MailboxSlots, ReleaseSlot};
use crate::workers::tasks::{answer_within, WaitError};

/// The handle of the cleanup actor. Cheap to clone.
#[derive(Debug, Clone)]
#[cfg_attr(not(test), allow(dead_code))] // wired by the registry integration
pub(crate) struct CleanupPool {
    mailbox: Mailbox<Msg>,
    /// The cleanup slots, reserved here and freed by the actor after joins.
    slots: Arc<Budget>,
    /// The startup limit, which sized the release slots.
    startup: u32,
    closed: Arc<AtomicBool>,
    ledger: Arc<Ledger>,
}

/// What an admitted cleanup holds before it runs.
struct Admission {
    slot: Charge,
    run: ReleaseSlot<Msg>,
    finish: ReleaseSlot<Msg>,
}

/// A submitted resource and its charge. Dropped unrun (the runtime or the
/// actor went away), the resource goes before its charge: field order.
struct Pending<T> {
    resource: T,
    charge: Box<dyn Send>,
}

/// A close in progress. Dropped mid-close, the close future — and the
/// resource it owns — goes before the charge: field order.
struct Closing<F> {
    close: Pin<Box<F>>,
    charge: Box<dyn Send>,
}

#[cfg_attr(not(test), allow(dead_code))] // wired by the registry integration
impl CleanupPool {
    /// Spawns the cleanup actor on `runtime`, linked to `supervisor`, with
    /// `limits.cleanup_jobs` slots; every close runs on `runtime`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future after the actor started leaves it running,
    /// linked to `supervisor`, with no handle: the supervisor should stop it.
    ///
    /// # Errors
    ///
    /// The [`SpawnErr`] of ractor, or `StartupFailed` if the runtime dropped
    /// the spawning task.
    pub(crate) async fn spawn_linked(
        limits: &Limits,
        ledger: Arc<Ledger>,
        runtime: Handle,
        supervisor: ActorCell,
    ) -> Result<CleanupPool, SpawnErr> {
        let slots = MailboxSlots::new(mailbox_bound(limits));
        let args = CleanupArgs {
            ledger: Arc::clone(&ledger),
            runtime: runtime.clone(),
        };
        let (actor, _join) = runtime
            .spawn(Actor::spawn_linked(None, CleanupActor, args, supervisor))
            .await
            .map_err(|e| SpawnErr::StartupFailed(Box::new(e)))??;
        Ok(CleanupPool {
            mailbox: slots.attach(actor),
            slots: Budget::new("cleanup_jobs", limits.cleanup_jobs),
            startup: limits.cleanup_jobs,
            closed: Arc::new(AtomicBool::new(false)),
            ledger,
        })
    }

    /// Destroys `resource`, then drops `charge` — any owned value that pays
    /// for the resource (a budget charge, a connection permit).
    ///
    /// Decided at once, without waiting: a cleanup slot is reserved, or
    /// everything is handed back.
    ///
    /// # Errors
    ///
    /// [`CleanupRefused`] with the resource and its charge, untouched:
    /// [`CleanupError::Capacity`] when every cleanup slot is taken,
    /// [`CleanupError::Closed`] after close or when the actor is gone.
    pub(crate) fn submit<T: Cleanup>(
        &self,
        resource: T,
        charge: impl Send + 'static,
    ) -> Result<CleanupTicket<T>, CleanupRefused<T>> {
        let charge: Box<dyn Send> = Box::new(charge);
        match self.admit() {
            Ok(admission) => Ok(self.launch(admission, resource, charge)),
            Err(error) => Err(CleanupRefused {
                resource,
                charge,
                error,
            }),
        }
    }

    /// Tries to destroy a resource whose close failed before (after the
    /// caller's repair, say). It stays counted as failed until accepted.
    ///
    /// # Errors
    ///
    /// As [`CleanupPool::submit`]; the failure comes back unchanged.
    pub(crate) fn resubmit<T: Cleanup>(
        &self,
        failed: CleanupFailed<T>,
    ) -> Result<CleanupTicket<T>, (CleanupFailed<T>, CleanupError)> {
        match self.admit() {
            Ok(admission) => {
                let (resource, charge) = failed.into_parts();
                Ok(self.launch(admission, resource, charge))
            }
            Err(error) => Err((failed, error)),
        }
    }

    fn admit(&self) -> Result<Admission, CleanupError> {
        let stopped = self.mailbox.actor().get_status() >= ActorStatus::Draining;
        if self.closed.load(Ordering::Acquire) || stopped {
            return Err(CleanupError::Closed);
        }
        let slot = self.slots.try_reserve(1)?;
        // Two release slots per cleanup slot: running out is a sizing bug.
        let run = self.mailbox.reserve_release().ok_or(CleanupError::Busy)?;
        let finish = self.mailbox.reserve_release().ok_or(CleanupError::Busy)?;
        Ok(Admission { slot, run, finish })
    }

    fn launch<T: Cleanup>(
        &self,
        admission: Admission,
        resource: T,
        charge: Box<dyn Send>,
    ) -> CleanupTicket<T> {
        let (outcome, ticket) = oneshot::channel();
        let pending = Pending { resource, charge };
        let task = Box::pin(close_then_release(
            pending,
            outcome,
            Arc::clone(&self.ledger),
        ));
        let Admission { slot, run, finish } = admission;
        // Fails only if the actor stopped since `admit`: the unrun task is
        // dropped with it, the resource before its charge.
        let _ = run.send(Msg::Run { task, slot, finish });
        CleanupTicket::new(ticket)
    }

    /// Refuses every later submission with [`CleanupError::Closed`];
    /// accepted cleanups run on. Idempotent; needs no mailbox room.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Waits until no cleanup runs; failures the actor keeps do not count.
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
            .send_within(Msg::WhenIdle { reply }, deadline)
            .await?;
        answer_within(answer, deadline).await?
    }

    /// Running cleanups and kept failures, as the actor counts them.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Errors
    ///
    /// [`WaitError::Timeout`] or [`WaitError::Closed`].
    pub(crate) async fn counts(&self, deadline: Instant) -> Result<CleanupCounts, WaitError> {
        let (reply, answer) = oneshot::channel();
        let msg = Msg::Counts {
            reply: reply.into(),
        };
        self.mailbox.send_within(msg, deadline).await?;
        answer_within(answer, deadline).await
    }

    /// Lowers (or restores) the cleanup slots; a limit above the startup
    /// limit, which sized the release slots, is taken as the startup limit.
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

/// The cleanup task: close, then drop the charge; or deliver the failure to
/// the ticket — and if nobody waits any more, yield it to the actor.
async fn close_then_release<T: Cleanup>(
    pending: Pending<T>,
    outcome: oneshot::Sender<Result<(), CleanupFailed<T>>>,
    ledger: Arc<Ledger>,
) -> Option<Orphan> {
    let Pending { resource, charge } = pending;
    let mut closing = Closing {
        close: Box::pin(resource.close()),
        charge,
    };
    let result = (&mut closing.close).await;
    let Closing { close, charge } = closing;
    drop(close);
    match result {
        Ok(()) => {
            drop(charge);
            let _ = outcome.send(Ok(()));
            None
        }
        Err(CloseFailure { resource, reason }) => {
            let failed = CleanupFailed::new(resource, charge, reason, ledger);
            match outcome.send(Err(failed)) {
                Err(Err(failed)) => Some(Orphan::new(failed)),
                Ok(()) | Err(Ok(())) => None,
            }
        }
    }
}
