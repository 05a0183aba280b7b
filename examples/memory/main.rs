//! What pending requests and idle connections cost in memory: the pools'
//! accounted metadata, the live heap and the process RSS.
//!
//! Phases, each added on top of the previous one (nothing is freed between
//! them, so allocator reuse cannot hide a cost):
//!
//! 1. baseline: a multi-thread runtime, four registries (the
//!    `idle_connections` ceiling is 1,024 per registry, so 4,096 idle
//!    connections need four), their providers installed, a loopback
//!    listener;
//! 2. 1,024 pending requests in the first registry: four running requests
//!    fill its running limit, then 1,024 tasks call `admit` (64 tenants × 8
//!    providers) and stay queued;
//! 3. 4,096 idle connections: in each registry, 256 real loopback TCP
//!    connections dialed on each of a provider's four clients (the
//!    `connections_per_client` ceiling is 256), then parked;
//! 4. for comparison, 4,096 bare `tokio::net::TcpStream`s to the same
//!    listener, held in a `Vec`: what the sockets themselves cost;
//! 5. for comparison, 1,024 tasks queued on a `tokio::sync::Semaphore`
//!    with no permit: what a waiter costs a hand-rolled limiter.
//!
//! Reported per phase: RSS (`VmRSS` from `/proc/self/status`: Linux only;
//! elsewhere it reads n/a), the live heap (bytes and blocks: every allocation
//! counted by a `stats_alloc` global allocator) and the accounted metadata (sum of the
//! registries' `Snapshot::metadata_bytes`), and each delta per item. The
//! listener runs on a plain thread and keeps the accepted sockets in a
//! `Vec` (4 bytes each in user space; their kernel buffers are not RSS).
//!
//! File descriptors: the run holds two per connection (client and accepted
//! end), about 16,500 in all, so it raises its soft `RLIMIT_NOFILE` to the
//! hard limit at start (no privilege needed; the same as `ulimit -n` up to
//! the hard limit, but without relying on the caller's shell); it stops
//! with an error if the hard limit is too low.
//!
//! `--quick` divides every count by four (the smoke run of `scripts/test`).
//! The process exits non-zero if a phase fails or a registry's shutdown is
//! not clean; the target (RSS growth per pending waiter ≤ 1 KiB) is printed,
//! not asserted.
//!
//! Run with `cargo run --release --example memory`.
mod measure;
mod registry;
#[path = "../common/rss.rs"]
mod rss;

use std::alloc::System;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use provider_pools::{AdmitRequest, Bytes, OriginKind, TenantId};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::Instant;

use measure::{row, sample};
use registry::{plan, wait_for, Listener, Registry};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const REGISTRIES: usize = 4;
const CLIENTS: usize = 4;
const TENANTS: usize = 64;
const PROVIDERS: usize = 8;

/// Counts for one run.
#[derive(Debug, Clone, Copy)]
struct Counts {
    waiters: usize,
    per_client: usize,
}

impl Counts {
    fn idle(&self) -> usize {
        REGISTRIES * CLIENTS * self.per_client
    }

    /// Descriptors held at the peak: two per pooled and per bare connection
    /// (client and accepted end), plus slack for the runtime and stdio.
    fn descriptors(&self) -> u64 {
        4 * self.idle() as u64 + 256
    }
}

/// Raises the soft open-files limit towards the hard limit (to `wanted`
/// when the hard limit is unlimited); returns the soft limit before and
/// after, `None` meaning unlimited.
fn raise_nofile(wanted: u64) -> (Option<u64>, Option<u64>) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let before = getrlimit(Resource::Nofile);
    let raised = Rlimit {
        current: Some(before.maximum.unwrap_or(wanted)),
        maximum: before.maximum,
    };
    // Lowering never happens here: a refusal leaves the limit as it was,
    // and the caller checks what it got.
    if before
        .current
        .is_some_and(|soft| Some(soft) < raised.current)
    {
        let _ = setrlimit(Resource::Nofile, raised);
    }
    (before.current, getrlimit(Resource::Nofile).current)
}

