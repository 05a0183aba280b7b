//! [`CleanupPool`], the cleanup actor's handle: its only public face. It
//! reserves each cleanup's slots itself, so a submission never waits and
//! can be made from a `Drop`.

use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorStatus, SpawnErr};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::accounts::Accounts;
use crate::budget::{Budget, Charge};
use crate::cleanup::actor::{CleanupActor, CleanupArgs};
use crate::cleanup::outcome::Orphan;
use crate::cleanup::{
    mailbox_bound, Cleanup, CleanupError, CleanupFailed, CleanupRefused, CleanupTicket,
    CloseFailure, Msg,
};
use crate::limits::Limits;
use crate::mailbox::{MailboxSlots, ReleaseSlot};
use crate::workers::slots::TaskSlots;

/// The handle of the cleanup actor. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct CleanupPool {
    /// Mailbox, cleanup slots (reserved here, freed by the actor after
    /// joins), startup limit and close flag.
    pool: TaskSlots<Msg>,
    accounts: Arc<Accounts>,
}

/// `close`, `when_idle`, `counts`, `set_limit` and `cell` are the shared
/// [`TaskSlots`] operations.
impl std::ops::Deref for CleanupPool {
    type Target = TaskSlots<Msg>;

    fn deref(&self) -> &TaskSlots<Msg> {
        &self.pool
    }
}

/// What a reserved cleanup holds before it runs: its cleanup slot and the
/// release slots of its run and finish messages.
struct Reserved {
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
        accounts: Arc<Accounts>,
        runtime: Handle,
        supervisor: ActorCell,
    ) -> Result<CleanupPool, SpawnErr> {
        let slots = MailboxSlots::new(mailbox_bound(limits));
        let closed = Arc::new(AtomicBool::new(false));
        let args = CleanupArgs {
            accounts: Arc::clone(&accounts),
            runtime: runtime.clone(),
            closed: Arc::clone(&closed),
        };
        #[allow(
            clippy::disallowed_methods,
            reason = "starts the cleanup actor on the supplied runtime, under the registry's supervision"
        )]
        let (actor, _join) = runtime
            .spawn(Actor::spawn_linked(None, CleanupActor, args, supervisor))
            .await
            .map_err(|e| SpawnErr::StartupFailed(Box::new(e)))??;
        Ok(CleanupPool {
            pool: TaskSlots::new(
                slots.attach(actor),
                Budget::new("cleanup_jobs", limits.cleanup_jobs),
                limits.cleanup_jobs,
                closed,
            ),
            accounts,
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
        match self.reserve() {
            Ok(reserved) => Ok(self.launch(reserved, resource, charge)),
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
        match self.reserve() {
            Ok(reserved) => {
                let (resource, charge) = failed.into_parts();
                Ok(self.launch(reserved, resource, charge))
            }
            Err(error) => Err((failed, error)),
        }
    }

    fn reserve(&self) -> Result<Reserved, CleanupError> {
        let stopped = self.mailbox.actor().get_status() >= ActorStatus::Draining;
        if self.is_closed() || stopped {
            return Err(CleanupError::Closed);
        }
        let slot = self.slots.try_reserve(1)?;
        // Two release slots per cleanup slot: running out is a sizing bug.
        let run = self.mailbox.reserve_release().ok_or(CleanupError::Busy)?;
        let finish = self.mailbox.reserve_release().ok_or(CleanupError::Busy)?;
        Ok(Reserved { slot, run, finish })
    }

    fn launch<T: Cleanup>(
        &self,
        reserved: Reserved,
        resource: T,
        charge: Box<dyn Send>,
    ) -> CleanupTicket<T> {
        let (outcome, ticket) = oneshot::channel();
        let pending = Pending { resource, charge };
        let task = Box::pin(close_then_release(
            pending,
            outcome,
            Arc::clone(&self.accounts),
        ));
        let Reserved { slot, run, finish } = reserved;
        // Fails only if the actor stopped since `reserve`: the unrun task is
        // dropped with it, the resource before its charge.
        let _ = run.send(Msg::Run { task, slot, finish });
        CleanupTicket::new(ticket)
    }
}

/// The cleanup task: close, then drop the charge; or deliver the failure to
/// the ticket — and if nobody waits any more, yield it to the actor.
async fn close_then_release<T: Cleanup>(
    pending: Pending<T>,
    outcome: oneshot::Sender<Result<(), CleanupFailed<T>>>,
    accounts: Arc<Accounts>,
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
            let failed = CleanupFailed::new(resource, charge, reason, accounts);
            match outcome.send(Err(failed)) {
                Err(Err(failed)) => Some(Orphan::new(failed)),
                Ok(()) | Err(Ok(())) => None,
            }
        }
    }
}
