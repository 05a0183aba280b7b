//! What must hold after every step, and once faults stop.

use std::time::Duration;

use provider_pools::Snapshot;

use crate::call::Tally;
use crate::world::{settle, World, RUN_OUT};

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

    /// Faults stop: every call and job must end on its own, then shutdown
    /// must be clean.
    pub(crate) async fn run_out(&mut self) -> Result<(), String> {
        self.ctx.switch.stop();
        let deadline = tokio::time::Instant::now() + RUN_OUT;
        loop {
            settle().await;
            let running = self.calls.iter().chain(&self.jobs);
            let left = running.filter(|t| !t.is_finished()).count();
            let s = self.pools.snapshot();
            self.check(&s)?;
            if left == 0 && s.workers == 0 && s.cleanup_jobs == 0 {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "hang: {left} tasks still running {RUN_OUT:?} after faults stopped: {s:?}"
                ));
            }
            tokio::time::advance(Duration::from_millis(100)).await;
        }
        if !self.ctx.tally.is_zero() {
            return Err(format!("the harness still holds {:?}", self.ctx.tally));
        }
        let report = self
            .pools
            .shutdown(tokio::time::Instant::now() + Duration::from_secs(60))
            .await;
        if !report.is_clean() {
            return Err(format!(
                "shutdown not clean once faults stopped: {report:?}"
            ));
        }
        Ok(())
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