async fn run(counts: Counts) -> Result<bool, BoxError> {
    let listener = Listener::start()?;
    let target = listener.addr.to_string();
    let mut registries = Vec::new();
    for i in 0..REGISTRIES {
        registries.push(Registry::start(counts, &target, i == 0).await?);
    }
    let mut holders = Vec::new();
    for registry in &registries {
        holders.push(registry.hold_running().await?);
    }
    // Tenant IDs are shared by their requests, as a host would share them.
    let tenants = (0..TENANTS)
        .map(|t| TenantId::new(format!("t{t:02}")))
        .collect::<Result<Vec<_>, _>>()?;
    let admit_size = {
        let receipt = &registries[0].queued[0];
        let plan = plan(&tenants[0], u64::MAX);
        let input = registries[0].pools.stage_input(&plan, Bytes::new())?;
        let unpolled = registries[0].pools.admit(AdmitRequest {
            plan,
            provider: receipt.provider.clone(),
            slot: receipt.slots[0],
            kind: OriginKind::Http,
            input,
        });
        std::mem::size_of_val(&unpolled)
    };
    let baseline = sample(&registries).await;
    println!(
        "{:<34} {:>8} {:>9} {:>10} {:>12} {:>12} {:>11} {:>13}",
        "phase",
        "RSS MiB",
        "RSS B/it",
        "heap MiB",
        "heap B/item",
        "blocks/item",
        "accounted B",
        "acct. B/item"
    );
    row("baseline (4 registries, 16 running)", 1, baseline, baseline);

    // Phase 2: pending waiters behind the first registry's full running limit.
    let first = &registries[0];
    let mut waiters = JoinSet::new();
    let mut future_size = 0;
    for i in 0..counts.waiters {
        let pools = first.pools.clone();
        let receipt = &first.queued[(i / TENANTS) % PROVIDERS];
        let plan = plan(&tenants[i % TENANTS], i as u64);
        let input = pools.stage_input(&plan, Bytes::from_static(b"payload"))?;
        let request = AdmitRequest {
            plan,
            provider: receipt.provider.clone(),
            slot: receipt.slots[0],
            kind: OriginKind::Http,
            input,
        };
        // No grant comes while the running limit is full: the task stays
        // queued until it is aborted.
        let waiter = async move { pools.admit(request).await.map(drop) };
        future_size = std::mem::size_of_val(&waiter);
        waiters.spawn(waiter);
    }
    let pending = counts.waiters as u32;
    wait_for("every waiter queued", || {
        first.pools.snapshot().pending_requests == pending
    })
    .await?;
    let queued = sample(&registries).await;
    let waiter_rss = row(
        &format!("+{} pending waiters", counts.waiters),
        counts.waiters,
        baseline,
        queued,
    );

    // Phase 3: idle connections in every registry.
    for (registry, running) in registries.iter().zip(&holders) {
        registry
            .park_connections(running, counts.per_client)
            .await?;
    }
    let parked = sample(&registries).await;
    row(
        &format!("+{} idle connections", counts.idle()),
        counts.idle(),
        queued,
        parked,
    );

    // Phase 4: the same number of bare sockets.
    let mut bare = Vec::with_capacity(counts.idle());
    for _ in 0..counts.idle() {
        bare.push(TcpStream::connect(&target).await?);
    }
    let raw = sample(&registries).await;
    row(
        &format!("+{} bare tokio TcpStreams", counts.idle()),
        counts.idle(),
        parked,
        raw,
    );

    // Phase 5: the same number of tasks queued on a bare semaphore.
    let semaphore = Arc::new(tokio::sync::Semaphore::new(0));
    let mut floor = JoinSet::new();
    let mut floor_size = 0;
    for _ in 0..counts.waiters {
        let semaphore = Arc::clone(&semaphore);
        let waiter = async move {
            let _permit = semaphore.acquire().await;
        };
        floor_size = std::mem::size_of_val(&waiter);
        floor.spawn(waiter);
    }
    let on_semaphore = sample(&registries).await;
    row(
        &format!("+{} tasks queued on a Semaphore", counts.waiters),
        counts.waiters,
        raw,
        on_semaphore,
    );
    println!();
    println!(
        "futures: a pools waiter's task {future_size} B, of which `ProviderPools::admit`'s \
         {admit_size} B (an `AdmitRequest` is {} B); a semaphore waiter's task {floor_size} B",
        std::mem::size_of::<AdmitRequest>()
    );
    println!("RSS is counted in whole pages, heap in bytes and blocks (allocations not freed)");
    if let Some(per) = waiter_rss {
        println!(
            "target RSS growth per pending waiter <= 1024 B: {per:.0} B ({})",
            if per <= 1024.0 { "met" } else { "missed" }
        );
    }

    // Teardown: cancel the waiters, release everything, shut down.
    waiters.abort_all();
    while waiters.join_next().await.is_some() {}
    floor.abort_all();
    while floor.join_next().await.is_some() {}
    drop(bare);
    drop(holders);
    let mut clean = true;
    for registry in registries {
        let report = registry
            .pools
            .shutdown(Instant::now() + Duration::from_secs(10))
            .await;
        if !report.is_clean() {
            eprintln!("shutdown not clean: {report:?}");
            clean = false;
        }
    }
    listener.stop();
    Ok(clean)
}

/// Raises the descriptor limit and fits the counts to it: a full run needs
/// its stated counts, a quick one shrinks its connections to what fits.
fn prepare(quick: bool) -> Result<Counts, BoxError> {
    let mut counts = if quick {
        Counts {
            waiters: 256,
            per_client: 64,
        }
    } else {
        Counts {
            waiters: 1_024,
            per_client: 256,
        }
    };
    let (before, after) = raise_nofile(counts.descriptors());
    let fmt = |limit: Option<u64>| limit.map_or("unlimited".to_string(), |l| l.to_string());
    if let Some(soft) = after.filter(|&soft| soft < counts.descriptors()) {
        let fitting = (soft.saturating_sub(256) / (4 * (REGISTRIES * CLIENTS) as u64)) as usize;
        if !quick || fitting == 0 {
            return Err(format!(
                "this run holds about {} file descriptors and RLIMIT_NOFILE allows {soft} \
                 after raising: raise the hard limit (`ulimit -Hn`), or pass --quick",
                counts.descriptors()
            )
            .into());
        }
        counts.per_client = fitting;
    }
    println!(
        "memory: {} pending waiters, {} idle connections ({REGISTRIES} registries x \
         {CLIENTS} clients x {}); RLIMIT_NOFILE soft limit {} -> {}",
        counts.waiters,
        counts.idle(),
        counts.per_client,
        fmt(before),
        fmt(after),
    );
    Ok(counts)
}

fn main() -> ExitCode {
    let quick = std::env::args().skip(1).any(|a| a == "--quick");
    let outcome = prepare(quick).and_then(|counts| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        runtime.block_on(run(counts))
    });
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("memory example failed: {e}");
            ExitCode::FAILURE
        }
    }
}
