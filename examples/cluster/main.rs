//! The cluster example: one provider with a global running ceiling, three
//! nodes sharing it through etcd, and tenants spread unevenly over them.
//!
//! - A three-member etcd cluster (the binary `scripts/peers` installs) and
//!   one loopback origin that counts the requests it serves at once.
//! - Nodes `a`, `b` and `c`, each started from a node file with a
//!   `[cluster]` section: the provider `api` may run 12 requests at once
//!   in the whole cluster, whatever each node's own ceiling (12 too).
//! - Tenant `wide` works on all three nodes, `pair` on `a` and `b`,
//!   `solo-b` on `b` only, `solo-c` on `c` only; each has more work than
//!   its share, so a fair division gives each 3 of the 12.
//!
//! A live line per second shows the origin's requests in flight (the
//! cluster's running requests for `api`) and each tenant's; the final
//! table has each tenant's average share after convergence and Jain's
//! index over them. Every node then leaves the cluster and shuts down.
//! It exits non-zero if the origin ever served more than the ceiling at
//! once, or a shutdown was not clean.
//!
//! Run with `cargo run --release --example cluster` (`-- --quick` for a
//! short run, as `scripts/test` does).

mod node;
mod origin;

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use provider_pools_test_peers::EtcdCluster;
use tokio::task::JoinSet;
use tokio::time::Instant;

use node::{jain, ClusterNode, Settings};
use origin::BoxError;

const GLOBAL: u32 = 12;
const MEMBERS: [&str; 3] = ["a", "b", "c"];
/// Which tenants work on which node, with their workers there.
const PLACEMENT: [(&str, &[&str]); 4] = [
    ("wide", &["a", "b", "c"]),
    ("pair", &["a", "b"]),
    ("solo-b", &["b"]),
    ("solo-c", &["c"]),
];
const WORKERS: usize = 6;

async fn run(seconds: u64) -> Result<bool, BoxError> {
    let etcd = EtcdCluster::start(3);
    let origin = origin::start(Duration::from_millis(20)).await?;
    let settings = Settings::quick(GLOBAL);
    let tenants: Vec<&str> = PLACEMENT.iter().map(|(t, _)| *t).collect();
    let mut nodes = BTreeMap::new();
    for name in MEMBERS {
        let node = ClusterNode::start(
            name,
            &MEMBERS,
            &etcd.endpoints(),
            &origin.url,
            &settings,
            &tenants,
        )
        .await?;
        nodes.insert(name, Arc::new(node));
    }
    println!(
        "etcd at {}; origin {}; provider api: {GLOBAL} running for the whole cluster",
        etcd.endpoints().join(", "),
        origin.url
    );
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = JoinSet::new();
    for (tenant, placed) in PLACEMENT {
        for name in placed {
            for _ in 0..WORKERS {
                let node = Arc::clone(&nodes[name]);
                workers.spawn(node.work(tenant.to_owned(), Arc::clone(&stop)));
            }
        }
    }

    // Sample every 10 ms; average each tenant's share after a warm-up.
    let warm_up = Duration::from_secs(3).min(Duration::from_secs(seconds / 2));
    let started = Instant::now();
    let mut sums: BTreeMap<&str, u64> = tenants.iter().map(|t| (*t, 0)).collect();
    let mut samples = 0u64;
    let mut next_line = started + Duration::from_secs(1);
    while started.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = origin.counts.tenants();
        if started.elapsed() >= warm_up {
            samples += 1;
            for tenant in &tenants {
                *sums.get_mut(tenant).unwrap_or(&mut 0) +=
                    u64::from(*now.get(*tenant).unwrap_or(&0));
            }
        }
        if Instant::now() >= next_line {
            next_line += Duration::from_secs(1);
            let shares: Vec<String> = tenants
                .iter()
                .map(|t| format!("{t} {}", now.get(*t).unwrap_or(&0)))
                .collect();
            let ceilings: Vec<String> = nodes
                .values()
                .map(|n| {
                    let status = n.status();
                    let ceiling = status.providers.values().map(|p| p.ceiling).sum::<u32>();
                    format!("{} {ceiling}", n.name)
                })
                .collect();
            println!(
                "[{:>2}s] api running {:>2}/{GLOBAL} (max {:>2}) | {} | node ceilings {}",
                started.elapsed().as_secs(),
                origin.counts.in_flight(),
                origin.counts.max_in_flight(),
                shares.join(", "),
                ceilings.join(", "),
            );
        }
    }
    stop.store(true, Ordering::Release);
    let mut failed = 0;
    while let Some(done) = workers.join_next().await {
        failed += done?.1;
    }

    println!();
    println!("{:<8} {:>12} {:>8}", "tenant", "avg running", "share");
    let averages: Vec<f64> = tenants
        .iter()
        .map(|t| sums[t] as f64 / samples.max(1) as f64)
        .collect();
    let total: f64 = averages.iter().sum();
    for (tenant, average) in tenants.iter().zip(&averages) {
        println!(
            "{tenant:<8} {average:>12.2} {:>7.1}%",
            100.0 * average / total.max(f64::MIN_POSITIVE)
        );
    }
    println!(
        "Jain's index over tenants: {:.4} ({samples} samples after {} s)",
        jain(&averages),
        warm_up.as_secs()
    );
    let max = origin.counts.max_in_flight();
    println!(
        "most requests at once at the origin: {max} (ceiling {GLOBAL}); {} served, {failed} calls failed",
        origin.counts.served()
    );

    let mut clean = max <= GLOBAL;
    for (name, node) in nodes {
        let node = Arc::into_inner(node).ok_or("a worker still holds the node")?;
        let (status, report) = node.stop().await?;
        println!(
            "node {name}: left the cluster {}, shutdown {}",
            if status.left {
                "cleanly"
            } else {
                "by lease expiry"
            },
            if report.is_clean() {
                "clean"
            } else {
                "NOT clean"
            }
        );
        clean &= report.is_clean() && status.left;
    }
    Ok(clean)
}

#[tokio::main]
async fn main() -> ExitCode {
    let quick = std::env::args().any(|a| a == "--quick");
    let seconds = if quick { 6 } else { 15 };
    match run(seconds).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("cluster: the ceiling was exceeded or a node did not stop cleanly");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("cluster: {error}");
            ExitCode::FAILURE
        }
    }
}
