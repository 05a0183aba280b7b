//! What must hold after every step, and once faults stop.

use std::time::Duration;

use provider_pools::Snapshot;

use crate::call::Tally;
use crate::pace::Pace;
use crate::world::{let_tasks_run, Mode, World};

/// How long (virtual time) calls and jobs get to end once faults stop.
const RUN_OUT: Duration = Duration::from_secs(120);

/// The same on real threads: far more than the scaled scenario needs (a
/// hang is a hang), so that a loaded machine never fails a seed.
const RUN_OUT_REAL: Duration = Duration::from_secs(20);

impl World {
    /// After every step: each count within the limits in force; the engine
    /// counts at least what the harness holds; no control actor lost.
    pub(crate) fn check(&self, s: &Snapshot) -> Result<(), String> {
        let (l, c) = (&self.limits, s.connections);
        let total = u64::from(c.active) + u64::from(c.idle) + u64::from(c.connecting);
        let bounds = [
            (
                "retained_epochs",
                u64::from(s.retained_epochs),
                l.retained_configurations,
            ),
            ("clients", u64::from(s.clients), l.configured_clients),
            (
                "pending_requests",
                u64::from(s.pending_requests),
                l.pending_requests,
            ),
            (
                "running_requests",
                u64::from(s.running_requests),
                l.running_requests,
            ),
            ("connections", total + u64::from(c.retired), l.connections),
            ("idle", u64::from(c.idle), l.idle_connections),
            (
                "metadata_bytes",
                u64::from(s.metadata_bytes),
                l.metadata_bytes,
            ),
            ("workers", u64::from(s.workers), l.provider_workers),
            ("cleanup_jobs", u64::from(s.cleanup_jobs), l.cleanup_jobs),
            ("failed_cleanup", u64::from(s.failed_cleanup), l.connections),
        ];
        for (what, used, limit) in bounds {
            if used > u64::from(limit) {
                return Err(format!("{what} {used} over its limit {limit}: {s:?}"));
            }
        }
        let tally = &self.ctx.tally;
        let held = [
            ("requests", Tally::get(&tally.requests), s.running_requests),
            (
                "connections",
                Tally::get(&tally.conns),
                c.active + c.retired,
            ),
            ("failed closes", Tally::get(&tally.failed), s.failed_cleanup),
            ("jobs", Tally::get(&tally.jobs), s.workers),
        ];
        for (what, held, counted) in held {
            if held > counted {
                return Err(format!(
                    "the harness holds {held} {what} but the engine counts {counted}: \
                     a charge was released twice ({s:?})"
                ));
            }
        }
        if s.control != provider_pools::ControlState::Running {
            return Err(format!("a control actor was lost: {s:?}"));
        }
        Ok(())
    }

    /// After a step: on the paused clock, lets every ready task run, then
    /// checks the snapshot. On real threads, first checks what is sound
    /// while other threads run ([`World::check_in_motion`]), then every
    /// check in a quiet window (see `quiet.rs`).
    pub(crate) async fn observe(&mut self, what: String) -> Result<(), String> {
        if let Mode::Threads(_) = self.mode {
            let s = self.pools.snapshot();
            if let Err(e) = self.check_in_motion(&s) {
                self.trace
                    .push(format!("{what} -> in motion: {}", brief(&s)));
                return Err(e);
            }
        }
        let look = self.look().await?;
        self.trace
            .push(format!("{what} -> {}", brief(&look.snapshot)));
        look.checked
    }

    /// The snapshot, the checks on it, and how many calls and jobs still
    /// run: after letting every ready task run (paused clock), or all read
    /// in one quiet window (real threads).
    async fn look(&self) -> Result<Look, String> {
        let read = || {
            let snapshot = self.pools.snapshot();
            let running = self.calls.iter().chain(&self.aborted).chain(&self.jobs);
            Look {
                left: running.filter(|t| !t.is_finished()).count(),
                checked: self.check(&snapshot),
                held_nothing: self.ctx.tally.is_zero(),
                snapshot,
            }
        };
        match &self.mode {
            Mode::Paused => {
                let_tasks_run().await;
                Ok(read())
            }
            Mode::Threads(quiet) => quiet.observe(read),
        }
    }

