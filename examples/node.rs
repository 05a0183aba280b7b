//! The node demo: a multi-tenant workload against a loopback HTTP origin and
//! a temporary blob root, through one provider-pools registry.
//!
//! Eight tenants run closed-loop workers for about ten seconds (set
//! `NODE_DEMO_SECONDS` to change it); one of them, `flood`, runs eight times
//! as many workers as the others. Running capacity is smaller than demand,
//! so everyone is backlogged and the scheduler's rotation decides. Halfway
//! through, the HTTP provider's credential is rotated and the per-tenant
//! running ceiling is lowered. The HTTP provider has a request rate (300
//! a second, from the node file), shown each second with its tokens. The demo ends with a per-tenant table (grants,
//! p50/p99 admission wait, errors by kind), Jain's fairness index over the
//! tenants, and the shutdown report; it exits non-zero unless the report is
//! clean.
//!
//! While it runs, the demo serves its Prometheus exposition at
//! `http://127.0.0.1:PORT/metrics` (the URL is printed at start); at the end
//! it scrapes itself once over TCP and fails unless the expected metric
//! families are there.
//!
//! Run with `cargo run --release --example node`.

#[path = "common/metrics_http.rs"]
mod metrics_http;
#[path = "common/traffic.rs"]
mod traffic;

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use provider_pools::metrics::prometheus_client::registry::Registry;
use provider_pools::metrics::PoolsMetrics;
use provider_pools::node::NodeConfig;
use provider_pools::{BrokerGeneration, Limits, PoolsConfig, ProviderId};
use tokio::task::JoinSet;
use tokio::time::Instant;

use traffic::{rotate, start_origin, BoxError, Traffic};

/// The metric families the final scrape must contain, with their types.
const FAMILIES: [(&str, &str); 16] = [
    ("provider_pools_running_requests", "gauge"),
    ("provider_pools_pending_requests", "gauge"),
    ("provider_pools_connections", "gauge"),
    ("provider_pools_workers", "gauge"),
    ("provider_pools_drivers", "gauge"),
    ("provider_pools_metadata_bytes", "gauge"),
    ("provider_pools_admissions", "counter"),
    ("provider_pools_admission_wait_seconds", "histogram"),
    ("provider_pools_tenant_served", "counter"),
    ("provider_pools_tenant_served_share", "gauge"),
    ("provider_pools_tenant_running_requests", "gauge"),
    ("provider_pools_tenant_pending_requests", "gauge"),
    ("provider_pools_provider_running_requests", "gauge"),
    ("provider_pools_provider_pending_requests", "gauge"),
    ("provider_pools_class_running_requests", "gauge"),
    ("provider_pools_class_pending_requests", "gauge"),
];

const TENANTS: [(&str, usize); 8] = [
    ("acme", 2),
    ("globex", 2),
    ("initech", 2),
    ("umbrella", 2),
    ("hooli", 2),
    ("stark", 2),
    ("wayne", 2),
    ("flood", 16),
];

/// What one tenant saw.
#[derive(Default)]
struct TenantStats {
    grants: u64,
    waits_us: Vec<u64>,
    errors: BTreeMap<&'static str, u64>,
}

struct Demo {
    traffic: Traffic,
    stats: Mutex<BTreeMap<&'static str, TenantStats>>,
    stop: AtomicBool,
}

impl Demo {
    async fn worker(self: Arc<Self>, tenant: &'static str) {
        let mut round = 0u64;
        while !self.stop.load(Ordering::Acquire) {
            round += 1;
            let outcome = self.traffic.call(tenant, round).await;
            let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            let entry = stats.entry(tenant).or_default();
            match outcome {
                Ok(waited) => {
                    entry.grants += 1;
                    entry.waits_us.push(waited);
                }
                Err(code) => *entry.errors.entry(code).or_default() += 1,
            }
        }
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index] as f64 / 1_000.0
}

