//! Cluster shares on a real three-member etcd cluster: three
//! nodes in this process share one provider's global running ceiling
//! through the cluster agent, tenants spread unevenly over them, all
//! calling one loopback origin that counts what it serves at once.
//!
//! - The origin never serves more than the global ceiling at once, read
//!   exactly at every arrival.
//! - Tenants' global shares are max-min fair (Jain's index ≥ 0.95).
//! - A node joining or leaving moves the shares within two lease periods.
//! - Killing the etcd leader changes nothing in the safety check.

mod cluster_support;
#[path = "../examples/cluster/node.rs"]
#[allow(dead_code, reason = "the example's node; tests use a part")]
mod node;
#[path = "../examples/cluster/origin.rs"]
#[allow(dead_code, reason = "the example's origin; tests use a part")]
mod origin;

use std::time::Duration;

use cluster_support::{
    average_shares, jain, runtime, serial, shares_are, start_origin, within, Running, GLOBAL, LEASE,
};
use provider_pools_test_peers::EtcdCluster;

const MEMBERS: [&str; 3] = ["a", "b", "c"];
/// How long the origin takes per request: long against the nodes' own
/// overhead, so what it serves at once is what the engines run.
const ORIGIN_THINK: Duration = Duration::from_millis(100);
/// Workers per tenant per node: more than any share, so every tenant is
/// backlogged everywhere it works.
const WORKERS: usize = 6;

#[test]
fn three_nodes_hold_the_global_ceiling_and_share_it_fairly_between_unevenly_spread_tenants() {
    let _serial = serial();
    runtime().block_on(async {
        let etcd = EtcdCluster::start(3);
        let origin = start_origin(ORIGIN_THINK).await.expect("an origin");
        // wide on all three nodes, pair on two, solo-b and solo-c on one.
        let a = Running::start("a", &MEMBERS, &etcd, &origin, &["wide", "pair"], WORKERS).await;
        let b = Running::start(
            "b",
            &MEMBERS,
            &etcd,
            &origin,
            &["wide", "pair", "solo-b"],
            WORKERS,
        )
        .await;
        let c = Running::start("c", &MEMBERS, &etcd, &origin, &["wide", "solo-c"], WORKERS).await;
        let nodes = [&*a.node, &*b.node, &*c.node];
        // 3 each: wide 1+1+1, pair 1 on a and 2 on b, solo-b 3, solo-c 3.
        let took = within(2 * LEASE, "the fair division is in force", || {
            shares_are(&nodes, &[("a", 2), ("b", 6), ("c", 4)])
        })
        .await;
        let tenants = ["wide", "pair", "solo-b", "solo-c"];
        let averages = average_shares(&origin, &tenants, Duration::from_secs(3)).await;
        let index = jain(&averages);
        println!("converged in {took:?}; averages {averages:?}; Jain {index:.4}");
        assert!(index >= 0.95, "Jain's index {index:.4} over {averages:?}");
        assert!(
            origin.counts.max_in_flight() <= GLOBAL,
            "the origin served {} at once, above {GLOBAL}",
            origin.counts.max_in_flight()
        );
        cluster_support::stop_all(vec![a, b, c]).await;
        assert!(origin.counts.max_in_flight() <= GLOBAL);
    });
}

#[test]
fn a_node_joining_or_leaving_moves_the_shares_within_two_lease_periods() {
    let _serial = serial();
    runtime().block_on(async {
        let etcd = EtcdCluster::start(3);
        let origin = start_origin(ORIGIN_THINK).await.expect("an origin");
        let a = Running::start("a", &MEMBERS, &etcd, &origin, &["x"], WORKERS).await;
        let b = Running::start("b", &MEMBERS, &etcd, &origin, &["y"], WORKERS).await;
        within(2 * LEASE, "a and b split the ceiling", || {
            shares_are(&[&a.node, &b.node], &[("a", 6), ("b", 6)])
        })
        .await;
        let c = Running::start("c", &MEMBERS, &etcd, &origin, &["z"], WORKERS).await;
        let joined = within(2 * LEASE, "c's share moves to it", || {
            shares_are(
                &[&a.node, &b.node, &c.node],
                &[("a", 4), ("b", 4), ("c", 4)],
            )
        })
        .await;
        // Leaving: from the call to stop (a drains, says so, and is
        // released by a table) until b and c hold its share.
        let leaving = tokio::time::Instant::now();
        let (left, clean, failed) = a.stop().await;
        assert!(
            left && clean && failed == 0,
            "a left {left}, clean {clean}, failed {failed}"
        );
        within(2 * LEASE, "a's share moves to b and c", || {
            shares_are(&[&b.node, &c.node], &[("b", 6), ("c", 6)])
        })
        .await;
        let after_leave = leaving.elapsed();
        assert!(after_leave <= 2 * LEASE, "a's leave took {after_leave:?}");
        println!("join moved shares in {joined:?}, leave in {after_leave:?}");
        assert!(
            origin.counts.max_in_flight() <= GLOBAL,
            "the origin served {} at once",
            origin.counts.max_in_flight()
        );
        cluster_support::stop_all(vec![b, c]).await;
    });
}

#[test]
fn killing_the_etcd_leader_mid_run_changes_nothing_in_the_safety_check() {
    let _serial = serial();
    runtime().block_on(async {
        let mut etcd = EtcdCluster::start(3);
        let origin = start_origin(ORIGIN_THINK).await.expect("an origin");
        let a = Running::start("a", &MEMBERS, &etcd, &origin, &["x", "w"], WORKERS).await;
        let b = Running::start("b", &MEMBERS, &etcd, &origin, &["y", "w"], WORKERS).await;
        let c = Running::start("c", &MEMBERS, &etcd, &origin, &["z"], WORKERS).await;
        let nodes = [&*a.node, &*b.node, &*c.node];
        let divided = || {
            let total: u32 = cluster_support::in_force(&nodes).values().sum();
            if total == GLOBAL {
                Ok(())
            } else {
                Err(format!("{:?}", cluster_support::in_force(&nodes)))
            }
        };
        within(2 * LEASE, "the ceiling is divided", divided).await;
        let leader = etcd.wait_for_leader(Duration::from_secs(10));
        etcd.kill(leader);
        // Run on through the election and two lease periods, watching how
        // much of the ceiling stays in force.
        let killed = tokio::time::Instant::now();
        let (mut lowest, mut short) = (GLOBAL, Duration::ZERO);
        while killed.elapsed() < 2 * LEASE {
            let step = tokio::time::Instant::now();
            tokio::time::sleep(Duration::from_millis(20)).await;
            let total: u32 = cluster_support::in_force(&nodes).values().sum();
            lowest = lowest.min(total);
            if total < GLOBAL {
                short += step.elapsed();
            }
        }
        let recovered = within(2 * LEASE, "the ceiling is divided again", divided).await;
        println!(
            "etcd member {leader} killed: shares in force fell to {lowest}/{GLOBAL}, \
             {short:?} below it in two leases; whole {recovered:?} after"
        );
        assert!(
            origin.counts.max_in_flight() <= GLOBAL,
            "the origin served {} at once",
            origin.counts.max_in_flight()
        );
        cluster_support::stop_all(vec![a, b, c]).await;
        assert!(origin.counts.max_in_flight() <= GLOBAL);
    });
}
