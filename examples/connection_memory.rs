//! What one pooled HTTP/1.1 connection costs the process, active and
//! idle: RSS and live heap per connection, against Debian's nginx
//! (installed by `scripts/peers`).
//!
//! Phases, each on top of the previous one (nothing is freed in between,
//! so allocator reuse cannot hide a cost):
//!
//! 1. baseline: a multi-thread runtime, one registry, one provider on
//!    nginx, one call made and its connection parked (code paths and the
//!    runtime warm; the first call below reuses it);
//! 2. active: `CONNECTIONS` streaming GETs held open at once, each holding
//!    its connection, its driver and its running request;
//! 3. idle: every body read to its end and every connection parked.
//!
//! Reported per phase: RSS (`VmRSS`, Linux only) and the live heap (every
//! allocation counted by a `stats_alloc` global allocator), and each delta
//! per connection from the baseline. 128 connections fit every limit of
//! the registry (`provider_workers` is at its ceiling of 128 as well), so
//! the same run compares releases whose connection drivers held a worker
//! slot with releases whose drivers do not.
//!
//! Exits non-zero if a call fails or the shutdown is not clean; nothing is
//! asserted about the figures. Run with
//! `cargo run --release --example connection_memory`.

#[path = "common/rss.rs"]
mod rss;

use std::alloc::System;
use std::process::ExitCode;
use std::time::Duration;

use provider_pools::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, Epoch, ExecutionPlan,
    InstallReceipt, Installation, LedgerId, Limits, OriginKind, OriginSlot, PolicyTable,
    PoolsConfig, ProviderConfig, ProviderId, ProviderPools, RunningRequest, ServiceName, SessionId,
    TenantId,
};
use provider_pools_adapters::http_origin::{
    call_streaming, BodyLimits, HttpDialer, HttpRequest, RequestTarget, ResponseStream,
};
use provider_pools_test_peers::{Nginx, NginxPeer};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use tokio::time::Instant;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Connections measured at once.
const CONNECTIONS: usize = 128;
/// Each response body, in bytes.
const BODY: usize = 1000;

fn heap() -> i64 {
    let stats = GLOBAL.stats();
    stats.bytes_allocated as i64 - stats.bytes_deallocated as i64
}

#[derive(Clone, Copy)]
struct Sample {
    rss: Option<u64>,
    heap: i64,
}

async fn sample() -> Sample {
    // Let freshly spawned tasks and actors run before reading.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Sample {
        rss: rss::rss(),
        heap: heap(),
    }
}

fn row(phase: &str, base: Sample, now: Sample) {
    let per = |delta: i64| delta as f64 / CONNECTIONS as f64;
    let rss = match (base.rss, now.rss) {
        (Some(b), Some(n)) => format!("{:.0}", per(n as i64 - b as i64)),
        _ => "n/a".to_owned(),
    };
    println!(
        "{phase:<10} {:>10} {:>14} {:>14}",
        now.rss
            .map_or("n/a".to_owned(), |r| format!("{:.1}", r as f64 / 1048576.0)),
        rss,
        format!("{:.0}", per(now.heap - base.heap)),
    );
}

struct Registry {
    pools: ProviderPools,
    receipt: InstallReceipt,
    policy: PolicyTable,
    dialer: HttpDialer,
}

impl Registry {
    async fn start(origin: &str) -> Result<Self, BoxError> {
        // Every limit at its ceiling: 128 connections fit them all, the
        // 128 provider workers included.
        let limits = Limits::CEILING;
        let config = PoolsConfig {
            limits,
            ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
        };
        let pools = ProviderPools::start(config).await?;
        let provider = ProviderId::new("web")?;
        let receipt = pools
            .install(Installation {
                provider: provider.clone(),
                authority: Authority::new("https://web.example")?,
                expected: Epoch::ZERO,
                credential: Credential::new(b"k".to_vec())?,
                config: ProviderConfig::new(ServiceName::new("web")?).with_origin(
                    OriginSlot::new(0),
                    OriginKind::Http,
                    origin,
                ),
            })
            .await?;
        let policy = PolicyTable::new();
        policy.allow(TenantId::new("t")?, provider);
        let dialer = HttpDialer::new(pools.clone());
        Ok(Self {
            pools,
            receipt,
            policy,
            dialer,
        })
    }

    async fn running(&self, session: u64) -> Result<RunningRequest, BoxError> {
        let far = Instant::now() + Duration::from_secs(600);
        let plan = ExecutionPlan::seal(
            TenantId::new("t")?,
            SessionId::new(session),
            LedgerId::new(1),
            far,
            far,
        );
        let input = self.pools.stage_input(&plan, Bytes::new())?;
        let ready = self
            .pools
            .admit(AdmitRequest {
                plan,
                provider: self.receipt.provider.clone(),
                slot: self.receipt.slots[0],
                kind: OriginKind::Http,
                input,
            })
            .await?;
        let call = self
            .pools
            .dispatch(&self.policy, ready.plan(), ready.provider())?;
        Ok(ready.start(call)?)
    }

    async fn open(&self, session: u64) -> Result<(ResponseStream, RunningRequest), BoxError> {
        let running = self.running(session).await?;
        let request = HttpRequest {
            method: hyper::Method::GET,
            target: RequestTarget::parse(&NginxPeer::body_path(BODY))?,
            headers: hyper::HeaderMap::new(),
            body: Bytes::new(),
            replayable: false,
        };
        let stream = call_streaming(
            &self.pools,
            &running,
            &self.dialer,
            request,
            BodyLimits::default(),
        )
        .await?;
        Ok((stream, running))
    }
}

async fn read_to_end(held: Vec<(ResponseStream, RunningRequest)>) -> Result<(), BoxError> {
    for (mut stream, running) in held {
        while let Some(chunk) = stream.next_chunk().await {
            chunk?;
        }
        drop(running);
    }
    Ok(())
}

async fn idle_count(registry: &Registry, wanted: u32) -> Result<(), BoxError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while registry.pools.snapshot().connections.idle != wanted {
        if Instant::now() >= deadline {
            return Err(format!("{wanted} idle connections not reached").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

async fn run() -> Result<bool, BoxError> {
    let nginx = Nginx::new().body(BODY).start();
    let registry = Registry::start(&nginx.origin()).await?;

    // Warm up: the baseline holds this one parked connection, which the
    // first of the calls below reuses.
    read_to_end(vec![registry.open(0).await?]).await?;
    idle_count(&registry, 1).await?;
    let base = sample().await;

    let mut held = Vec::with_capacity(CONNECTIONS);
    let opened: Vec<_> = (1..=CONNECTIONS as u64)
        .map(|session| registry.open(session))
        .collect();
    for open in opened {
        held.push(open.await?);
    }
    let active = sample().await;
    read_to_end(held).await?;
    idle_count(&registry, CONNECTIONS as u32).await?;
    let idle = sample().await;

    println!(
        "{:<10} {:>10} {:>14} {:>14}",
        "phase", "RSS MiB", "RSS B / conn", "heap B / conn"
    );
    row("baseline", base, base);
    row("active", base, active);
    row("idle", base, idle);

    let report = registry
        .pools
        .shutdown(Instant::now() + Duration::from_secs(10))
        .await;
    println!("shutdown clean: {}", report.is_clean());
    Ok(report.is_clean())
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("connection_memory: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("connection_memory: {e}");
            ExitCode::FAILURE
        }
    }
}
