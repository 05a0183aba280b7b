//! The cleanup actor's `Actor` implementation: `handle` only matches, calls
//! the named operations of [`State`], then publishes the count.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::runtime::Handle;

use crate::accounts::Accounts;
use crate::cleanup::state::State;
use crate::cleanup::Msg;
use crate::mailbox::Envelope;
use crate::workers::tasks::TaskTable;

pub(crate) struct CleanupActor;

pub(crate) struct CleanupArgs {
    pub(crate) accounts: Arc<Accounts>,
    pub(crate) runtime: Handle,
    /// The pool's close flag, shared with the handle.
    pub(crate) closed: Arc<AtomicBool>,
}

impl Actor for CleanupActor {
    type Msg = Envelope<Msg>;
    type State = State;
    type Arguments = CleanupArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: CleanupArgs,
    ) -> Result<State, ActorProcessingErr> {
        Ok(State::new(
            TaskTable::new(args.runtime),
            args.accounts,
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
            Msg::Run { task, slot, finish } => state.run(task, slot, finish),
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
