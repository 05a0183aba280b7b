//! The scheduler actor: control of the admission core, off the hot path.
//!
//! On each [`Wake`] — a control message in its batched inbox, a nudge from
//! the core (a hand-over, or a deadline earlier than the alarm), or its
//! alarm ringing — it applies the control messages, takes any hand-over
//! (bounded passes), times out the waiters whose deadline passed, and sets
//! its one alarm at the earliest deadline still waiting. When it stops, for
//! any reason, admission closes ([`Core::stop`]).

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::mailbox::{BatchInbox, Wake};
use crate::scheduler::core::Core;
use crate::scheduler::Msg;

/// Most yields a `Counts` answer waits for operations in flight to land.
const COUNTS_YIELDS: usize = 1_000;

pub(crate) struct SchedulerActor;

pub(crate) struct SchedulerArgs {
    pub(crate) core: Arc<Core>,
    pub(crate) inbox: BatchInbox<Msg>,
    /// The host's runtime, where the alarm's timer runs.
    pub(crate) runtime: Handle,
}

/// The actor's state: its inbox, the core (closed when this is dropped),
/// and the alarm.
pub(crate) struct Scheduler {
    inbox: BatchInbox<Msg>,
    core: Closing,
    alarm: Option<Alarm>,
    runtime: Handle,
}

/// Closes admission when the actor's state goes, however it stops.
struct Closing(Arc<Core>);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The one timer: rings the actor at `at`.
struct Alarm {
    at: Instant,
    task: JoinHandle<()>,
}

impl Drop for Alarm {
    fn drop(&mut self) {
        self.task.abort();
    }
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
        args.core.attach(myself);
        Ok(Scheduler {
            inbox: args.inbox,
            core: Closing(args.core),
            alarm: None,
            runtime: args.runtime,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Wake>,
        Wake: Wake,
        scheduler: &mut Scheduler,
    ) -> Result<(), ActorProcessingErr> {
        let Scheduler {
            inbox,
            core: Closing(core),
            alarm,
            runtime,
        } = scheduler;
        core.woken();
        let mut counts = Vec::new();
        inbox
            .drain(&myself, |msg| match msg {
                Msg::SetCeilings { ceilings, reply } => {
                    let _ = reply.send(core.set_ceilings(ceilings));
                }
                Msg::Close => core.close(),
                Msg::Counts { reply } => counts.push(reply),
            })
            .await;
        core.run_handed();
        if !counts.is_empty() {
            answer_counts(core, counts).await;
        }
        let next = core.expire(Instant::now());
        set_alarm(alarm, next, core, runtime);
        Ok(())
    }
}

/// Answers `Counts` once the operations callers left are applied (their
/// owner is mid-pass on another thread), so that a release made before
/// the question is counted, as a message would have been.
async fn answer_counts(core: &Core, replies: Vec<RpcReplyPort<(u32, u32)>>) {
    for _ in 0..COUNTS_YIELDS {
        core.run_handed();
        if core.is_unowned() {
            break;
        }
        tokio::task::yield_now().await;
    }
    let counts = core.counts();
    for reply in replies {
        let _ = reply.send(counts);
    }
}

/// Keeps the alarm at `next`: unchanged if it is set there already.
#[allow(
    clippy::disallowed_methods,
    reason = "the alarm keeps its timer task's join handle and aborts it when dropped"
)]
fn set_alarm(alarm: &mut Option<Alarm>, next: Option<Instant>, core: &Arc<Core>, runtime: &Handle) {
    if alarm.as_ref().map(|a| a.at) == next {
        return;
    }
    *alarm = next.map(|at| {
        let core = Arc::clone(core);
        Alarm {
            at,
            task: runtime.spawn(async move {
                tokio::time::sleep_until(at).await;
                core.ring();
            }),
        }
    });
}
