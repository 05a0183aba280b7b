//! The soak: a long run of requests through the HTTP and blob adapters
//! while every provider's credential is rotated each second, watching the
//! process's RSS for growth.
//!
//! 64 closed-loop callers (`SOAK_CONCURRENCY`), spread over eight tenants,
//! share `SOAK_REQUESTS` requests (default 1,000,000): even-numbered ones are
//! a buffered HTTP GET against an in-process hyper origin on a free loopback
//! port (kept alive, so connections are parked idle and reused), odd ones a
//! blob put then get under a temporary root (four keys per tenant, so the
//! disk footprint stays constant). Every second (`SOAK_ROTATE_MS`, default
//! 1000; 0: never) a rotator reinstalls both providers, expecting the
//! current epoch: new admissions go to the new epoch, requests on the old
//! one finish there, its connections retire. `SOAK_MIX=http` or `blob`
//! sends every request through one adapter (for bisecting; default `both`).
//!
//! The runtime's blocking pool, where the blob adapter's file-system jobs
//! run, is bounded to `SOAK_BLOCKING_THREADS` threads (default 8; 0:
//! tokio's default of 512). Unbounded, it grows to each burst's high-water
//! mark and the RSS with it (RELIABILITY.md, "Soak").
//!
//! The first line records `MALLOC_ARENA_MAX` (glibc reads it before
//! `main`): measured with one, two and glibc's default number of arenas, none
//! was clearly flatter (RELIABILITY.md, "Soak").
//!
//! Every `SOAK_EVERY` completed requests (default 100,000) it prints the
//! count, the elapsed time, the RSS (`VmRSS` from `/proc/self/status`) and
//! its anonymous and file-backed parts, the live heap (bytes and blocks, from
//! a counting global allocator), the thread count, the accounted metadata
//! and the snapshot's connection and epoch counts. At the end: the curve as
//! a table, the flatness verdict and the shutdown report.
//!
//! The verdict: the first `SOAK_WARMUP` requests (default 200,000) are
//! warm-up — threads, allocator arenas, the pools' tables and hyper's
//! buffers reach their working size. The sample at the warm-up mark is the
//! baseline; every later sample must be within ±5 % of its RSS: PASS. Any
//! sample outside is FAIL; no sample after the baseline (or no readable
//! RSS) is NOT JUDGED.
//!
//! Priming: the warm-up's first `SOAK_PRIME` requests (default 20,000; 0:
//! none) run against an origin that thinks `SOAK_PRIME_THINK_MS` (default
//! 20) before each answer, so every HTTP caller holds a connection of its
//! own and the rotations overlap two epochs' worth of them: before the
//! baseline, the working set reaches a peak ordinary traffic never gets
//! near (all 64 running requests the limits allow, about 70 connections
//! across two epochs; ordinary traffic keeps at most about 20), and the
//! allocator holds that peak's memory from then on. Without it, the baseline records a quiet moment,
//! and the first load spike after it (a busier machine keeps more requests
//! and connections in flight) is memory the allocator keeps and RSS shows
//! as a step (RELIABILITY.md, "Soak"). The line that ends priming prints
//! the peak it reached.
//!
//! Exits non-zero on a failed request or rotation, an unclean shutdown, or a
//! verdict other than PASS. A request granted on an epoch that a rotation
//! retired before it started is refused with `AdmitError::Retired` by
//! design: those are counted apart, not as failures. `--quick` (the smoke
//! run of `scripts/test`, a few seconds) runs 20,000 requests sampled every
//! 2,000 and prints the verdict without asserting it (too short to judge).
//!
//! Run with `cargo run --release --locked --example soak`.

// The unit tests (the verdict) build without `main`'s callees.
#![cfg_attr(test, allow(dead_code))]

#[path = "../common/rss.rs"]
mod rss;
mod sample;
#[path = "../common/traffic.rs"]
mod traffic;

use std::alloc::System;
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use provider_pools::node::NodeConfig;
use provider_pools::{BrokerGeneration, PoolsConfig, ProviderId};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};

