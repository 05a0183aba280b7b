//! The registry's `Actor` implementation: `handle` only matches and calls
//! the named operations of [`State`].

use std::sync::Arc;

use ractor::actor::messages::BoxedState;
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::oneshot;

use crate::accounts::Accounts;
use crate::cleanup::CleanupPool;
use crate::limits::Limits;
use crate::mailbox::{Envelope, MailboxSlots};
use crate::registry::state::State;
use crate::registry::{Directory, Msg, RegistryHandle};
use crate::scheduler::{self, SchedulerHandle};
use crate::workers::WorkerPool;

/// The control actors besides the registry, as the handle and the registry
/// hold them.
#[derive(Debug, Clone)]
pub(crate) struct Controls {
    pub(crate) scheduler: SchedulerHandle,
    pub(crate) workers: WorkerPool,
    pub(crate) cleanup: CleanupPool,
}

pub(super) struct RegistryActor;

pub(super) struct RegistryArgs {
    pub(crate) limits: Limits,
    pub(crate) accounts: Arc<Accounts>,
    pub(crate) directory: Arc<Directory>,
    pub(crate) slots: MailboxSlots,
    /// The admission queue the scheduler keeps control of.
    pub(crate) queue: Arc<scheduler::Core>,
    /// Where the handle learns the control actors it talks to.
    pub(crate) controls_ready: oneshot::Sender<Controls>,
    /// The host's runtime, for the one periodic reclaim tick.
    pub(crate) runtime: tokio::runtime::Handle,
    /// How often a panicking epoch actor is restarted.
    pub(crate) restart: crate::supervision::RestartPolicy,
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
        let scheduler = SchedulerHandle::spawn_linked(
            Arc::clone(&args.queue),
            args.runtime.clone(),
            myself.get_cell(),
        )
        .await?;
        let (accounts, runtime) = (Arc::clone(&args.accounts), args.runtime.clone());
        let workers = WorkerPool::spawn_linked(
            &args.limits,
            Arc::clone(&accounts),
            runtime.clone(),
            myself.get_cell(),
        )
        .await?;
        let cleanup =
            CleanupPool::spawn_linked(&args.limits, accounts, runtime, myself.get_cell()).await?;
        let controls = Controls {
            scheduler: scheduler.clone(),
            workers: workers.clone(),
            cleanup: cleanup.clone(),
        };
        if args.controls_ready.send(controls).is_err() {
            return Err("the handle stopped waiting for the control actors".into());
        }
        let registry = RegistryHandle::new(args.slots.attach(myself));
        #[allow(
            clippy::disallowed_methods,
            reason = "the registry keeps the reclaim ticker's join handle"
        )]
        let ticker = args.runtime.spawn(reclaim_ticks(registry.clone()));
        Ok(State::new(
            args.limits,
            args.accounts,
            args.directory,
            registry,
            Controls {
                scheduler,
                workers,
                cleanup,
            },
            ticker,
            args.restart,
        ))
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match msg.open() {
            #[cfg(feature = "testing")]
            Msg::Probe { reply } => {
                let _ = reply.send(state.epoch_probers());
                return Ok(());
            }
            Msg::Install {
                installation,
                reply,
            } => {
                let result = state.install(myself.get_cell(), *installation).await;
                let _ = reply.send(result);
            }
            Msg::EpochDrained { instance } => state.epoch_drained(instance),
            Msg::Retire { reply } => {
                state.retire();
                let _ = reply.send(());
            }
            Msg::Shutdown { reply } => state.shutdown(reply),
            Msg::ReclaimTick => state.reclaim_idle(),
            Msg::ControlIdle => {}
            Msg::LowerLimits { limits, reply } => {
                let _ = reply.send(state.lower_limits(limits).await);
            }
        }
        state.finish_shutdown(&myself.get_cell()).await;
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorTerminated(cell, remains, _) => {
                destroy_remains(remains);
                state
                    .child_stopped(&myself.get_cell(), cell.get_id(), None)
                    .await;
            }
            SupervisionEvent::ActorFailed(cell, err) => {
                let failure = Some(err.to_string());
                state
                    .child_stopped(&myself.get_cell(), cell.get_id(), failure)
                    .await;
            }
            _ => return Ok(()),
        }
        state.finish_shutdown(&myself.get_cell()).await;
        Ok(())
    }
}

/// Destroys what a stopped child left: ractor hands a stopped (or killed)
/// actor's state to its supervisor with the termination event, and an
/// epoch actor's state holds its idle connections.
fn destroy_remains(remains: Option<BoxedState>) {
    if let Some(remains) = remains {
        crate::contain::drop_contained(remains, "a stopped child's state");
    }
}

/// The control owner's one timer: a reclaim tick every
/// [`RECLAIM_PERIOD`](crate::registry::RECLAIM_PERIOD), skipped while the
/// mailbox is full, ended when the registry stops.
async fn reclaim_ticks(registry: RegistryHandle) {
    let mut interval = tokio::time::interval(crate::registry::RECLAIM_PERIOD);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        interval.tick().await;
        if !registry.reclaim_tick() {
            return;
        }
    }
}
