//! [`RegistryHandle`]: the registry actor's typed handle, the only code
//! that builds its messages. [`ProviderPools`](crate::ProviderPools) holds
//! one; the registry gives each epoch a [`DrainNotice`] built here.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorStatus};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::accounts::Accounts;
use crate::epoch::DrainNotice;
use crate::error::{InstallError, LowerError, SpawnError, StartError};
use crate::install::{InstallReceipt, Installation};
use crate::limits::Limits;
use crate::mailbox::{Mailbox, MailboxError, MailboxSlots};
use crate::registry::actor::{Controls, RegistryActor, RegistryArgs};
use crate::registry::{mailbox_bound, Directory, Msg};
use crate::scheduler;
use crate::supervision::RestartPolicy;

/// The registry actor's handle. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct RegistryHandle {
    mailbox: Mailbox<Msg>,
}

/// What a registry is spawned with.
pub(crate) struct RegistrySpec {
    pub(crate) limits: Limits,
    pub(crate) accounts: Arc<Accounts>,
    pub(crate) directory: Arc<Directory>,
    pub(crate) queue: Arc<scheduler::Core>,
    pub(crate) runtime: Handle,
    pub(crate) restart: RestartPolicy,
}

impl RegistryHandle {
    /// The handle of the registry behind `mailbox`.
    pub(super) fn new(mailbox: Mailbox<Msg>) -> Self {
        Self { mailbox }
    }

