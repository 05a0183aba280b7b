//! The worker pool's `Actor` implementation: `handle` only matches, calls
//! the named operations of [`State`], then publishes the count.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::runtime::Handle;

use crate::accounts::Accounts;
use crate::budget::Budget;
use crate::mailbox::{Envelope, MailboxSlots};
use crate::workers::state::State;
use crate::workers::tasks::TaskTable;
use crate::workers::Msg;

pub(crate) struct WorkerPoolActor;

pub(crate) struct WorkerPoolArgs {
    pub(crate) slots: MailboxSlots,
    pub(crate) workers: Arc<Budget>,
    pub(crate) accounts: Arc<Accounts>,
    pub(crate) closed: Arc<AtomicBool>,
    pub(crate) runtime: Handle,
}

impl Actor for WorkerPoolActor {
    type Msg = Envelope<Msg>;
    type State = State;
    type Arguments = WorkerPoolArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: WorkerPoolArgs,
    ) -> Result<State, ActorProcessingErr> {
        let mailbox = args.slots.attach(myself);
        Ok(State::new(
            TaskTable::new(args.runtime),
            args.workers,
            args.accounts,
            mailbox,
            args.closed,
        ))
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match msg.open() {
            Msg::Spawn {
                kind,
                work,
                holds,
                reply,
            } => state.spawn(kind, work, holds, reply),
            Msg::Finished { id } => state.finished(id).await,
            Msg::WhenIdle { reply } => state.when_idle(reply),
            Msg::Counts { reply } => {
                let _ = reply.send(state.counts());
            }
        }
        state.report();
        Ok(())
    }
}
