//! The scheduler's `Actor` implementation: on each [`Wake`] it yields once
//! (so the tasks already runnable add their messages to the batch), drains
//! its batched inbox, applies every message through the named operations of
//! [`State`], then grants what became ready and publishes the counts — once
//! per batch, so a burst of releases grants a burst of waiters.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::ledger::Ledger;
use crate::mailbox::{BatchInbox, BatchSlots, Wake};
use crate::scheduler::queue::Ceilings;
use crate::scheduler::state::State;
use crate::scheduler::Msg;

pub(crate) struct SchedulerActor;

pub(crate) struct SchedulerArgs {
    pub(crate) ceilings: Ceilings,
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) slots: BatchSlots<Msg>,
    pub(crate) inbox: BatchInbox<Msg>,
}

/// The actor's state: its inbox beside the scheduling state it feeds.
pub(crate) struct Scheduler {
    inbox: BatchInbox<Msg>,
    state: State,
}

impl Actor for SchedulerActor {
    type Msg = Wake;
    type State = Scheduler;
    type Arguments = SchedulerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Wake>,
        args: SchedulerArgs,
    ) -> Result<Scheduler, ActorProcessingErr> {
        let mailbox = args.slots.attach(myself);
        Ok(Scheduler {
            inbox: args.inbox,
            state: State::new(args.ceilings, mailbox, args.ledger),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Wake>,
        Wake: Wake,
        scheduler: &mut Scheduler,
    ) -> Result<(), ActorProcessingErr> {
        let Scheduler { inbox, state } = scheduler;
        // Let the tasks already runnable (usually the waiters just granted)
        // run first: their releases and enqueues join this batch instead of
        // each waking the actor on its own.
        tokio::task::yield_now().await;
        inbox.drain(&myself, |msg| apply(state, msg)).await;
        state.grant_ready();
        state.report();
        Ok(())
    }
}

/// Applies one message. Control messages first grant what the batch so far
/// made ready, so they see (and answer from) a settled queue.
fn apply(state: &mut State, msg: Msg) {
    match msg {
        Msg::Enqueue {
            ticket,
            tenant,
            provider,
            reply,
        } => state.enqueue(ticket, tenant, provider, reply),
        Msg::Cancel { ticket } => state.cancel(ticket),
        Msg::Release { running } => state.release(running),
        Msg::SetCeilings { ceilings, reply } => {
            state.grant_ready();
            let _ = reply.send(state.set_ceilings(ceilings));
        }
        Msg::Close => {
            state.grant_ready();
            state.close();
        }
        Msg::Counts { reply } => {
            state.grant_ready();
            let _ = reply.send(state.counts());
        }
    }
}
