//! The coordinator actor: campaigns for leases on behalf of one node and
//! publishes its [`Leadership`] of each.
//!
//! A campaign acquires its lease through
//! [`acquire_guarded`](crate::client::acquire_guarded) (unknown outcomes are
//! settled by reading back), renews every `renew_every` while leading, and
//! retries every `retry_every` while another node leads. Leadership is
//! published on a `watch` channel as soon as it changes: `Leader` carries
//! the guard's `safe_until`, so a subscriber never acts past it even when
//! renewals hang.
//!
//! Invariants:
//! - At most `max_campaigns` campaigns, each with at most one step in
//!   flight; callers reach the actor through a bounded mailbox.
//! - A leader steps down (publishes `Follower`) no later than `safe_until`
//!   when renewals fail, and at once when a renewal is refused.
//! - No lease mutation is replayed: a failed renewal is followed by a
//!   read-back or by the guard running out, never by a blind retry.
//!
//! Shutdown: [`Coordinator::stop`] resigns every campaign (releasing held
//! leases), answers each release's outcome, then stops the actor. A
//! coordinator that dies without stopping releases nothing: its leases
//! expire after their time to live and followers take over with larger
//! tokens.

mod actor;
mod campaign;
mod config;

use std::sync::Arc;

use provider_pools_mailbox::{Mailbox, MailboxBound, MailboxSlots};
use ractor::{Actor, ActorCell};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use config::{CoordinatorConfig, Leadership};

use crate::call::{call, ActorCallError};
use crate::client::ControlPlane;
use crate::error::ControlPlaneError;
use crate::lease::LeaseKey;
use actor::{Args, CoordinatorActor, Msg};

/// The handle of a coordinator actor.
#[derive(Debug, Clone)]
pub struct Coordinator {
    mailbox: Mailbox<Msg>,
}

/// A coordinator call that reached the actor, or why it did not.
pub type CoordinatorResult<T> = Result<Result<T, ControlPlaneError>, ActorCallError>;

impl Coordinator {
    /// Starts a coordinator for `config.node`. It campaigns for nothing
    /// until [`campaign`](Self::campaign) is called.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: start-up makes no control-plane call, and a future
    /// dropped before it completes leaves no actor running (ractor spawns
    /// the actor's loop only after its start-up).
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming the configuration field that is
    /// out of bounds; [`ControlPlaneError::Protocol`] when the actor could
    /// not start.
    pub async fn start(
        client: Arc<dyn ControlPlane>,
        config: CoordinatorConfig,
    ) -> Result<(Self, JoinHandle<()>), ControlPlaneError> {
        Self::spawn(client, config, None).await
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
        config: CoordinatorConfig,
        supervisor: ActorCell,
    ) -> Result<(Self, JoinHandle<()>), ControlPlaneError> {
        Self::spawn(client, config, Some(supervisor)).await
    }

    async fn spawn(
        client: Arc<dyn ControlPlane>,
        config: CoordinatorConfig,
        supervisor: Option<ActorCell>,
    ) -> Result<(Self, JoinHandle<()>), ControlPlaneError> {
        config.check()?;
        let slots = config.mailbox;
        let args = Args { client, config };
        let spawned = match supervisor {
            Some(supervisor) => Actor::spawn_linked(None, CoordinatorActor, args, supervisor).await,
            None => Actor::spawn(None, CoordinatorActor, args).await,
        };
        let (actor, join) = spawned.map_err(|error| {
            ControlPlaneError::Protocol(format!("coordinator actor did not start: {error}"))
        })?;
        Ok((
            Self {
                mailbox: MailboxSlots::new(MailboxBound {
                    messages: slots,
                    releases: 0,
                })
                .attach(actor),
            },
            join,
        ))
    }

    /// Campaigns for `key` (or joins the running campaign) and subscribes
    /// to this node's leadership of it. The first attempt has been made
    /// when this returns.
    ///
    /// # Cancel safety
    ///
    /// Once sent, the campaign starts even if this future is dropped.
    ///
    /// # Errors
    ///
    /// [`ActorCallError`] when the actor is busy or gone;
    /// `LimitExceeded` when `max_campaigns` run already.
    pub async fn campaign(&self, key: LeaseKey) -> CoordinatorResult<watch::Receiver<Leadership>> {
        call(&self.mailbox, |reply| Msg::Campaign { key, reply }).await
    }

    /// Ends the campaign for `key`, releasing the lease if held.
    ///
    /// # Cancel safety
    ///
    /// Once sent, the resignation proceeds even if this future is dropped.
    ///
    /// # Errors
    ///
    /// [`ActorCallError`] when the actor is busy or gone; the release's own
    /// error otherwise (the lease then expires by itself).
    pub async fn resign(&self, key: LeaseKey) -> CoordinatorResult<()> {
        call(&self.mailbox, |reply| Msg::Resign { key, reply }).await
    }

    /// Every campaign's leadership, ordered by lease.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Errors
    ///
    /// [`ActorCallError`] when the actor is busy or gone.
    pub async fn status(&self) -> Result<Vec<(LeaseKey, Leadership)>, ActorCallError> {
        call(&self.mailbox, |reply| Msg::Status { reply }).await
    }

    /// Resigns every campaign, then stops the actor.
    ///
    /// # Cancel safety
    ///
    /// Once sent, the stop proceeds even if this future is dropped.
    ///
    /// # Errors
    ///
    /// [`ActorCallError`] when the stop could not be delivered; each
    /// release's outcome otherwise.
    pub async fn stop(
        &self,
    ) -> Result<Vec<(LeaseKey, Result<(), ControlPlaneError>)>, ActorCallError> {
        call(&self.mailbox, |reply| Msg::Stop { reply }).await
    }

    /// The actor, for hosts that supervise or monitor it.
    pub fn actor(&self) -> ActorCell {
        self.mailbox.actor().get_cell()
    }
}
