//! Cleanup tests, by concern: [`outcomes`] (what becomes of a resource and
//! its charge), [`capacity`] (slots of its own, refusals, lowering) and
//! [`span_outcome`] (the cleanup span's `outcome` label).
//! This file holds the scripted resource and the fixture they share.

mod capacity;
mod outcomes;
mod span_outcome;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use ractor::ActorRef;
use tokio::sync::oneshot;

use super::*;
use crate::accounts::Accounts;
use crate::budget::Budget;
use crate::workers::testing::{deadline, host};

/// What happened, in order: destructions and charge releases.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, event: String) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }

    fn events(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// How a probe's close goes.
enum Script {
    Succeed,
    Fail,
    Panic,
    /// Waits for the verdict: `true` closes, `false` fails.
    Wait(oneshot::Receiver<bool>),
}

/// A resource whose destruction is logged and whose close is scripted.
struct Probe {
    name: &'static str,
    log: Log,
    script: Script,
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.log.push(format!("{} destroyed", self.name));
    }
}

impl Cleanup for Probe {
    async fn close(mut self) -> Result<(), CloseFailure<Self>> {
        let closes = match std::mem::replace(&mut self.script, Script::Succeed) {
            Script::Succeed => true,
            Script::Fail => false,
            Script::Panic => panic!("provider close failure"),
            Script::Wait(verdict) => verdict.await.unwrap_or(false),
        };
        if closes {
            drop(self);
            Ok(())
        } else {
            Err(CloseFailure::new(self, "peer refused the close"))
        }
    }
}

/// A charge whose release is logged, holding a real budget charge.
struct Paid {
    name: &'static str,
    log: Log,
    _charge: crate::budget::Charge,
}

impl Drop for Paid {
    fn drop(&mut self) {
        self.log.push(format!("{} charge released", self.name));
    }
}

struct Fixture {
    pool: CleanupPool,
    accounts: Arc<Accounts>,
    limits: Limits,
    host: ActorRef<()>,
    log: Log,
    connections: Arc<Budget>,
}

async fn fixture(cleanup_jobs: u32) -> Fixture {
    let limits = Limits {
        cleanup_jobs,
        provider_workers: 2,
        ..Limits::DEFAULT
    };
    let accounts = Accounts::new(&limits);
    let host = host().await;
    let runtime = tokio::runtime::Handle::current();
    let pool = CleanupPool::spawn_linked(&limits, Arc::clone(&accounts), runtime, host.get_cell());
    let pool = pool.await.expect("cleanup pool starts");
    let log = Log::default();
    let connections = Budget::new("connections", 8);
    Fixture {
        pool,
        accounts,
        limits,
        host,
        log,
        connections,
    }
}

impl Fixture {
    fn probe(&self, name: &'static str, script: Script) -> (Probe, Paid) {
        let charge = self.connections.try_reserve(1).expect("a connection");
        let log = self.log.clone();
        let paid = Paid {
            name,
            log: log.clone(),
            _charge: charge,
        };
        (Probe { name, log, script }, paid)
    }

    fn submit(&self, name: &'static str, script: Script) -> CleanupTicket<Probe> {
        let (probe, paid) = self.probe(name, script);
        let ticket = self.pool.submit(probe, paid);
        ticket.map_err(|r| r.error).expect("a free cleanup slot")
    }

    fn gauges(&self) -> (u32, u32) {
        let g = &self.accounts.gauges;
        (
            g.cleanup_jobs.load(Ordering::Acquire),
            g.failed_cleanup.load(Ordering::Acquire),
        )
    }

    async fn counts(&self) -> CleanupCounts {
        self.pool.counts(deadline()).await.expect("counts answered")
    }

    async fn idle(&self) {
        let idle = self.pool.when_idle(deadline()).await;
        idle.expect("cleanup goes idle");
    }
}

fn events(list: &[&str]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}
