//! The registry's `Actor` implementation: `handle` only matches and calls
//! the named operations of [`State`].

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use crate::ledger::Ledger;
use crate::limits::Limits;
use crate::mailbox::{Envelope, MailboxSlots};
use crate::registry::state::State;
use crate::registry::{Directory, Msg};

pub(crate) struct RegistryActor;

pub(crate) struct RegistryArgs {
    pub(crate) limits: Limits,
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) directory: Arc<Directory>,
    pub(crate) slots: MailboxSlots,
}

impl Actor for RegistryActor {
    type Msg = Envelope<Msg>;
    type State = State;
    type Arguments = RegistryArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: RegistryArgs,
    ) -> Result<State, ActorProcessingErr> {
        let mailbox = args.slots.attach(myself);
        Ok(State::new(
            args.limits,
            args.ledger,
            args.directory,
            mailbox,
        ))
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match msg.open() {
            Msg::Install {
                installation,
                reply,
            } => {
                let result = state.install(myself.get_cell(), *installation).await;
                let _ = reply.send(result);
            }
            Msg::EpochDrained { instance } => {
                state.epoch_drained(instance);
                state.finish_shutdown(&myself.get_cell());
            }
            Msg::Retire { reply } => {
                state.retire();
                let _ = reply.send(());
            }
            Msg::Shutdown { reply } => state.shutdown(&myself.get_cell(), reply),
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                state.epoch_actor_stopped(cell.get_id(), None);
            }
            SupervisionEvent::ActorFailed(cell, err) => {
                state.epoch_actor_stopped(cell.get_id(), Some(err.to_string()));
            }
            _ => return Ok(()),
        }
        state.finish_shutdown(&myself.get_cell());
        Ok(())
    }
}
