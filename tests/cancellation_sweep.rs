//! Cancellation sweep, in the style of deadpool's `managed_cancellation`:
//! for every phase of a call and every behaviour of what the call waits on
//! in that phase, the caller's future is dropped in that phase, and
//!
//! - at the drop instant every count is within the limits and the phase's
//!   own holding is visible (a queued waiter, a grant, a dial, …);
//! - once quiet (a paused clock advanced; bounded waits for the
//!   streaming phase's real sockets) the snapshot equals the one taken
//!   before the call began — everything returned, nothing released twice —
//!   except what the pools still owe to work that outlives the caller (a
//!   running job, a running or failed close), which is held exactly until
//!   that work ends;
//! - shutdown is then clean.
//!
//! Phases: `queued` (waiting for admission), `granted` (a `PoolReady` not
//! yet started), `started` (a `RunningRequest` waiting on a provider job
//! that holds it), `dialing` (inside `reserve_connection`, the dialer
//! mid-dial), `connected` (holding a `PooledConnection`, mid-exchange),
//! `streaming` (the HTTP adapter's streamed body, mid-body, against a real
//! loopback origin), `cleanup` (waiting on a close run by the cleanup
//! actor).
//!
//! Behaviours of what the call waits on, relative to the drop: `ok` and
//! `error` — it completes (succeeds, fails) at the drop instant, its answer
//! ready but never observed; `slow` and `slow-error` — it completes after
//! the drop; `never` — it does not complete within the case (it is
//! released only after the checks, so shutdown can finish).
//!
//! The matrix is generated (`PHASES × BEHAVIOURS`); every case runs, and a
//! failure names each failing case.

#[path = "cancellation_sweep/mem.rs"]
mod mem;
#[path = "cancellation_sweep/phases.rs"]
mod phases;
#[path = "cancellation_sweep/streaming.rs"]
mod streaming;
mod support;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use provider_pools::{Limits, ProviderPools, Snapshot};
use tokio::sync::oneshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Queued,
    Granted,
    Started,
    Dialing,
    Connected,
    Streaming,
    Cleanup,
}

const PHASES: [Phase; 7] = [
    Phase::Queued,
    Phase::Granted,
    Phase::Started,
    Phase::Dialing,
    Phase::Connected,
    Phase::Streaming,
    Phase::Cleanup,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    Ok,
    Error,
    Slow,
    SlowError,
    Never,
}

const BEHAVIOURS: [Behaviour; 5] = [
    Behaviour::Ok,
    Behaviour::Error,
    Behaviour::Slow,
    Behaviour::SlowError,
    Behaviour::Never,
];

impl Behaviour {
    /// True when the dependency completes before the caller is dropped.
    fn at_drop(self) -> bool {
        matches!(self, Self::Ok | Self::Error)
    }