async fn run() -> Result<bool, BoxError> {
    let seconds: u64 = std::env::var("NODE_DEMO_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let origin = start_origin(Duration::from_millis(3)).await?.url;
    let blob_root = tempfile::tempdir()?;
    let text = include_str!("node.toml")
        .replace("${ORIGIN}", &origin)
        .replace("${BLOB_ROOT}", &blob_root.path().display().to_string());
    std::env::set_var("NODE_DEMO_WEATHER_TOKEN", "Bearer demo-token-1");
    let config = NodeConfig::parse(&text)?;
    let node = config
        .start(PoolsConfig::new(
            tokio::runtime::Handle::current(),
            BrokerGeneration::new(),
        ))
        .await?;
    let pools = node.pools.clone();
    let mut registry = Registry::default();
    PoolsMetrics::install(&pools)?.register(&mut registry);
    let metrics_addr = metrics_http::serve(Arc::new(registry)).await?;
    println!(
        "node started: origin {origin}, blob root {}",
        blob_root.path().display()
    );
    println!("metrics: http://{metrics_addr}/metrics");

    let weather_id = ProviderId::new("weather")?;
    let demo = Arc::new(Demo {
        traffic: Traffic::new(&pools, &node.receipts, TENANTS.iter().map(|(t, _)| *t))?,
        stats: Mutex::new(BTreeMap::new()),
        stop: AtomicBool::new(false),
    });

    let mut workers = JoinSet::new();
    for (tenant, count) in TENANTS {
        for _ in 0..count {
            workers.spawn(Arc::clone(&demo).worker(tenant));
        }
    }

    let started = Instant::now();
    let mut rotated = false;
    for second in 1..=seconds {
        tokio::time::sleep_until(started + Duration::from_secs(second)).await;
        let s = pools.snapshot();
        let grants: u64 = demo
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|t| t.grants)
            .sum();
        let rate = pools
            .provider_rate(&weather_id)
            .map_or_else(String::new, |r| {
                format!(" | weather {:.0}/s, {} tokens", r.per_second(), r.tokens)
            });
        println!(
            "[{second:>3}s] grants {grants:>6} | running {:>2} pending {:>3} | conns active {} idle {} | epochs {} | workers {} drivers {}{rate}",
            s.running_requests, s.pending_requests, s.connections.active, s.connections.idle,
            s.retained_epochs, s.workers, s.drivers,
        );
        if !rotated && second * 2 >= seconds {
            rotated = true;
            let rotated_to =
                rotate(&pools, &config, &weather_id, Some(b"Bearer demo-token-2")).await?;
            pools
                .lower_limits(Limits {
                    running_per_tenant: 4,
                    ..pools.limits_in_force()
                })
                .await?;
            println!(
                "        rotated weather's credential to epoch {} and lowered running_per_tenant to 4",
                rotated_to
            );
        }
    }
    demo.stop.store(true, Ordering::Release);
    while workers.join_next().await.is_some() {}

    println!();
    println!(
        "{:<10} {:>8} {:>10} {:>10}  errors",
        "tenant", "grants", "p50 ms", "p99 ms"
    );
    let stats = std::mem::take(&mut *demo.stats.lock().unwrap_or_else(|e| e.into_inner()));
    for (tenant, _) in TENANTS {
        let Some(t) = stats.get(tenant) else { continue };
        let mut waits = t.waits_us.clone();
        waits.sort_unstable();
        let errors: Vec<String> = t.errors.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        println!(
            "{tenant:<10} {:>8} {:>10.2} {:>10.2}  {}",
            t.grants,
            percentile(&waits, 0.50),
            percentile(&waits, 0.99),
            if errors.is_empty() {
                "-".to_string()
            } else {
                errors.join(" ")
            }
        );
    }
    let tenant_grants: Vec<f64> = TENANTS
        .iter()
        .map(|(tenant, _)| stats.get(tenant).map_or(0.0, |t| t.grants as f64))
        .collect();
    let jain = |xs: &[f64]| {
        let sum: f64 = xs.iter().sum();
        let squares: f64 = xs.iter().map(|x| x * x).sum();
        if squares == 0.0 {
            0.0
        } else {
            sum * sum / (xs.len() as f64 * squares)
        }
    };
    println!();
    println!(
        "fairness (Jain's index over the {} backlogged tenants' grants): {:.3}",
        tenant_grants.len(),
        jain(&tenant_grants)
    );

    let exposition = metrics_http::scrape(&metrics_addr).await?;
    check_exposition(&exposition, TENANTS.len())?;
    println!(
        "metrics: scraped {} bytes over TCP; {} families present",
        exposition.len(),
        FAMILIES.len()
    );

    drop(demo);
    let report = pools
        .shutdown(Instant::now() + Duration::from_secs(10))
        .await;
    println!("shutdown report: {report:?}");
    Ok(report.is_clean())
}

/// Fails unless every expected family is declared with its type, some
/// admissions were granted, and every tenant has a served share.
fn check_exposition(text: &str, tenants: usize) -> Result<(), BoxError> {
    for (family, kind) in FAMILIES {
        if !text.contains(&format!("# TYPE {family} {kind}\n")) {
            return Err(format!("the scrape lacks the {kind} family {family}").into());
        }
    }
    if !text.contains("provider_pools_admissions_total{outcome=\"admitted\"} ") {
        return Err("the scrape counts no granted admission".into());
    }
    let shares = text
        .lines()
        .filter(|l| l.starts_with("provider_pools_tenant_served_share{"))
        .count();
    if shares != tenants {
        return Err(format!("{shares} tenant shares exposed, expected {tenants}").into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => {
            println!("clean shutdown");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            eprintln!("shutdown was not clean");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("node demo failed: {e}");
            ExitCode::FAILURE
        }
    }
}
