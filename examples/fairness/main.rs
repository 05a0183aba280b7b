//! Fairness under a flood: one heavy tenant against many light ones, through
//! the real engine, a plain FIFO semaphore and mea's fair-share limiter.
//!
//! Each tenant runs closed-loop submitters: a submitter asks for a running
//! slot, holds it for a fixed service time (simulated work, a
//! `tokio::time::sleep`), drops it and asks again at once. The heavy tenant
//! runs 100 times as many submitters as each light tenant, so it keeps 100
//! times as many requests outstanding; running capacity is far below the
//! offered load, so every tenant is backlogged all the time and only the
//! limiter's order decides who runs.
//!
//! Six runs, one limiter and one scenario each: provider-pools
//! (`ProviderPools::start`, one provider, a `PolicyTable`, then
//! `stage_input` → `admit` → `dispatch` → `start` per request), a
//! `tokio::sync::Semaphore` with the same number of permits (its `acquire`
//! is FIFO: the hand-rolled alternative) and mea 0.6's
//! `admission::FairShare` with the same permits keyed by tenant (the
//! nearest published fair-share limiter: a freed permit goes to the waiting
//! tenant holding the fewest), each with the flood and without the heavy
//! tenant; the six are repeated (3 times by default) and the medians are
//! reported with every run. Reported per run: grants per
//! second, Jain's fairness index over the backlogged tenants' grants,
//! `J = (Σx)² / (n·Σx²)`, the heavy tenant's share, the light tenants'
//! p50/p99 admission wait (from the `admit` or `acquire` call to its
//! grant), and the longest interval without any grant — a stall of the
//! whole process (the cores were busy elsewhere) shows there, and moves a
//! p99 without saying anything about the order. Then, per limiter, the
//! median light p99 under the flood as a multiple of the median without it.
//!
//! Grants and waits count from the end of a warm-up (the initial burst is
//! queued in arrival order) until the end of the measured window; then the
//! submitters are aborted (their queued waiters are cancelled) and the
//! registry is shut down. The process exits non-zero only if a request
//! failed or a shutdown was not clean; the targets are printed, not
//! asserted.
//!
//! Clock: by default the real one, on a multi-thread runtime, so waits
//! include what the engine's actor hops cost. `--paused` runs everything on
//! a current-thread runtime with tokio's paused clock instead: time advances
//! only when every task is idle, so service times are exact and the waits
//! measure the grant order alone, deterministically, with the engine's own
//! costs taken as zero.
//!
//! Settings (environment, defaults in brackets): `FAIRNESS_SECONDS` measured
//! seconds per run [5], `FAIRNESS_WARMUP_MS` [1000], `FAIRNESS_LIGHT_TENANTS`
//! [15], `FAIRNESS_LIGHT_SUBMITTERS` per light tenant [4],
//! `FAIRNESS_FLOOD_FACTOR` [100], `FAIRNESS_RUNNING` running capacity [8],
//! `FAIRNESS_SERVICE_MS` [10], `FAIRNESS_REPEATS` [3]. `--quick` measures
//! 1 s after a 250 ms warm-up, once (the smoke run of `scripts/test`).
//!
//! Run with `cargo run --release --example fairness`.

mod limiter;
mod report;
mod settings;

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use provider_pools::TenantId;
use tokio::task::JoinSet;
use tokio::time::Instant;

use limiter::{Held, Kind, Limiter};
use settings::Settings;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What one tenant saw inside the measured window.
#[derive(Default, Clone)]
struct TenantStats {
    grants: u64,
    waits: Vec<Duration>,
    granted_at: Vec<Instant>,
    errors: u64,
}

struct Run {
    limiter: Limiter,
    tenants: Vec<TenantId>,
    stats: Mutex<Vec<TenantStats>>,
    service: Duration,
    from: Instant,
    until: Instant,
}

impl Run {
    async fn submitter(self: Arc<Self>, tenant: usize) {
        while Instant::now() < self.until {
            let outcome = self.limiter.acquire(&self.tenants[tenant]).await;
            let granted = Instant::now();
            let held = self.record(tenant, granted, outcome);
            // Simulated work; a failure waits as long, so a broken set-up
            // does not spin.
            tokio::time::sleep(self.service).await;
            drop(held);
        }
    }

    /// Counts a grant inside the measured window, or an error.
    fn record(
        &self,
        tenant: usize,
        granted: Instant,
        outcome: Result<(Held, Duration), &'static str>,
    ) -> Option<Held> {
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        let entry = &mut stats[tenant];
        match outcome {
            Ok((held, waited)) => {
                if granted >= self.from && granted < self.until {
                    entry.grants += 1;
                    entry.waits.push(waited);
                    entry.granted_at.push(granted);
                }
                Some(held)
            }
            Err(_) => {
                entry.errors += 1;
                None
            }
        }
    }
}

