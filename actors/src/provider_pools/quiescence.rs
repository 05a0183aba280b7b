//! [`ProviderPools::wait_quiescent`] (feature `testing`): wait until the engine's
//! actors are idle, so that a test awaits quiescence instead of polling (as
//! quickwit's `process_pending_and_observe` does).
//!
//! One round, for the registry, the scheduler, the worker pool, the cleanup
//! actor and every epoch actor the registry believes running:
//! 1. read how many envelopes each has opened (its mailbox counts every
//!    slot returned);
//! 2. probe each one twice, every first probe answered before any second
//!    one is sent (the registry's probes answer with the epoch actors);
//! 3. read the counts again.
//!
//! The round is clean when each actor opened exactly its two probes, every
//! epoch actor answered both, and the registry named the same epoch actors
//! twice. A message an actor was handling when the round began ended before
//! its first answer, so whatever it sent was queued before every second
//! probe and was opened within the round; anything else an actor opened is
//! in its count. So a clean round leaves no message of one actor to another
//! unhandled. Otherwise another round runs, until `deadline`.
//!
//! Invariants:
//! - Probes use the ordinary bounded message slots (`send_within`): a full
//!   mailbox delays the check, it never overfills the mailbox.
//! - A probe changes no state: the registry answers it without its
//!   shutdown check, the others answer their counts question.
//! - An epoch actor that cannot answer (stopped, its supervision event
//!   still on its way to the registry) makes the round unclean. A stopped
//!   control actor counts as idle once the registry has recorded its loss
//!   (the control state is `Failed`, or `Completed` after a shutdown);
//!   while the registry runs and has not, the round is unclean.
//! - Outside its reach: tasks the actors spawned (dials, jobs, closes, the
//!   scheduler's alarm) and the engine's callers; their messages count only
//!   once sent.

use tokio::time::Instant;

use crate::epoch::EpochProber;
use crate::mailbox::Probed;
use crate::provider_pools::ProviderPools;
use crate::snapshot::ControlState;

/// The engine's actors did not all become idle by the deadline (feature
/// `testing`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the engine's actors were not idle by the deadline ({rounds} rounds checked)")]
pub struct NotQuiescent {
    /// The rounds begun before the deadline.
    pub rounds: u32,
}

/// One actor's opened count before and after a round, and whether it
/// answered both probes (`Some(true)`), neither (`Some(false)`: stopped),
/// or one only or late (`None`).
struct Watched {
    before: usize,
    after: usize,
    answered: Option<bool>,
}

impl Watched {
    fn new(before: usize) -> Self {
        Self {
            before,
            after: before,
            answered: Some(false),
        }
    }

    /// Records the two probes' answers; `Err` when one was late.
    fn heard<T, U>(&mut self, first: &Probed<T>, second: &Probed<U>) -> Result<(), Late> {
        self.answered = match (first, second) {
            (Probed::Late, _) | (_, Probed::Late) => return Err(Late),
            (Probed::Answered(_), Probed::Answered(_)) => Some(true),
            (Probed::Gone, Probed::Gone) => Some(false),
            _ => None,
        };
        Ok(())
    }

    /// Idle over the round: answered both probes and opened nothing else,
    /// or stopped throughout when `stopped_is_idle`.
    fn idle(&self, stopped_is_idle: bool) -> bool {
        match self.answered {
            Some(true) => self.after.wrapping_sub(self.before) == 2,
            Some(false) => stopped_is_idle,
            None => false,
        }
    }
}

/// A probe found no room or no answer before the deadline.
struct Late;