    /// True when the dependency fails.
    fn fails(self) -> bool {
        matches!(self, Self::Error | Self::SlowError)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Case {
    phase: Phase,
    behaviour: Behaviour,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = format!("{:?}", self.phase).to_lowercase();
        let behaviour = match self.behaviour {
            Behaviour::Ok => "ok",
            Behaviour::Error => "error",
            Behaviour::Slow => "slow",
            Behaviour::SlowError => "slow-error",
            Behaviour::Never => "never",
        };
        write!(f, "{phase} × {behaviour}")
    }
}

/// The limits of every case: one running request, so a second one queues.
const LIMITS: Limits = Limits {
    running_requests: 1,
    running_per_tenant: 1,
    running_per_provider: 1,
    ..Limits::DEFAULT
};

/// How long a `slow` dependency takes after the drop (paused clock).
const SLOW: Duration = Duration::from_millis(1_500);

/// A case's failure, naming the case.
type Outcome = Result<(), String>;

/// The caller's future, owned by the case and polled only when driven.
type Call = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What a dependency answers: success or failure.
struct Resolve(oneshot::Sender<bool>);

struct Wait(oneshot::Receiver<bool>);

fn gate() -> (Resolve, Wait) {
    let (tx, rx) = oneshot::channel();
    (Resolve(tx), Wait(rx))
}

impl Resolve {
    fn answer(self, ok: bool) {
        // The waiter may be gone: that is the point of the sweep.
        let _ = self.0.send(ok);
    }
}

impl Wait {
    /// True for success; a resolver dropped unanswered is a failure.
    async fn outcome(self) -> bool {
        self.0.await.unwrap_or(false)
    }
}

/// Lets every other task run without moving the paused clock; `call` is
/// not polled.
async fn let_tasks_run() {
    for _ in 0..128 {
        tokio::task::yield_now().await;
    }
}

/// Polls `call` until `reached` holds on the pools' snapshot (the call has
/// entered its phase), failing if the call ends first or the phase is not
/// reached within [`support::WAIT`] of wall-clock time. Only yields, so a
/// paused clock does not move.
async fn drive(
    pools: &ProviderPools,
    call: &mut Call,
    phase: &str,
    mut reached: impl FnMut(&Snapshot) -> bool,
) -> Outcome {
    let deadline = std::time::Instant::now() + support::WAIT;
    while std::time::Instant::now() < deadline {
        tokio::select! {
            biased;
            () = call.as_mut() => return Err(format!("the call ended before it was {phase}")),
            () = tokio::task::yield_now() => {}
        }
        if reached(&pools.snapshot()) {
            return Ok(());
        }
    }
    Err(format!(
        "the call never got {phase}: {:?}",
        pools.snapshot()
    ))
}

/// Every count within [`LIMITS`].
fn within_limits(s: &Snapshot, when: &str) -> Outcome {
    let c = s.connections;
    let checks = [
        ("pending", s.pending_requests, LIMITS.pending_requests),
        ("running", s.running_requests, LIMITS.running_requests),
        (
            "connections",
            c.active + c.idle + c.connecting + c.retired,
            LIMITS.connections,
        ),
        ("idle", c.idle, LIMITS.idle_connections),
        ("workers", s.workers, LIMITS.provider_workers),
        ("drivers", s.drivers, LIMITS.connections),
        ("cleanup", s.cleanup_jobs, LIMITS.cleanup_jobs),
        ("metadata", s.metadata_bytes, LIMITS.metadata_bytes),
    ];
    for (what, used, limit) in checks {
        if used > limit {
            return Err(format!("{when}: {what} {used} over {limit}: {s:?}"));
        }
    }
    Ok(())
}

/// The snapshot equals `expected`, checked after each of a few
/// rounds on the paused clock (limits held at every round).
async fn returns_to(pools: &ProviderPools, expected: &Snapshot, when: &str) -> Outcome {
    for _ in 0..50 {
        let_tasks_run().await;
        let now = pools.snapshot();
        within_limits(&now, when)?;
        if now == *expected {
            return Ok(());
        }
        tokio::time::advance(Duration::from_millis(100)).await;
    }
    Err(format!(
        "{when}: expected {expected:?}\n     got {:?}",
        pools.snapshot()
    ))
}

/// Shutdown is clean.
async fn shuts_down_clean(pools: &ProviderPools) -> Outcome {
    let report = pools.shutdown(support::deadline()).await;
    if report.is_clean() {
        Ok(())
    } else {
        Err(format!("shutdown not clean: {report:?}"))
    }
}

fn run_case(case: Case) -> Outcome {
    let mut runtime = tokio::runtime::Builder::new_current_thread();
    runtime.enable_all();
    // The streaming phase runs on real sockets, so on real time.
    if case.phase != Phase::Streaming {
        runtime.start_paused(true);
    }
    let runtime = runtime.build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        match case.phase {
            Phase::Queued => phases::queued(case.behaviour).await,
            Phase::Granted => phases::granted(case.behaviour).await,
            Phase::Started => phases::started(case.behaviour).await,
            Phase::Dialing => phases::dialing(case.behaviour).await,
            Phase::Connected => phases::connected(case.behaviour).await,
            Phase::Streaming => streaming::streaming(case.behaviour).await,
            Phase::Cleanup => phases::cleanup(case.behaviour).await,
        }
    })
}

/// Keeps the sweep's own panics (a failing provider job) out of the
/// output; every other panic is reported.
fn quiet_expected_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if !message.starts_with("sweep:") {
            report(info);
        }
    }));
}

#[test]
fn every_phase_and_behaviour_returns_everything_when_the_caller_drops() {
    quiet_expected_panics();
    let cases: Vec<Case> = PHASES
        .iter()
        .flat_map(|&phase| {
            BEHAVIOURS
                .iter()
                .map(move |&behaviour| Case { phase, behaviour })
        })
        .collect();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|&case| run_case(case).err().map(|e| format!("{case}: {e}")))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    eprintln!("cancellation sweep: {} cases clean", cases.len());
}
