//! [`SchedulerHandle`]: the scheduler actor's typed handle, the only code
//! that builds its messages.
//!
//! The scheduler's control mailbox holds at most 64 messages and one
//! release slot, reserved by [`SchedulerHandle::reserve_close`] for the
//! registry's `Close`, so closing admission never waits for room.

use std::fmt;
use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorProcessingErr};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::mailbox::{batch, BatchMailbox, ReleaseSlot};
use crate::scheduler::actor::{SchedulerActor, SchedulerArgs};
use crate::scheduler::queue::Ceilings;
use crate::scheduler::{mailbox_bound, CeilingInUse, Core, Msg};

/// The scheduler actor's handle. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct SchedulerHandle {
    mailbox: BatchMailbox<Msg>,
}

/// Why the scheduler did not apply lowered ceilings.
#[derive(Debug)]
pub(crate) enum CeilingsRefused {
    /// A ceiling is below what is in use now.
    InUse(CeilingInUse),
    /// The scheduler had no room or no answer before the deadline.
    Unanswered,
}

/// The room for the scheduler's `Close`, reserved in advance.
pub(crate) struct CloseSlot(ReleaseSlot<Msg>);

impl fmt::Debug for CloseSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CloseSlot")
    }
}

impl CloseSlot {
    /// Answers every queued waiter `Closed`. Never waits; a stopped
    /// scheduler has no waiter left to answer.
    pub(crate) fn close(self) {
        let _ = self.0.send(Msg::Close);
    }
}

impl SchedulerHandle {
    /// Spawns the scheduler of `core`, linked to `supervisor`; its alarm
    /// runs on `runtime`.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: a dropped future may leave the actor spawned and
    /// linked, unreachable but for its supervisor.
    pub(crate) async fn spawn_linked(
        core: Arc<Core>,
        runtime: Handle,
        supervisor: ActorCell,
    ) -> Result<Self, ActorProcessingErr> {
        let (slots, inbox) = batch(mailbox_bound());
        let args = SchedulerArgs {
            core,
            inbox,
            runtime,
        };
        let (actor, _join) = Actor::spawn_linked(None, SchedulerActor, args, supervisor).await?;
        Ok(Self {
            mailbox: slots.attach(actor),
        })
    }

    /// The scheduler actor, for supervision and monitoring.
    pub(crate) fn cell(&self) -> ActorCell {
        self.mailbox.actor().get_cell()
    }

    /// Reserves the room for the one `Close` the registry will send.
    pub(crate) fn reserve_close(&self) -> Option<CloseSlot> {
        self.mailbox.reserve_release().map(CloseSlot)
    }

    /// The scheduler's (pending, running) once operations in flight have
    /// landed, or `None` if it cannot answer by `deadline`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future loses only the answer.
    pub(crate) async fn counts(&self, deadline: Instant) -> Option<(u32, u32)> {
        let (reply, answer) = oneshot::channel();
        let msg = Msg::Counts {
            reply: reply.into(),
        };
        self.mailbox.send_within(msg, deadline).await.ok()?;
        tokio::time::timeout_at(deadline, answer).await.ok()?.ok()
    }

    /// Envelopes the actor has opened so far (wrapping).
    #[cfg(feature = "testing")]
    pub(crate) fn opened(&self) -> usize {
        self.mailbox.opened()
    }

    /// A quiescence probe: the counts question, answered once the actor has
    /// handled everything queued before it and the operations in flight
    /// have landed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future loses only the answer.
    #[cfg(feature = "testing")]
    pub(crate) async fn probe(&self, deadline: Instant) -> crate::mailbox::Probed<()> {
        use crate::mailbox::Probed;
        match self.counts(deadline).await {
            Some(_) => Probed::Answered(()),
            None if self.mailbox.actor().get_status() >= ractor::ActorStatus::Stopping => {
                Probed::Gone
            }
            None => Probed::Late,
        }
    }

    /// Applies lowered ceilings, all or nothing, answered by `deadline`.
    ///
    /// # Cancel safety
    ///
    /// Once queued the change is applied or refused as a whole; a dropped
    /// future loses only the answer.
    pub(crate) async fn set_ceilings(
        &self,
        ceilings: Ceilings,
        deadline: Instant,
    ) -> Result<(), CeilingsRefused> {
        let (reply, answer) = oneshot::channel();
        let msg = Msg::SetCeilings {
            ceilings,
            reply: reply.into(),
        };
        self.mailbox
            .send_within(msg, deadline)
            .await
            .map_err(|_| CeilingsRefused::Unanswered)?;
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(in_use))) => Err(CeilingsRefused::InUse(in_use)),
            Ok(Err(_)) | Err(_) => Err(CeilingsRefused::Unanswered),
        }
    }
}
