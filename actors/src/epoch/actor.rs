//! The epoch actor: the runtime owner of one (provider, epoch).
//!
//! Spawned linked to the registry when an epoch is installed, it owns the
//! epoch's mutable runtime state; its immutable installation is the
//! [`PublishedEpoch`] it shares with the directory. It stays alive after
//! retirement until the registry, told by the drain notice that the last
//! lease is gone, stops it.
//!
//! Mailbox: 8 message slots, 1 release slot — the registry's `Retire`, reserved
//! when the epoch is spawned.

use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef};

use crate::epoch::published::PublishedEpoch;
use crate::mailbox::{Envelope, Mailbox, MailboxBound, MailboxSlots, ReleaseSlot};

const BOUND: MailboxBound = MailboxBound {
    messages: 8,
    releases: 1,
};

/// Messages of the epoch actor.
#[derive(Debug)]
pub(crate) enum Msg {
    /// The registry published a successor or retired the pools: take no new
    /// work; what was accepted finishes on this epoch.
    Retire,
}

pub(crate) struct EpochActor;

pub(crate) struct State {
    published: Arc<PublishedEpoch>,
    retired: bool,
}

impl State {
    fn retire(&mut self) {
        self.retired = true;
        tracing::debug!(
            provider = %self.published.provider,
            epoch = %self.published.epoch,
            leases = self.published.leases(),
            "epoch retired"
        );
    }
}

impl Actor for EpochActor {
    type Msg = Envelope<Msg>;
    type State = State;
    type Arguments = Arc<PublishedEpoch>;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        published: Arc<PublishedEpoch>,
    ) -> Result<State, ActorProcessingErr> {
        Ok(State {
            retired: published.is_retired(),
            published,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match msg.open() {
            Msg::Retire => state.retire(),
        }
        Ok(())
    }
}

/// The registry's hold on one epoch actor.
#[derive(Debug)]
pub(crate) struct EpochHandle {
    mailbox: Mailbox<Msg>,
    retire_slot: Option<ReleaseSlot<Msg>>,
}

impl EpochHandle {
    /// Spawns the actor for `published`, linked to `supervisor`.
    pub(crate) async fn spawn(
        published: Arc<PublishedEpoch>,
        supervisor: ActorCell,
    ) -> Result<Self, ractor::SpawnErr> {
        let slots = MailboxSlots::new(BOUND);
        let (actor, _join) = Actor::spawn_linked(None, EpochActor, published, supervisor).await?;
        let mailbox = slots.attach(actor);
        let retire_slot = mailbox.reserve_release();
        Ok(Self {
            mailbox,
            retire_slot,
        })
    }

    pub(crate) fn cell(&self) -> ActorCell {
        self.mailbox.actor().get_cell()
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
}
