//! The scheduler's `Actor` implementation: `handle` only matches, calls the
//! named operations of [`State`], then grants what became ready and
//! publishes the counts.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::ledger::Ledger;
use crate::mailbox::{Envelope, MailboxSlots};
use crate::scheduler::queue::Ceilings;
use crate::scheduler::state::State;
use crate::scheduler::Msg;

pub(crate) struct SchedulerActor;

pub(crate) struct SchedulerArgs {
    pub(crate) ceilings: Ceilings,
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) slots: MailboxSlots,
}

impl Actor for SchedulerActor {
    type Msg = Envelope<Msg>;
    type State = State;
    type Arguments = SchedulerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: SchedulerArgs,
    ) -> Result<State, ActorProcessingErr> {
        let mailbox = args.slots.attach(myself);
        Ok(State::new(args.ceilings, mailbox, args.ledger))
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match msg.open() {
            Msg::Enqueue {
                ticket,
                tenant,
                provider,
                reply,
            } => state.enqueue(ticket, tenant, provider, reply),
            Msg::Cancel { ticket } => state.cancel(ticket),
            Msg::Release { tenant, provider } => state.release(&tenant, &provider),
            Msg::SetCeilings { ceilings, reply } => {
                let _ = reply.send(state.set_ceilings(ceilings));
            }
            Msg::Close => state.close(),
            Msg::Counts { reply } => {
                let _ = reply.send(state.counts());
            }
        }
        state.grant_ready();
        state.report();
        Ok(())
    }
}