use sample::{judge, table, Peak, Sample, Verdict};
use traffic::{rotate, start_origin, BoxError, Traffic};

/// Counts live heap bytes and blocks for each sample.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const TENANTS: [&str; 8] = [
    "acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell",
];

/// RSS flatness tolerance after warm-up: ±5 %.
const TOLERANCE: f64 = 0.05;

/// The run's counts.
struct Settings {
    quick: bool,
    requests: u64,
    every: u64,
    warmup: u64,
    /// The first requests, run against a slow origin to drive the working
    /// set to a peak first; part of the warm-up.
    prime: u64,
    /// The origin's think time while priming.
    prime_think: Duration,
    concurrency: usize,
    /// The runtime's blocking-pool bound; zero: tokio's default (512).
    blocking_threads: usize,
    /// Rotation period; zero: no rotations.
    rotate: Duration,
    mix: Mix,
}

/// Which adapters carry the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mix {
    /// Even-numbered requests HTTP, odd ones blob.
    Both,
    Http,
    Blob,
}

impl Mix {
    /// The traffic round for request `n`: its parity picks the adapter.
    fn round(self, n: u64) -> u64 {
        match self {
            Mix::Both => n,
            Mix::Http => 2 * n,
            Mix::Blob => 2 * n + 1,
        }
    }
}

impl Settings {
    fn from_env() -> Result<Self, BoxError> {
        let quick = std::env::args().any(|a| a == "--quick");
        let var = |name: &str, default: u64| -> Result<u64, BoxError> {
            match std::env::var(name) {
                Ok(text) => Ok(text
                    .replace('_', "")
                    .parse()
                    .map_err(|e| format!("{name}: {e}"))?),
                Err(_) => Ok(default),
            }
        };
        let (requests, every, warmup, prime) = if quick {
            (20_000, 2_000, 4_000, 2_000)
        } else {
            (1_000_000, 100_000, 200_000, 20_000)
        };
        let settings = Self {
            quick,
            requests: var("SOAK_REQUESTS", requests)?,
            every: var("SOAK_EVERY", every)?.max(1),
            warmup: var("SOAK_WARMUP", warmup)?,
            prime: var("SOAK_PRIME", prime)?,
            prime_think: Duration::from_millis(var("SOAK_PRIME_THINK_MS", 20)?),
            concurrency: var("SOAK_CONCURRENCY", 64)?.max(1) as usize,
            blocking_threads: var("SOAK_BLOCKING_THREADS", 8)? as usize,
            rotate: Duration::from_millis(var("SOAK_ROTATE_MS", 1000)?),
            mix: match std::env::var("SOAK_MIX").as_deref() {
                Err(_) | Ok("both") => Mix::Both,
                Ok("http") => Mix::Http,
                Ok("blob") => Mix::Blob,
                Ok(other) => {
                    return Err(format!("SOAK_MIX: {other}: not both, http or blob").into())
                }
            },
        };
        if settings.prime > settings.warmup {
            return Err(format!(
                "SOAK_PRIME: {} is more than the warm-up ({}): priming is part of the warm-up",
                settings.prime, settings.warmup
            )
            .into());
        }
        Ok(settings)
    }
}

/// What the callers and the rotator share.
struct Soak {
    traffic: Traffic,
    total: u64,
    mix: Mix,
    issued: AtomicU64,
    done: AtomicU64,
    errors: Mutex<BTreeMap<&'static str, u64>>,
    rotations: AtomicU64,
    rotation_errors: Mutex<Vec<String>>,
    stop: AtomicBool,
}

impl Soak {
    /// A closed-loop caller: claims request numbers until all are issued.
    async fn caller(self: Arc<Self>, tenant: &'static str) {
        loop {
            let n = self.issued.fetch_add(1, Ordering::Relaxed);
            if n >= self.total {
                return;
            }
            if let Err(code) = self.traffic.call(tenant, self.mix.round(n)).await {
                *self
                    .errors
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(code)
                    .or_default() += 1;
            }
            self.done.fetch_add(1, Ordering::Release);
        }
    }

