//! Real threads: a multi-thread runtime whose workers report when they
//! park, so the harness can observe the engine in a quiet window — an
//! interval in which no worker runs any task.
//!
//! Why a window: the snapshot reads its counts one by one, and some of them
//! may count a connection twice for an instant while it moves (see
//! `actors/src/epoch/tally.rs`); the scheduler and the worker pool publish
//! their gauges after they answer. Read while other threads run, "every
//! count within its limit" and "the engine counts at least what the harness
//! holds" could fail with no bug. In a quiet window nothing moves, so the
//! same checks as on the paused clock hold exactly.
//!
//! The window's proof: a worker runs tasks only between its `after_unpark`
//! hook and its next `before_park` hook (tokio calls both around its park
//! loop, and the timer driver only wakes tasks inside it). The hooks count
//! parked workers and every unpark, with sequentially consistent
//! operations. An observation is kept only if the unpark count was the same
//! before and after it and every worker was parked after the first read:
//! then every worker stayed parked throughout, and what the parked workers
//! last wrote is visible (their hook's increment released it). The harness
//! itself runs on the main thread (`block_on`), which is observing. The
//! chaos scenarios spawn no blocking work (the engine's only
//! `spawn_blocking` is `ProviderPools::spawn_blocking*`, which they do not
//! call), so no other thread touches the engine.
//!
//! A quiet window is a consistent state, every task at an await point; it
//! is not a quiescent one: a task woken just before (a timer, a message) may
//! not have run yet. Checks that hold in every such state run in each
//! window; the end of a run waits, within a bound, for what must end
//! (the engine's counts agreeing with the harness's).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

/// How long a quiet window may take to come before the run fails: the
/// workers never all parked, so something spins (or the machine starves).
const QUIET_WAIT: Duration = Duration::from_secs(20);

/// The parked workers of one runtime.
#[derive(Debug)]
pub(crate) struct Quiet {
    workers: usize,
    parked: AtomicUsize,
    unparks: AtomicU64,
}

/// A runtime of `workers` worker threads with the real clock, and its
/// [`Quiet`].
pub(crate) fn runtime(workers: usize) -> (Runtime, Arc<Quiet>) {
    let quiet = Arc::new(Quiet {
        workers,
        parked: AtomicUsize::new(0),
        unparks: AtomicU64::new(0),
    });
    let (park, unpark) = (Arc::clone(&quiet), Arc::clone(&quiet));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .on_thread_park(move || {
            park.parked.fetch_add(1, Ordering::SeqCst);
        })
        .on_thread_unpark(move || {
            unpark.unparks.fetch_add(1, Ordering::SeqCst);
            unpark.parked.fetch_sub(1, Ordering::SeqCst);
        })
        .build()
        .expect("multi-thread runtime");
    (runtime, quiet)
}

impl Quiet {
    /// Runs `observe` in a quiet window and returns what it saw; waits (on
    /// the calling thread, which must not be a worker) until one comes.
    pub(crate) fn observe<T>(&self, mut observe: impl FnMut() -> T) -> Result<T, String> {
        let started = Instant::now();
        loop {
            let unparks = self.unparks.load(Ordering::SeqCst);
            if self.parked.load(Ordering::SeqCst) == self.workers {
                let seen = observe();
                if self.unparks.load(Ordering::SeqCst) == unparks {
                    return Ok(seen);
                }
            }
            if started.elapsed() >= QUIET_WAIT {
                return Err(format!(
                    "no quiet window in {QUIET_WAIT:?}: the {} workers never all parked",
                    self.workers
                ));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}