    /// Spawns the registry on the spec's runtime (linked to `supervisor`
    /// when given) and waits for its control actors.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: a dropped future may leave a registry running with
    /// no handle, until its supervisor or runtime stops it.
    pub(crate) async fn spawn(
        spec: RegistrySpec,
        supervisor: Option<ActorCell>,
    ) -> Result<(Self, Controls), StartError> {
        let spawn_failed = |cause: SpawnError| StartError::Spawn { cause };
        let slots = MailboxSlots::new(mailbox_bound(spec.limits.retained_configurations));
        let (controls_ready, controls) = oneshot::channel();
        let runtime = spec.runtime.clone();
        let args = RegistryArgs {
            limits: spec.limits,
            accounts: spec.accounts,
            directory: spec.directory,
            slots: slots.clone(),
            queue: spec.queue,
            controls_ready,
            runtime: spec.runtime,
            restart: spec.restart,
        };
        #[allow(
            clippy::disallowed_methods,
            reason = "starts the registry actor on the supplied runtime"
        )]
        let spawned = runtime
            .spawn(async move {
                match supervisor {
                    Some(supervisor) => {
                        Actor::spawn_linked(None, RegistryActor, args, supervisor).await
                    }
                    None => Actor::spawn(None, RegistryActor, args).await,
                }
            })
            .await;
        let (actor, _join) = match spawned {
            Ok(Ok(started)) => started,
            Ok(Err(err)) => return Err(spawn_failed(err.into())),
            Err(err) => return Err(spawn_failed(err.into())),
        };
        let controls = controls
            .await
            .map_err(|_| spawn_failed(SpawnError::Controls))?;
        let handle = Self::new(slots.attach(actor));
        Ok((handle, controls))
    }

    /// The registry actor, for a host that supervises or monitors it.
    pub(crate) fn cell(&self) -> ActorCell {
        self.mailbox.actor().get_cell()
    }

    /// The registry actor's status.
    pub(crate) fn status(&self) -> ActorStatus {
        self.mailbox.actor().get_status()
    }

    /// Waits until the registry actor has stopped, at most until
    /// `deadline` (and at least a millisecond).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only waits.
    pub(crate) async fn stopped(&self, deadline: Instant) {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let _ = self
            .mailbox
            .actor()
            .wait(Some(remaining.max(Duration::from_millis(1))))
            .await;
    }

    /// Installs or replaces a provider's epoch; refused `Busy` at once when
    /// the mailbox is full.
    ///
    /// # Cancel safety
    ///
    /// Once queued the installation completes or is refused; a dropped
    /// future loses only the answer.
    pub(crate) async fn install(
        &self,
        installation: Installation,
    ) -> Result<InstallReceipt, InstallError> {
        let (reply, answer) = oneshot::channel();
        let msg = Msg::Install {
            installation: Box::new(installation),
            reply: reply.into(),
        };
        self.mailbox.try_send(msg).map_err(|err| match err {
            MailboxError::Busy(_) | MailboxError::Timeout(_) => InstallError::Busy,
            MailboxError::Closed => InstallError::Closed,
        })?;
        answer.await.map_err(|_| InstallError::Closed)?
    }

    /// Lowers the limits, all or nothing; refused `Busy` at once when the
    /// mailbox is full.
    ///
    /// # Cancel safety
    ///
    /// Once queued the change is applied or refused as a whole; a dropped
    /// future loses only the answer.
    pub(crate) async fn lower_limits(&self, limits: Limits) -> Result<(), LowerError> {
        let (reply, answer) = oneshot::channel();
        let msg = Msg::LowerLimits {
            limits,
            reply: reply.into(),
        };
        self.mailbox.try_send(msg).map_err(|err| match err {
            MailboxError::Busy(_) | MailboxError::Timeout(_) => LowerError::Busy,
            MailboxError::Closed => LowerError::Closed,
        })?;
        answer.await.map_err(|_| LowerError::Closed)?
    }

    /// Retires every epoch and waits for the answer; false if the registry
    /// had no room by `deadline` or is gone.
    ///
    /// # Cancel safety
    ///
    /// Once queued the retirement happens; a dropped future stops only the
    /// waiting.
    pub(crate) async fn retire(&self, deadline: Instant) -> bool {
        let (reply, done) = oneshot::channel();
        let msg = Msg::Retire {
            reply: reply.into(),
        };
        if self.mailbox.send_within(msg, deadline).await.is_err() {
            return false;
        }
        done.await.is_ok()
    }

    /// Starts the shutdown; the receiver is answered once every epoch and
    /// request has been released. `None` if the registry had no room by
    /// `deadline` or is gone.
    ///
    /// # Cancel safety
    ///
    /// Once queued the shutdown goes on; a dropped future may lose the
    /// receiver only.
    pub(crate) async fn shutdown(&self, deadline: Instant) -> Option<oneshot::Receiver<()>> {
        let (reply, done) = oneshot::channel();
        let msg = Msg::Shutdown {
            reply: reply.into(),
        };
        self.mailbox.send_within(msg, deadline).await.ok()?;
        Some(done)
    }

    /// Tells the registry the worker and cleanup pools may have become
    /// idle, so it re-checks its shutdown.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future has queued nothing or the whole notice.
    pub(crate) async fn control_idle(&self, deadline: Instant) {
        let _ = self.mailbox.send_within(Msg::ControlIdle, deadline).await;
    }

    /// Reserves the room for one retired epoch's drain notice, sent when
    /// its last lease is gone; `None` when every release slot is held.
    pub(crate) fn reserve_drain_notice(&self) -> Option<DrainNotice> {
        let slot = self.mailbox.reserve_release()?;
        Some(DrainNotice::new(move |instance| {
            // A stopped registry has nothing left to collect the epoch for.
            let _ = slot.send(Msg::EpochDrained { instance });
        }))
    }

    /// Envelopes the registry has opened so far (wrapping).
    #[cfg(feature = "testing")]
    pub(crate) fn opened(&self) -> usize {
        self.mailbox.opened()
    }

    /// A quiescence probe, answered once the registry has handled
    /// everything queued before it, with a prober for every epoch actor it
    /// believes running.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future loses only the answer.
    #[cfg(feature = "testing")]
    pub(crate) async fn probe(
        &self,
        deadline: Instant,
    ) -> crate::mailbox::Probed<Vec<crate::epoch::EpochProber>> {
        let (reply, answer) = oneshot::channel();
        crate::mailbox::probe(&self.mailbox, Msg::Probe { reply }, answer, deadline).await
    }

    /// The control owner's periodic reclaim tick; false once the registry
    /// is gone. A full mailbox skips the tick.
    pub(crate) fn reclaim_tick(&self) -> bool {
        !matches!(
            self.mailbox.try_send(Msg::ReclaimTick),
            Err(MailboxError::Closed)
        )
    }
}
