//! A provider's rate for the whole cluster, on a real three-member etcd
//! cluster: what arrives at the origin, which sees every node, in any
//! window of one period never exceeds the global rate plus one burst per
//! node — over a run where the node leading the division (`c`, a child
//! process) is frozen with SIGSTOP while it holds a share and resumed far
//! past its lease, and the etcd leader is killed.
//!
//! The child is this test binary run again with `child_node` selected
//! and its settings in the environment; it says it is ready once it leads
//! the rate's division, and leaves the cluster when its stdin closes.

mod cluster_support;
#[path = "../examples/cluster/node.rs"]
#[allow(dead_code, reason = "the example's node; tests use a part")]
mod node;
#[path = "../examples/cluster/origin.rs"]
#[allow(dead_code, reason = "the example's origin; tests use a part")]
mod origin;

use std::io::Write;
use std::time::Duration;

use cluster_support::{
    child_env, runtime, serial, signal, spawn_child, start_origin, within, ClusterNode,
    ClusterRate, Running, Settings, GLOBAL, LEASE,
};
use provider_pools::ProviderId;
use provider_pools_test_peers::EtcdCluster;
use rustix::process::Signal;
use tokio::time::Instant;

const MEMBERS: [&str; 3] = ["a", "b", "c"];
const WORKERS: usize = 4;
/// The cluster's rate: 60 per second, a floor of 5 per node (a pool of
/// 45), each node's own rate 60 per second with a burst of 3.
const RATE: ClusterRate = ClusterRate {
    requests: 60,
    period_ms: 1_000,
    floor: 5,
    per_node: 60,
    burst: 3,
};
/// The most the origin may see in one period: the rate and a burst per
/// node.
const BOUND: usize = 60 + 3 * 3;

fn settings() -> Settings {
    Settings {
        rate: Some(RATE),
        ..Settings::quick(GLOBAL)
    }
}

fn api() -> ProviderId {
    ProviderId::new(node::PROVIDER).expect("a valid provider")
}

/// `Ok` when `node`'s share of the rate in force is within `range`.
fn rate_share(node: &ClusterNode, range: std::ops::RangeInclusive<u32>) -> Result<(), String> {
    let status = node.status();
    match status.rates.get(&api()) {
        Some(rate) if range.contains(&rate.in_force) => Ok(()),
        other => Err(format!(
            "{}: {other:?}, error {:?}",
            node.name, status.last_error
        )),
    }
}

/// The most arrivals in any window of `window` (each window starting at
/// an arrival).
fn most_in_window(arrivals: &[Instant], window: Duration) -> usize {
    let mut most = 0;
    let mut end = 0;
    for (start, &at) in arrivals.iter().enumerate() {
        while end < arrivals.len() && arrivals[end] < at + window {
            end += 1;
        }
        most = most.max(end - start);
    }
    most
}

#[test]
fn the_cluster_never_grants_above_its_rate_and_a_burst_per_node_through_a_stop_and_an_etcd_leader_kill(
) {
    let _serial = serial();
    runtime().block_on(async {
        let started = Instant::now();
        let mut etcd = EtcdCluster::start(3);
        let origin = start_origin(Duration::from_millis(5))
            .await
            .expect("an origin");
        // c first: it leads the rate's division.
        let mut child = spawn_child(&etcd, &origin.url);
        let a =
            Running::start_with("a", &MEMBERS, &etcd, &origin, &["x"], WORKERS, &settings()).await;
        let b =
            Running::start_with("b", &MEMBERS, &etcd, &origin, &["y"], WORKERS, &settings()).await;
        let nodes = [&*a.node, &*b.node];
        // Three tenants waiting, one per node: 15 each of the pool.
        let divided = within(4 * LEASE, "the rate divides in three", || {
            nodes.iter().try_for_each(|n| rate_share(n, 15..=15))
        })
        .await;
        assert!(
            nodes.iter().all(|n| !n.status().rates[&api()].leader),
            "c leads the rate's division"
        );

        signal(&child, Signal::STOP);
        let moved = within(3 * LEASE, "c's share moves to a and b", || {
            nodes.iter().try_for_each(|n| rate_share(n, 22..=23))
        })
        .await;
        tokio::time::sleep(LEASE / 2).await;
        signal(&child, Signal::CONT);
        let back = within(4 * LEASE, "c has a share again", || {
            nodes.iter().try_for_each(|n| rate_share(n, 15..=15))
        })
        .await;

        let leader = etcd.wait_for_leader(Duration::from_secs(10));
        etcd.kill(leader);
        tokio::time::sleep(LEASE).await;
        within(2 * LEASE, "the rate stays divided in three", || {
            nodes.iter().try_for_each(|n| rate_share(n, 15..=15))
        })
        .await;

        drop(child.stdin.take());
        #[allow(clippy::disallowed_methods, reason = "tests own their tasks")]
        let status = tokio::task::spawn_blocking(move || child.wait())
            .await
            .expect("the wait")
            .expect("the child exits");
        assert!(
            status.success(),
            "the child node left and shut down cleanly: {status}"
        );
        cluster_support::stop_all(vec![a, b]).await;

        let arrivals = origin.counts.arrivals();
        let most = most_in_window(&arrivals, Duration::from_millis(RATE.period_ms));
        let run = started.elapsed();
        println!(
            "rate divided in {divided:?}; c's share moved {moved:?} after SIGSTOP, back \
             {back:?} after SIGCONT; {} arrivals over {run:?}; most in one period: {most} \
             (bound {BOUND})",
            arrivals.len()
        );
        assert!(
            most <= BOUND,
            "{most} requests arrived within one period, above {BOUND}"
        );
        assert!(
            most >= 45,
            "the workers kept the rate busy: at most {most} in a period"
        );
    });
}

/// Node `c`, run by the test above in a child process.
#[test]
#[ignore = "the child process of the_cluster_never_grants_above_its_rate_…"]
fn child_node() {
    let Some((endpoints, origin)) = child_env() else {
        return;
    };
    runtime().block_on(async {
        let node =
            node::ClusterNode::start("c", &MEMBERS, &endpoints, &origin, &settings(), &["z"])
                .await
                .expect("node c starts");
        within(LEASE, "c leads the rate's division", || {
            match node.status().rates.get(&api()) {
                Some(rate) if rate.leader => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        let node = std::sync::Arc::new(node);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..WORKERS {
            workers.spawn(
                std::sync::Arc::clone(&node).work("z".to_owned(), std::sync::Arc::clone(&stop)),
            );
        }
        println!("child node ready");
        std::io::stdout().flush().expect("stdout");
        #[allow(clippy::disallowed_methods, reason = "tests own their tasks")]
        tokio::task::spawn_blocking(|| std::io::stdin().lines().count())
            .await
            .expect("stdin");
        stop.store(true, std::sync::atomic::Ordering::Release);
        while let Some(done) = workers.join_next().await {
            done.expect("a worker ends");
        }
        let node = std::sync::Arc::into_inner(node).expect("no worker holds the node");
        let (status, report) = node.stop().await.expect("node c stops");
        assert!(
            status.left && report.is_clean(),
            "c left {}, clean {}",
            status.left,
            report.is_clean()
        );
    });
}
