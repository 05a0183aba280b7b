//! The admission core: the fair queue driven by its callers.
//!
//! # Ownership
//!
//! The queue's [`State`] has one owner at a time, named by one atomic word:
//! its low bit says "owned", the rest counts operations callers left for
//! the owner ([`Op`]s in the `deferred` FIFO, pushed before they are
//! counted).
//!
//! - A caller that finds the word zero (free, nothing left) owns the queue
//!   with one compare-and-swap and applies its own operation directly: an
//!   admit with capacity free and nobody in line is granted on the caller's
//!   task, a release hands its capacity to the next waiter by the rotation
//!   and wakes only that waiter. No other task runs.
//! - A caller that finds it owned pushes its operation and counts it. The
//!   count and the owned bit change in one compare-and-swap, so either the
//!   caller becomes the owner (and applies it), or the owner's later
//!   attempt to give up ownership sees the count and applies it first
//!   (*combining*): no operation is left behind.
//! - An owner applies at most [`BATCH`] counted operations per pass and
//!   gives up ownership only when the count is zero. A caller makes at most
//!   [`PASSES`] passes for others; past that it hands ownership to the
//!   scheduler actor (which continues in bounded passes between its other
//!   messages), so no caller's latency grows with the load.
//! - A hand-over is a token: whoever clears its bit owns the queue. The
//!   actor clears it when its wake-up arrives; a caller that leaves an
//!   operation while the token still waits for the actor clears it first
//!   and applies in its own bounded passes, so the queue never waits for
//!   the actor's turn on a busy runtime while callers are running.
//! - The scheduler actor's control operations (ceilings, close, counts,
//!   the deadline alarm) lock the state directly; the state's mutex only
//!   ever makes an owner wait for one such operation.
//!
//! # Invariants
//!
//! - Count > 0 implies owned; the owner (a caller, or the actor once handed
//!   over) applies every counted operation before ownership is free again.
//! - Nothing is granted after close: `close` and every grant run under the
//!   state's lock, and close answers every queued waiter.
//! - If the actor is gone, whoever would hand over keeps applying instead,
//!   and the actor's exit closes admission (see [`Core::stop`]).

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock, PoisonError};

use tokio::time::Instant;

use crate::accounts::Accounts;
use crate::identity::{ProviderId, TenantId};
use crate::mailbox::WakeTarget;
use crate::priority::Priority;
use crate::scheduler::cell::Cell;
use crate::scheduler::queue::{Ceilings, RunningKey};
use crate::scheduler::state::{Admitted, Op, State};
use crate::scheduler::{AdmitReply, Ended, RunningGrant, Waiting};
use crate::sync::{AtomicU8, AtomicUsize, Mutex, MutexGuard, Ordering};

mod control;
#[cfg(test)]
mod probes;

/// The word's "owned" bit.
const OWNED: usize = 1;
/// One counted operation in the word.
const ONE: usize = 2;

/// Most operations one pass applies.
#[cfg(not(all(test, loom)))]
pub(crate) const BATCH: usize = 64;
/// One, under the model checks, so that a pass ends while others wait.
#[cfg(all(test, loom))]
pub(crate) const BATCH: usize = 1;

/// Most passes a caller makes for others before handing over.
#[cfg(not(all(test, loom)))]
pub(crate) const PASSES: usize = 2;
/// One, under the model checks, so that the hand-over is explored.
#[cfg(all(test, loom))]
pub(crate) const PASSES: usize = 1;

/// The hand-over word's bits: ownership handed to the actor; the actor is
/// gone.
const HANDED: u8 = 1;
const STOPPED: u8 = 2;

/// The fair queue, its owner protocol and its route to the scheduler actor.
pub(crate) struct Core {
    state: Mutex<State>,
    /// The registry's accounts, which the state reports to; its grants
    /// lend it to their requests.
    accounts: Arc<Accounts>,
    deferred: Mutex<VecDeque<Op>>,
    /// [`OWNED`] | [`ONE`] × operations counted and not yet applied.
    word: AtomicUsize,
    /// Most operations left counted before a new admit is refused busy.
    bound: usize,
    /// [`HANDED`] | [`STOPPED`].
    handoff: AtomicU8,
    /// A wake-up is on its way to the actor.
    nudged: AtomicU8,
    actor: OnceLock<Box<dyn WakeTarget + Send + Sync>>,
}

impl Core {
    /// An empty, open queue under `ceilings`; an admit finding `bound`
    /// operations already waiting for the owner is refused busy.
    pub(crate) fn new(ceilings: Ceilings, accounts: Arc<Accounts>, bound: usize) -> Self {
        Self {
            state: Mutex::new(State::new(ceilings, Arc::clone(&accounts))),
            accounts,
            deferred: Mutex::new(VecDeque::new()),
            word: AtomicUsize::new(0),
            bound,
            handoff: AtomicU8::new(0),
            nudged: AtomicU8::new(0),
            actor: OnceLock::new(),
        }
    }

    /// Binds the actor that takes hand-overs and keeps the alarm.
    pub(crate) fn attach(&self, actor: impl WakeTarget + Send + Sync + 'static) {
        let _ = self.actor.set(Box::new(actor));
    }