impl ProviderPools {
    /// Returns once every engine actor — registry, scheduler, worker pool,
    /// cleanup, each running epoch actor — has handled every message sent
    /// to it before the call and everything those sent in turn: rounds of
    /// probes repeat until one finds no actor busy (see the module
    /// `quiescence.rs`). Tasks the actors spawned (dials, jobs, closes) are not
    /// waited for. Answers how many rounds it took: 1 when the actors were
    /// idle already. Feature `testing`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it changes nothing; a dropped future leaves at most
    /// probes whose answers go unheard.
    ///
    /// # Errors
    ///
    /// [`NotQuiescent`] when no round was clean by `deadline`.
    pub async fn wait_quiescent(&self, deadline: Instant) -> Result<u32, NotQuiescent> {
        let mut rounds = 0;
        loop {
            rounds += 1;
            match self.quiescence_round(deadline).await {
                Ok(true) => return Ok(rounds),
                Ok(false) if Instant::now() < deadline => {}
                Ok(false) | Err(Late) => return Err(NotQuiescent { rounds }),
            }
        }
    }

    /// One round: `Ok(true)` when no actor was busy.
    async fn quiescence_round(&self, deadline: Instant) -> Result<bool, Late> {
        let inner = &self.inner;
        let mut registry = Watched::new(inner.registry.opened());
        let mut controls = [
            Watched::new(inner.scheduler.opened()),
            Watched::new(inner.workers.opened()),
            Watched::new(inner.cleanup.opened()),
        ];
        let listed = inner.registry.probe(deadline).await;
        let epochs = match &listed {
            Probed::Answered(epochs) => epochs.as_slice(),
            Probed::Gone => &[],
            Probed::Late => return Err(Late),
        };
        let mut watched: Vec<Watched> = epochs.iter().map(|e| Watched::new(e.opened())).collect();
        let first = self.probe_others(epochs, deadline).await;
        let relisted = inner.registry.probe(deadline).await;
        let second = self.probe_others(epochs, deadline).await;

        registry.after = inner.registry.opened();
        registry.heard(&listed, &relisted)?;
        let after = [
            inner.scheduler.opened(),
            inner.workers.opened(),
            inner.cleanup.opened(),
        ];
        for (i, control) in controls.iter_mut().enumerate() {
            control.after = after[i];
            control.heard(&first.controls[i], &second.controls[i])?;
        }
        for (i, epoch) in watched.iter_mut().enumerate() {
            epoch.after = epochs[i].opened();
            epoch.heard(&first.epochs[i], &second.epochs[i])?;
        }
        let same_epochs = match (&listed, &relisted) {
            (Probed::Answered(a), Probed::Answered(b)) => ids(a) == ids(b),
            _ => true,
        };
        // A control actor's stop reaches the registry as a supervision
        // event, which no mailbox count sees.
        let loss_unrecorded = registry.answered == Some(true)
            && controls.iter().any(|c| c.answered == Some(false))
            && !matches!(
                inner.accounts.control(),
                ControlState::Failed | ControlState::Completed
            );
        Ok(same_epochs
            && !loss_unrecorded
            && registry.idle(true)
            && controls.iter().all(|c| c.idle(true))
            && watched.iter().all(|e| e.idle(false)))
    }

    /// Probes the scheduler, worker pool, cleanup and `epochs` once each,
    /// one after another.
    async fn probe_others(&self, epochs: &[EpochProber], deadline: Instant) -> Answers {
        let inner = &self.inner;
        let controls = [
            inner.scheduler.probe(deadline).await,
            inner.workers.probe(deadline).await,
            inner.cleanup.probe(deadline).await,
        ];
        let mut answers = Vec::with_capacity(epochs.len());
        for epoch in epochs {
            answers.push(epoch.probe(deadline).await);
        }
        Answers {
            controls,
            epochs: answers,
        }
    }
}

/// What one pass of probes heard.
struct Answers {
    controls: [Probed<()>; 3],
    epochs: Vec<Probed<()>>,
}

/// The epoch actors a registry's answer names, in a comparable order.
fn ids(epochs: &[EpochProber]) -> Vec<ractor::ActorId> {
    let mut ids: Vec<_> = epochs.iter().map(EpochProber::id).collect();
    ids.sort_unstable();
    ids
}