    /// Reinstalls every provider each second, expecting its current epoch.
    async fn rotator(
        self: Arc<Self>,
        period: Duration,
        config: Arc<NodeConfig>,
        providers: Vec<ProviderId>,
    ) {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        tick.tick().await;
        let mut n = 0u64;
        loop {
            tick.tick().await;
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            n += 1;
            for provider in &providers {
                // A fresh credential for the HTTP provider; the blob one has none.
                let token = format!("Bearer soak-token-{n}");
                let credential = (provider.as_str() == "weather").then_some(token.as_bytes());
                match rotate(&self.traffic.pools, &config, provider, credential).await {
                    Ok(_) => {
                        self.rotations.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => self
                        .rotation_errors
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("{provider}: {e}")),
                }
            }
        }
    }
}

async fn run(settings: &Settings) -> Result<bool, BoxError> {
    let origin = start_origin(if settings.prime > 0 {
        settings.prime_think
    } else {
        Duration::ZERO
    })
    .await?;
    let blob_root = tempfile::tempdir()?;
    let text = include_str!("soak.toml")
        .replace("${ORIGIN}", &origin.url)
        .replace("${BLOB_ROOT}", &blob_root.path().display().to_string());
    std::env::set_var("SOAK_WEATHER_TOKEN", "Bearer soak-token-0");
    let config = Arc::new(NodeConfig::parse(&text)?);
    let node = config
        .start(PoolsConfig::new(
            tokio::runtime::Handle::current(),
            BrokerGeneration::new(),
        ))
        .await?;
    let pools = node.pools.clone();
    println!(
        "soak: {} requests ({:?}), {} callers over {} tenants, {} blocking threads at most (0: tokio's default), rotation every {:?}, sample every {}, warm-up {} (the first {} primed with the origin thinking {:?}); origin {}, blob root {}",
        settings.requests,
        settings.mix,
        settings.concurrency,
        TENANTS.len(),
        settings.blocking_threads,
        settings.rotate,
        settings.every,
        settings.warmup,
        settings.prime,
        settings.prime_think,
        origin.url,
        blob_root.path().display()
    );
    // glibc reads MALLOC_ARENA_MAX before `main`; the run records it.
    println!(
        "soak: MALLOC_ARENA_MAX={}",
        std::env::var("MALLOC_ARENA_MAX")
            .unwrap_or_else(|_| "unset (glibc's default: 8 arenas per core)".into())
    );

    let soak = Arc::new(Soak {
        traffic: Traffic::new(&pools, &node.receipts, TENANTS)?,
        total: settings.requests,
        mix: settings.mix,
        issued: AtomicU64::new(0),
        done: AtomicU64::new(0),
        errors: Mutex::new(BTreeMap::new()),
        rotations: AtomicU64::new(0),
        rotation_errors: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
    });
    let providers: Vec<ProviderId> = node.receipts.keys().cloned().collect();
    drop(node);

    let started = Instant::now();
    let mut callers = JoinSet::new();
    for i in 0..settings.concurrency {
        callers.spawn(Arc::clone(&soak).caller(TENANTS[i % TENANTS.len()]));
    }
    let mut rotator = JoinSet::new();
    if !settings.rotate.is_zero() {
        rotator.spawn(Arc::clone(&soak).rotator(settings.rotate, Arc::clone(&config), providers));
    }

    let mut samples = Vec::new();
    let mut next = settings.every;
    let mut priming = settings.prime > 0;
    let mut peak = Peak::default();
    let mut panicked = 0u32;
    let mut poll = tokio::time::interval(Duration::from_millis(5));
    loop {
        let finished = tokio::select! {
            joined = callers.join_next() => match joined {
                Some(Ok(())) => false,
                Some(Err(e)) => {
                    eprintln!("a caller failed: {e}");
                    panicked += 1;
                    false
                }
                None => true,
            },
            _ = poll.tick() => false,
        };
        let done = soak.done.load(Ordering::Acquire);
        if priming {
            peak.observe(&pools.snapshot());
            if done >= settings.prime {
                origin.set_think(Duration::ZERO);
                priming = false;
                peak.print(done, started.elapsed());
            }
        }
        while next <= done.min(settings.requests) {
            let sample = Sample::take(
                next,
                started.elapsed(),
                pools.snapshot(),
                soak.rotations.load(Ordering::Relaxed),
            );
            sample.print();
            samples.push(sample);
            next += settings.every;
        }
        if finished {
            break;
        }
    }
    let elapsed = started.elapsed();
    soak.stop.store(true, Ordering::Release);
    while let Some(joined) = rotator.join_next().await {
        if let Err(e) = joined {
            eprintln!("the rotator failed: {e}");
            panicked += 1;
        }
    }

    let done = soak.done.load(Ordering::Acquire);
    let errors = std::mem::take(&mut *soak.errors.lock().unwrap_or_else(|e| e.into_inner()));
    // A request granted on an epoch that a rotation retired before the
    // request started is refused with `AdmitError::Retired` by design (the
    // caller retries on the new epoch); a started request always finishes on
    // its epoch. Those refusals are counted, not failures.
    let refused_by_rotation = errors.get("retired").copied().unwrap_or(0);
    let failed: u64 = errors.values().sum::<u64>() - refused_by_rotation;
    let rotation_errors = std::mem::take(
        &mut *soak
            .rotation_errors
            .lock()
            .unwrap_or_else(|e| e.into_inner()),
    );
    println!();
    println!(
        "{done} requests in {:.1} s ({:.0} requests/s); {} rotations; refused at start by a rotation (retired) {refused_by_rotation}; failed requests {failed} (errors by code {errors:?}); failed rotations {}",
        elapsed.as_secs_f64(),
        done as f64 / elapsed.as_secs_f64(),
        soak.rotations.load(Ordering::Relaxed),
        rotation_errors.len(),
    );
    for e in rotation_errors.iter().take(5) {
        println!("  rotation error: {e}");
    }

    let judgement = judge(&samples, settings.warmup, TOLERANCE);
    println!();
    table(&samples, judgement.base);
    println!();
    let band = format!(
        "every sample after the {} one within ±{:.0} % of it",
        settings.warmup,
        TOLERANCE * 100.0
    );
    let range = judgement.range.map_or(String::new(), |(lo, hi)| {
        format!(
            "; judged samples {:+.1} % to {:+.1} %",
            lo * 100.0,
            hi * 100.0
        )
    });
    match judgement.verdict {
        Verdict::Pass => println!("RSS flatness: PASS ({band}{range})"),
        Verdict::Fail => println!("RSS flatness: FAIL (not {band}{range})"),
        Verdict::NotJudged => println!(
            "RSS flatness: NOT JUDGED (no sample after the {} one, or RSS unreadable)",
            settings.warmup
        ),
    }

    drop(soak);
    let report = pools
        .shutdown(Instant::now() + Duration::from_secs(10))
        .await;
    println!("shutdown report: {report:?}");
    let clean = report.is_clean();
    println!("shutdown clean: {clean}");
    drop(blob_root);

    // The smoke run is too short to judge; a full run must produce a
    // verdict, and only PASS passes.
    let rss_ok = settings.quick || judgement.verdict == Verdict::Pass;
    Ok(clean
        && failed == 0
        && panicked == 0
        && rotation_errors.is_empty()
        && done == settings.requests
        && rss_ok)
}

fn main() -> ExitCode {
    let settings = match Settings::from_env() {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The blob adapter's file-system jobs run on the runtime's blocking
    // pool. Unbounded (tokio's default allows 512 threads), that pool grows
    // to each new burst's high-water mark — every new thread adds its stack
    // and, in glibc, possibly an allocator arena to the RSS — so the soak
    // bounds it, as a node embedding the pools should (see RELIABILITY.md).
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if settings.blocking_threads > 0 {
        builder.max_blocking_threads(settings.blocking_threads);
    }
    let runtime = match builder.build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("soak: runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&settings)) {
        Ok(true) => {
            println!("soak passed");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            eprintln!("soak failed (see above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("soak failed: {e}");
            ExitCode::FAILURE
        }
    }
}