    /// Faults stop: every call and job must end on its own; then the
    /// harness holds nothing, the engine's counts agree, and shutdown is
    /// clean.
    pub(crate) async fn run_out(&mut self) -> Result<(), String> {
        self.ctx.switch.stop();
        let pace = self.mode.pace();
        let (run_out, step) = match pace {
            Pace::Paused => (RUN_OUT, Duration::from_millis(100)),
            Pace::Real => (RUN_OUT_REAL, Duration::from_millis(1)),
        };
        let deadline = tokio::time::Instant::now() + run_out;
        loop {
            let Look {
                snapshot: s,
                checked,
                left,
                held_nothing,
            } = self.look().await?;
            checked?;
            // Dial tasks outlive the calls that started them.
            let dialing = s.connections.connecting;
            let ended = left == 0 && s.workers == 0 && s.cleanup_jobs == 0 && dialing == 0;
            // What the engine still has to process (a release, a job's
            // end) may lag a quiet window on real threads: counts agree
            // once it is done, and a count that never agrees is a leak.
            let agreed = agree(&s);
            if ended && held_nothing && agreed.is_ok() {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(if !ended {
                    format!(
                        "hang: {left} tasks still running {run_out:?} after faults stopped: {s:?}"
                    )
                } else if !held_nothing {
                    format!("the harness still holds {:?}", self.ctx.tally)
                } else {
                    agreed.err().unwrap_or_default()
                });
            }
            match pace {
                Pace::Paused => tokio::time::advance(step).await,
                Pace::Real => tokio::time::sleep(step).await,
            }
        }
        let grace = match pace {
            Pace::Paused => Duration::from_secs(60),
            Pace::Real => RUN_OUT_REAL,
        };
        let report = self
            .pools
            .shutdown(tokio::time::Instant::now() + grace)
            .await;
        if !report.is_clean() {
            return Err(format!(
                "shutdown not clean once faults stopped: {report:?}"
            ));
        }
        Ok(())
    }

    /// What stays true while other threads run: each count a budget keeps
    /// is within the limits in force (a reservation never passes its
    /// limit, and `lower_limits` lowers a budget only to at least its use).
    /// Not the connection states (a move counts a connection twice for an
    /// instant), not the gauges an actor publishes after it answers (the
    /// scheduler's pending and running, the worker pool's jobs: a lowering
    /// can be accepted on a count not yet published), nor the harness's
    /// holdings (a grant reaches its caller before it is published).
    pub(crate) fn check_in_motion(&self, s: &Snapshot) -> Result<(), String> {
        let l = &self.limits;
        let bounds = [
            (
                "retained_epochs",
                s.retained_epochs,
                l.retained_configurations,
            ),
            ("clients", s.clients, l.configured_clients),
            ("idle", s.connections.idle, l.idle_connections),
            ("metadata_bytes", s.metadata_bytes, l.metadata_bytes),
        ];
        for (what, used, limit) in bounds {
            if used > limit {
                return Err(format!(
                    "{what} {used} over its limit {limit}, read in motion: {s:?}"
                ));
            }
        }
        Ok(())
    }
}

/// One observation; see [`World::look`].
struct Look {
    snapshot: Snapshot,
    checked: Result<(), String>,
    left: usize,
    held_nothing: bool,
}

/// Once every call, job, dial and cleanup ended and the harness holds
/// nothing, the engine counts nothing the harness would hold: no queued or
/// running request, no checked-out connection — but what a failed close
/// kept by the cleanup actor still owns (its connection, and through it its
/// request).
fn agree(s: &Snapshot) -> Result<(), String> {
    let c = s.connections;
    let kept = s.failed_cleanup > 0;
    let agrees = s.pending_requests == 0
        && s.workers == 0
        && s.cleanup_jobs == 0
        && c.connecting == 0
        && (kept || (s.running_requests == 0 && c.active + c.retired == 0));
    if agrees {
        Ok(())
    } else {
        Err(format!(
            "the harness holds nothing but the engine counts more: {s:?}"
        ))
    }
}

/// One line per snapshot, for the trace.
pub(crate) fn brief(s: &Snapshot) -> String {
    let c = s.connections;
    format!(
        "epochs {}/{} pend {} run {} conn a{} i{} c{} r{} work {} clean {} failed {} meta {}",
        s.configured_epochs,
        s.retained_epochs,
        s.pending_requests,
        s.running_requests,
        c.active,
        c.idle,
        c.connecting,
        c.retired,
        s.workers,
        s.cleanup_jobs,
        s.failed_cleanup,
        s.metadata_bytes
    )
}
