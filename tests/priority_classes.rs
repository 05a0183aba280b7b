//! Priority classes through the public handle: a plan's class decides
//! the order of grants across tenants, and the registry's minimum shares
//! hold a lower class out of a higher one's unused minimum.

#[path = "fairness/driver.rs"]
mod driver;
mod support;

use driver::{block, install_providers, Requests};
use provider_pools::{
    AdmitError, BrokerGeneration, Limits, MinShares, PoolsConfig, Priority, ProviderPools,
};
use support::{eventually, plan};

async fn start(limits: Limits, min_shares: MinShares) -> ProviderPools {
    let config = PoolsConfig {
        limits,
        min_shares,
        ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
    };
    ProviderPools::start(config).await.expect("registry starts")
}

/// One running slot, held; batch, interactive and system requests queue
/// in that order, each of its own tenant; as the slot passes on, system
/// is granted first, then interactive, then batch.
#[tokio::test]
async fn the_highest_class_waiting_is_granted_first() {
    let limits = Limits {
        running_requests: 1,
        running_per_tenant: 1,
        running_per_provider: 1,
        ..Limits::DEFAULT
    };
    let pools = start(limits, MinShares::NONE).await;
    let names = ["p".to_string(), "blocker".to_string()];
    let receipts = install_providers(&pools, &names).await;
    let mut held = block(&pools, &receipts[1], 1).await;

    let mut requests = Requests::new();
    let order = [
        ("batch", Priority::Batch, 3),
        ("interactive", Priority::Interactive, 2),
        ("system", Priority::System, 1),
    ];
    for (queued, (tenant, class, tag)) in order.into_iter().enumerate() {
        let plan = plan(tenant, tag as u64).with_priority(class);
        requests.queue(&pools, plan, &receipts[0], tag);
        eventually("request queued", || {
            pools.snapshot().pending_requests == queued as u32 + 1
        })
        .await;
    }
    drop(held.pop());
    let mut grants = Vec::new();
    for _ in 0..3 {
        let (tag, release) = requests.next().await;
        grants.push(tag);
        let _ = release.send(());
    }
    assert_eq!(grants, [1, 2, 3], "system, interactive, batch");
}

/// Interactive's minimum is half of four slots: a batch tenant queueing
/// four requests runs two, and an interactive request arriving after is
/// granted at once.
#[tokio::test]
async fn a_lower_class_leaves_a_higher_class_its_minimum_free() {
    let limits = Limits {
        running_requests: 4,
        running_per_tenant: 4,
        running_per_provider: 4,
        ..Limits::DEFAULT
    };
    let shares = MinShares::new([0, 50, 0]).expect("valid shares");
    let pools = start(limits, shares).await;
    let receipts = install_providers(&pools, &["p".to_string()]).await;

    let mut requests = Requests::new();
    for tag in 0..4 {
        let plan = plan("batch", tag as u64).with_priority(Priority::Batch);
        requests.queue(&pools, plan, &receipts[0], tag);
    }
    let mut running = Vec::new();
    for _ in 0..2 {
        running.push(requests.next().await);
    }
    eventually("two batch requests queued", || {
        let snapshot = pools.snapshot();
        (snapshot.pending_requests, snapshot.running_requests) == (2, 2)
    })
    .await;

    requests.queue(&pools, plan("interactive", 9), &receipts[0], 9);
    let (tag, release) = requests.next().await;
    assert_eq!(tag, 9, "interactive granted while batch waits");
    assert_eq!(pools.snapshot().pending_requests, 2, "batch still waits");
    drop(release);
    drop(running);
}

/// Interactive's minimum is one of two slots: a second batch request
/// waits behind it, free as the slot is, and its deadline ends the wait
/// as any deadline does, leaving nothing queued. Paused clock.
#[tokio::test(start_paused = true)]
async fn a_deadline_ends_a_wait_behind_a_higher_class_s_minimum() {
    let limits = Limits {
        running_requests: 2,
        running_per_tenant: 2,
        running_per_provider: 2,
        ..Limits::DEFAULT
    };
    let shares = MinShares::new([0, 50, 0]).expect("valid shares");
    let pools = start(limits, shares).await;
    let receipts = install_providers(&pools, &["p".to_string()]).await;
    let batch = |session| plan("batch", session).with_priority(Priority::Batch);
    let _first = support::admitted(
        &pools,
        support::request(&pools, batch(1), &receipts[0], b"1"),
    )
    .await;

    let started = tokio::time::Instant::now();
    let until = started + std::time::Duration::from_secs(2);
    let second = support::plan_until("batch", 2, until, until).with_priority(Priority::Batch);
    let result = (pools)
        .admit(support::request(&pools, second, &receipts[0], b"2"))
        .await;
    assert_eq!(result.err(), Some(AdmitError::Timeout));
    assert_eq!(started.elapsed(), std::time::Duration::from_secs(2));
    support::quiescent(&pools).await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.pending_requests, snapshot.running_requests),
        (0, 1),
        "the expired waiter is gone, the first still runs"
    );
}
