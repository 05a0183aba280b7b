//! [`EpochHandle`]: the registry's hold on one epoch actor, and the
//! checkout request a running request sends it: the only code outside the
//! actor's own loop and the dial permit that builds the epoch's messages.

use std::any::TypeId;
use std::sync::Arc;

use ractor::{Actor, ActorCell};
use tokio::sync::oneshot;

use crate::accounts::Accounts;
use crate::epoch::actor::{bound, EpochActor, EpochArgs};
use crate::epoch::connection::ConnectError;
use crate::epoch::published::PublishedEpoch;
use crate::epoch::{Checkout, Msg};
use crate::identity::TenantId;
use crate::limits::Limits;
#[cfg(feature = "testing")]
use crate::mailbox::Probed;
use crate::mailbox::{Mailbox, MailboxError, MailboxSlots, ReleaseSlot};

/// The registry's hold on one epoch actor.
#[derive(Debug)]
pub(crate) struct EpochHandle {
    mailbox: Mailbox<Msg>,
    retire_slot: Option<ReleaseSlot<Msg>>,
}

impl EpochHandle {
    /// Spawns the actor for `published`, linked to `supervisor`, and records
    /// its mailbox in `published`.
    pub(crate) async fn spawn(
        published: Arc<PublishedEpoch>,
        accounts: Arc<Accounts>,
        limits: &Limits,
        supervisor: ActorCell,
    ) -> Result<Self, ractor::SpawnErr> {
        let slots = MailboxSlots::new(bound(limits, published.client_count()));
        let args = EpochArgs {
            published: Arc::clone(&published),
            accounts,
            backoff: limits.dial_backoff(),
            slots: slots.clone(),
        };
        let (actor, _join) = Actor::spawn_linked(None, EpochActor, args, supervisor).await?;
        let mailbox = slots.attach(actor);
        published.set_actor(mailbox.clone());
        let retire_slot = mailbox.reserve_release();
        Ok(Self {
            mailbox,
            retire_slot,
        })
    }

    pub(crate) fn cell(&self) -> ActorCell {
        self.mailbox.actor().get_cell()
    }

    /// Asks the actor to destroy expired idle connections, touching at
    /// most `bound`; a busy actor skips this scan.
    pub(crate) fn reclaim(&self, bound: usize) {
        let _ = self.mailbox.try_send(Msg::Reclaim { bound, reply: None });
    }

    /// Tells the actor it is retired; its slot was reserved at spawn.
    pub(crate) fn retire(&mut self) {
        if let Some(slot) = self.retire_slot.take() {
            // A stopped epoch actor has nothing left to retire.
            let _ = slot.send(Msg::Retire);
        }
    }

    pub(crate) fn stop(&self) {
        self.mailbox.actor().stop(Some("drained".into()));
    }

    /// What a quiescence check holds to probe this actor.
    #[cfg(feature = "testing")]
    pub(crate) fn prober(&self) -> EpochProber {
        EpochProber {
            mailbox: self.mailbox.clone(),
        }
    }
}

/// A quiescence check's hold on one epoch actor (`ProviderPools::wait_quiescent`):
/// it reads how many envelopes the actor opened and sends it `Probe`.
#[cfg(feature = "testing")]
#[derive(Debug, Clone)]
pub(crate) struct EpochProber {
    mailbox: Mailbox<Msg>,
}

#[cfg(feature = "testing")]
impl EpochProber {
    /// The actor, to tell one epoch actor from another.
    pub(crate) fn id(&self) -> ractor::ActorId {
        self.mailbox.actor().get_id()
    }

    /// Envelopes the actor has opened so far (wrapping).
    pub(crate) fn opened(&self) -> usize {
        self.mailbox.opened()
    }

    /// Answered once the actor has handled everything queued before it.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped future loses only the answer.
    pub(crate) async fn probe(&self, deadline: tokio::time::Instant) -> Probed<()> {
        let (reply, answer) = oneshot::channel();
        crate::mailbox::probe(&self.mailbox, Msg::Probe { reply }, answer, deadline).await
    }
}

/// Asks the epoch actor behind `mailbox` for a connection of `client` for
/// a running request of `tenant`; the receiver hears the checkout's answer.
///
/// # Errors
///
/// [`ConnectError::Busy`] when the actor's mailbox is full,
/// [`ConnectError::Closed`] when the actor stopped.
pub(crate) fn request_checkout(
    mailbox: &Mailbox<Msg>,
    client: usize,
    tenant: TenantId,
    type_id: TypeId,
) -> Result<oneshot::Receiver<Checkout>, ConnectError> {
    let (reply, answer) = oneshot::channel();
    let msg = Msg::Checkout {
        client,
        tenant,
        type_id,
        reply,
    };
    mailbox.try_send(msg).map_err(|err| match err {
        MailboxError::Busy(_) | MailboxError::Timeout(_) => ConnectError::Busy,
        MailboxError::Closed => ConnectError::Closed,
    })?;
    Ok(answer)
}
