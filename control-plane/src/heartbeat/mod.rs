//! The heartbeat actor: keeps one registration alive.
//!
//! It registers when it starts, heartbeats every [`HeartbeatPolicy`]
//! interval, registers again when the store forgot the instance (expiry,
//! restart), and deregisters when stopped through [`Heartbeat::stop`].
//!
//! Invariants:
//! - At most one tick is in flight; callers reach the actor through a
//!   bounded mailbox ([`HeartbeatPolicy::mailbox`] slots).
//! - The interval is shorter than the registration's time to live, so one
//!   failed heartbeat does not let it expire.
//! - A heartbeat that fails is counted, never retried in a loop: the next
//!   tick is the retry.
//!
//! Shutdown: [`Heartbeat::stop`] deregisters, answers, then stops the actor;
//! dropping every handle leaves the actor running until its supervisor (or
//! the runtime) stops it, and the registration then expires by itself.

mod actor;
mod policy;

use std::sync::Arc;

use provider_pools_mailbox::{Mailbox, MailboxBound, MailboxSlots};
use ractor::{Actor, ActorCell};
use tokio::task::JoinHandle;

pub use policy::{HeartbeatPolicy, HeartbeatStatus};

use crate::call::{call, ActorCallError};
use crate::client::ControlPlane;
use crate::error::ControlPlaneError;
use crate::presence::Registration;
use actor::{Args, HeartbeatActor, Msg};

/// The handle of a heartbeat actor.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    mailbox: Mailbox<Msg>,
}

impl Heartbeat {
    /// Starts the actor for `registration`; it registers at once.
    ///
    /// The first registration runs inside this call (the actor's start-up,
    /// which ractor runs in the caller's task); its failure does not fail
    /// the start — it is counted in [`HeartbeatStatus`] and the next tick
    /// registers again.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it completes leaves no actor running:
    /// the actor's loop is spawned only after its start-up. A first
    /// registration dropped after it was sent may still apply remotely;
    /// it then expires after its time to live.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] when the policy's interval is not
    /// shorter than the registration's time to live, or the actor could
    /// not start ([`ControlPlaneError::Protocol`] names the reason).
    pub async fn start(
        client: Arc<dyn ControlPlane>,
        registration: Registration,
        policy: HeartbeatPolicy,
    ) -> Result<(Self, JoinHandle<()>), ControlPlaneError> {
        Self::spawn(client, registration, policy, None).await
    }

    /// As [`start`](Self::start), linked to a host's supervisor.
    ///
    /// # Cancel safety
    ///
    /// As [`start`](Self::start).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_linked(
        client: Arc<dyn ControlPlane>,
        registration: Registration,
        policy: HeartbeatPolicy,
        supervisor: ActorCell,
    ) -> Result<(Self, JoinHandle<()>), ControlPlaneError> {
        Self::spawn(client, registration, policy, Some(supervisor)).await
    }

    async fn spawn(
        client: Arc<dyn ControlPlane>,
        registration: Registration,
        policy: HeartbeatPolicy,
        supervisor: Option<ActorCell>,
    ) -> Result<(Self, JoinHandle<()>), ControlPlaneError> {
        policy.check(registration.ttl())?;
        let args = Args {
            client,
            registration,
            policy,
        };
        let spawned = match supervisor {
            Some(supervisor) => Actor::spawn_linked(None, HeartbeatActor, args, supervisor).await,
            None => Actor::spawn(None, HeartbeatActor, args).await,
        };
        let (actor, join) = spawned.map_err(|error| {
            ControlPlaneError::Protocol(format!("heartbeat actor did not start: {error}"))
        })?;
        Ok((
            Self {
                mailbox: MailboxSlots::new(MailboxBound {
                    messages: policy.mailbox,
                    releases: 0,
                })
                .attach(actor),
            },
            join,
        ))
    }

    /// What the actor has done so far.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future drops the answer only.
    ///
    /// # Errors
    ///
    /// [`ActorCallError::Busy`] when the mailbox is full,
    /// [`ActorCallError::Stopped`] when the actor is gone.
    pub async fn status(&self) -> Result<HeartbeatStatus, ActorCallError> {
        call(&self.mailbox, |reply| Msg::Status { reply }).await
    }

    /// Deregisters, then stops the actor; answers the deregistration's
    /// outcome.
    ///
    /// # Cancel safety
    ///
    /// Once sent, the stop proceeds even if this future is dropped.
    ///
    /// # Errors
    ///
    /// [`ActorCallError`] when the stop could not be delivered; the inner
    /// result is the deregistration's.
    pub async fn stop(&self) -> Result<Result<(), ControlPlaneError>, ActorCallError> {
        call(&self.mailbox, |reply| Msg::Stop { reply }).await
    }

    /// The actor, for hosts that supervise or monitor it.
    pub fn actor(&self) -> ActorCell {
        self.mailbox.actor().get_cell()
    }
}