    /// The registry's accounts.
    pub(crate) fn accounts(&self) -> &Arc<Accounts> {
        &self.accounts
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No operation on the state panics while holding it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a request for (`tenant`, `provider`) in class `class` that
    /// may wait until `deadline`: granted at once, queued, or refused.
    pub(crate) fn admit(
        self: &Arc<Self>,
        tenant: &TenantId,
        provider: ProviderId,
        class: Priority,
        deadline: Instant,
    ) -> AdmitReply {
        if self.own_free() {
            let admitted = {
                let mut state = self.lock();
                let admitted = state.admit(tenant, provider, class, deadline);
                self.finish_pass(&mut state);
                admitted
            };
            self.give_up(Some(PASSES));
            return match admitted {
                Admitted::Granted(running) => {
                    AdmitReply::Granted(RunningGrant::new(running, Arc::clone(self)))
                }
                Admitted::Queued(cell) => AdmitReply::Waiting(Waiting::new(cell, Arc::clone(self))),
                Admitted::Ended(ended) => AdmitReply::Ended(ended),
            };
        }
        if self.word.load(Ordering::Relaxed) / ONE >= self.bound {
            return AdmitReply::Ended(Ended::Busy);
        }
        let cell = Arc::new(Cell::new());
        self.defer(Op::Enqueue {
            cell: Arc::clone(&cell),
            tenant: tenant.clone(),
            provider,
            class,
            deadline,
        });
        AdmitReply::Waiting(Waiting::new(cell, Arc::clone(self)))
    }

    /// Returns a grant's running capacity (to the next waiter, if any).
    pub(crate) fn release(&self, running: RunningKey) {
        self.submit(Op::Release(running));
    }

    /// Removes a waiter that left while queued.
    pub(crate) fn cancel(&self, cell: Arc<Cell>) {
        self.submit(Op::Cancel(cell));
    }

    /// Applies `op` at once if the queue is free, else leaves it for the owner.
    fn submit(&self, op: Op) {
        if self.own_free() {
            {
                let mut state = self.lock();
                state.apply(op);
                self.finish_pass(&mut state);
            }
            self.give_up(Some(PASSES));
        } else {
            self.defer(op);
        }
    }

    /// Takes ownership if the queue is free with nothing left for an owner.
    fn own_free(&self) -> bool {
        self.word
            .compare_exchange(0, OWNED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Leaves `op` for the owner; becomes the owner if there is none.
    fn defer(&self, op: Op) {
        self.deferred
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(op);
        let mut current = self.word.load(Ordering::Relaxed);
        loop {
            let counted = (current + ONE) | OWNED;
            match self
                .word
                .compare_exchange(current, counted, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(previous) => {
                    if previous & OWNED == 0 || self.take_back() {
                        self.give_up(Some(PASSES));
                    }
                    return;
                }
                Err(now) => current = now,
            }
        }
    }

    /// Takes back ownership handed to the actor that the actor has not
    /// taken yet (true: the caller owns the queue now). Whoever clears
    /// [`HANDED`] owns, as in [`Core::hand_over`] and the actor's
    /// `run_handed`: a caller that finds work waiting for the actor applies
    /// it instead of leaving every caller to wait for the actor's turn.
    fn take_back(&self) -> bool {
        self.handoff.load(Ordering::Acquire) & HANDED != 0
            && self.handoff.fetch_and(!HANDED, Ordering::AcqRel) & HANDED != 0
    }

    /// Owner: applies the counted operations in passes of at most [`BATCH`],
    /// and gives up ownership once none is left. Past `passes` passes
    /// (unbounded when `None`) ownership goes to the actor instead.
    fn give_up(&self, passes: Option<usize>) {
        let mut done = 0;
        loop {
            let word = self.word.load(Ordering::Acquire);
            debug_assert!(word & OWNED != 0, "an owner without the owned bit");
            let counted = word / ONE;
            let take = counted.min(BATCH);
            if take > 0 {
                let mut state = self.lock();
                let ops: Vec<Op> = {
                    let mut deferred = self.deferred.lock().unwrap_or_else(PoisonError::into_inner);
                    let take = take.min(deferred.len());
                    deferred.drain(..take).collect()
                };
                for op in ops {
                    state.apply(op);
                }
                self.finish_pass(&mut state);
            }
            if self.retire(take) {
                return;
            }
            done += 1;
            if passes.is_some_and(|passes| done >= passes) && self.hand_over() {
                return;
            }
        }
    }

    /// Owner: uncounts `applied` operations; frees ownership (true) when
    /// none is left.
    fn retire(&self, applied: usize) -> bool {
        let mut current = self.word.load(Ordering::Relaxed);
        loop {
            let left = current - applied * ONE;
            let next = if left == OWNED { 0 } else { left };
            match self
                .word
                .compare_exchange(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return next == 0,
                Err(now) => current = now,
            }
        }
    }

    /// Owner: hands ownership to the actor; false (still the owner) when
    /// the actor is gone or cannot be woken.
    fn hand_over(&self) -> bool {
        let previous = self.handoff.fetch_or(HANDED, Ordering::AcqRel);
        if previous & STOPPED == 0 && self.nudge() {
            return true;
        }
        // Take it back, unless the actor already took it.
        let previous = self.handoff.fetch_and(!HANDED, Ordering::AcqRel);
        previous & HANDED == 0
    }

    /// After a pass: grants what became ready, publishes the counts, and
    /// wakes the actor if the alarm must ring earlier.
    fn finish_pass(&self, state: &mut State) {
        let own = state.grant_ready();
        debug_assert!(own.is_none(), "a caller's own admit left in the queue");
        state.report();
        if state.alarm_due().is_some() {
            self.nudge();
        }
    }

    /// Sends the actor one wake-up unless one is on its way; false when
    /// the actor is gone or not attached.
    fn nudge(&self) -> bool {
        if self.nudged.swap(1, Ordering::AcqRel) == 1 {
            return true;
        }
        match self.actor.get() {
            Some(actor) if !actor.stopping() => actor.wake().is_ok(),
            _ => false,
        }
    }
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("word", &self.word.load(Ordering::Relaxed))
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}