/// What one run measured.
pub(crate) struct Outcome {
    pub(crate) kind: Kind,
    pub(crate) flood: bool,
    pub(crate) grants_per_s: f64,
    /// Jain's index over every tenant's grants.
    pub(crate) jain: f64,
    /// The heavy tenant's share of the grants, when flooding.
    pub(crate) heavy_share: Option<f64>,
    pub(crate) light_p50_ms: f64,
    pub(crate) light_p99_ms: f64,
    /// The longest interval without any grant: a stall of the whole
    /// process (another process had the cores) shows here, not a fairness
    /// effect.
    pub(crate) max_gap_ms: f64,
    pub(crate) errors: u64,
    pub(crate) clean: bool,
}

async fn run(kind: Kind, flood: bool, settings: &Settings) -> Result<Outcome, BoxError> {
    let mut tenants = Vec::new();
    let mut submitters = Vec::new();
    if flood {
        tenants.push(TenantId::new("heavy")?);
        submitters.push(settings.heavy_submitters());
    }
    for i in 0..settings.light_tenants {
        tenants.push(TenantId::new(format!("light{i:02}"))?);
        submitters.push(settings.light_submitters);
    }
    let limiter = Limiter::start(kind, settings, &tenants).await?;
    let from = Instant::now() + settings.warmup;
    let run = Arc::new(Run {
        limiter,
        stats: Mutex::new(vec![TenantStats::default(); tenants.len()]),
        tenants,
        service: settings.service,
        from,
        until: from + settings.measured,
    });
    let mut tasks = JoinSet::new();
    for (tenant, count) in submitters.iter().enumerate() {
        for _ in 0..*count {
            tasks.spawn(Arc::clone(&run).submitter(tenant));
        }
    }
    tokio::time::sleep_until(run.until).await;
    // Queued waiters are cancelled; running ones release as they drop.
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}

    let run = Arc::into_inner(run).ok_or("every submitter has stopped")?;
    let stats = run.stats.into_inner().unwrap_or_else(|e| e.into_inner());
    let clean = run.limiter.stop().await;
    let first_light = usize::from(flood);
    let mut light_waits: Vec<Duration> = stats[first_light..]
        .iter()
        .flat_map(|t| t.waits.iter().copied())
        .collect();
    light_waits.sort_unstable();
    let mut granted_at: Vec<Instant> = stats
        .iter()
        .flat_map(|t| t.granted_at.iter().copied())
        .collect();
    granted_at.sort_unstable();
    let grants: Vec<u64> = stats.iter().map(|t| t.grants).collect();
    let total: u64 = grants.iter().sum();
    Ok(Outcome {
        kind,
        flood,
        grants_per_s: total as f64 / settings.measured.as_secs_f64(),
        jain: report::jain(&grants),
        heavy_share: flood.then(|| grants[0] as f64 / total.max(1) as f64),
        light_p50_ms: report::percentile_ms(&light_waits, 0.50),
        light_p99_ms: report::percentile_ms(&light_waits, 0.99),
        max_gap_ms: granted_at
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64() * 1_000.0)
            .fold(0.0, f64::max),
        errors: stats.iter().map(|t| t.errors).sum(),
        clean,
    })
}

async fn main_async(settings: Settings) -> Result<bool, BoxError> {
    println!(
        "fairness under a flood: 1 heavy tenant x {} submitters, {} light tenants x {} submitters; \
         running capacity {}, service time {:?}; {:?} measured after {:?} warm-up; {} clock; \
         {} repeat(s)",
        settings.heavy_submitters(),
        settings.light_tenants,
        settings.light_submitters,
        settings.running,
        settings.service,
        settings.measured,
        settings.warmup,
        if settings.paused { "paused" } else { "real" },
        settings.repeats,
    );
    println!();
    report::header("run");
    let mut outcomes = Vec::new();
    for repeat in 1..=settings.repeats {
        for kind in Kind::ALL {
            for flood in [false, true] {
                let outcome = run(kind, flood, &settings).await?;
                report::row(&repeat.to_string(), &outcome);
                outcomes.push(outcome);
            }
        }
    }
    report::summary(&settings, &outcomes);
    let errors: u64 = outcomes.iter().map(|o| o.errors).sum();
    let clean = outcomes.iter().all(|o| o.clean);
    if errors > 0 {
        eprintln!("{errors} requests failed");
    }
    if !clean {
        eprintln!("a registry's shutdown was not clean");
    }
    Ok(errors == 0 && clean)
}

fn main() -> ExitCode {
    let outcome = Settings::from_env().and_then(|settings| {
        let runtime = if settings.paused {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()?
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?
        };
        runtime.block_on(main_async(settings))
    });
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("fairness harness failed: {e}");
            ExitCode::FAILURE
        }
    }
}
