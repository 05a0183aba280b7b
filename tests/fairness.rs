//! Fair admission: tenants rotate, then providers within a tenant, FIFO
//! within a group; no tenant gains turns by spreading over providers; running
//! ceilings per tenant, per provider and in total hold.
//!
//! Grants are observed one at a time: the driver releases exactly one
//! running request and waits for exactly one new grant, so the order seen is
//! the scheduler's order.

#[path = "fairness/driver.rs"]
mod driver;
mod support;

use std::collections::HashMap;

use driver::{block, install_providers, Requests};

use provider_pools::Limits;
use support::{admitted, eventually, http_config, installation, plan, provider, request, start};
use tokio::sync::oneshot;

/// Tenant "wide" queues one request on each of 50 providers, tenant
/// "narrow" 25 on its single provider. The running total is
/// `running_per_tenant`, all but one slot held throughout by a keeper
/// tenant, so grants come one at a time and the order of the tenant
/// rotation alone decides who is next. Returns the tenant of each of the
/// first 50 grants.
async fn grants_of_a_wide_and_a_narrow_tenant(running_per_tenant: u32) -> Vec<&'static str> {
    let limits = Limits {
        retained_configurations: 64,
        requests_per_tenant: 64,
        running_requests: running_per_tenant,
        running_per_tenant,
        running_per_provider: 1,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let keepers = running_per_tenant as usize - 1;
    let names: Vec<String> = (0..50)
        .map(|i| format!("wide{i}"))
        .chain(["narrow".into()])
        .chain((0..keepers).map(|i| format!("keep{i}")))
        .collect();
    let receipts = install_providers(&pools, &names).await;
    let mut kept = Vec::new();
    for receipt in &receipts[51..] {
        kept.extend(block(&pools, receipt, 1).await);
    }
    let mut held = block(&pools, &receipts[50], 1).await;

    let mut requests = Requests::new();
    for (i, receipt) in receipts[..50].iter().enumerate() {
        requests.queue(&pools, plan("wide", i as u64), receipt, i);
    }
    for i in 0..25 {
        requests.queue(
            &pools,
            plan("narrow", 100 + i),
            &receipts[50],
            100 + i as usize,
        );
    }
    eventually("all 75 requests queued", || {
        pools.snapshot().pending_requests == 75
    })
    .await;

    drop(held.pop());
    let mut tenants = Vec::new();
    for _ in 0..50 {
        let (tag, release) = requests.next().await;
        tenants.push(if tag < 100 { "wide" } else { "narrow" });
        let _ = release.send(());
    }
    drop(kept);
    tenants
}

#[tokio::test]
async fn a_tenant_gains_no_turns_by_using_many_providers() {
    // With one running request per tenant, a tenant's grant alone makes it
    // ineligible until its release.
    let tenants = grants_of_a_wide_and_a_narrow_tenant(1).await;
    let expected: Vec<&str> = ["wide", "narrow"].repeat(25);
    assert_eq!(
        tenants, expected,
        "grants alternate between the two tenants"
    );
}

#[tokio::test]
async fn a_tenant_still_eligible_after_its_turn_goes_to_the_back_of_the_rotation() {
    // Two running requests per tenant: after its grant a tenant is still
    // eligible, so only the move to the back of the rotation hands the next
    // turn to the other tenant; "wide" would otherwise keep the front
    // through its 50 providers.
    let tenants = grants_of_a_wide_and_a_narrow_tenant(2).await;
    let expected: Vec<&str> = ["wide", "narrow"].repeat(25);
    assert_eq!(
        tenants, expected,
        "grants alternate between the two tenants"
    );
}

#[tokio::test]
async fn fifo_within_a_group_and_rotation_across_a_tenants_providers() {
    let limits = Limits {
        running_requests: 1,
        running_per_tenant: 1,
        running_per_provider: 1,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let names: Vec<String> = ["p", "q", "blocker"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let receipts = install_providers(&pools, &names).await;
    let mut held = block(&pools, &receipts[2], 1).await;

    let mut requests = Requests::new();
    // Tenant t queues p1, p2, p3 on provider p, then q1, q2 on provider q.
    let order = [(0, 1), (0, 2), (0, 3), (1, 11), (1, 12)];
    for (queued, (provider, tag)) in order.iter().enumerate() {
        requests.queue(&pools, plan("t", *tag as u64), &receipts[*provider], *tag);
        eventually("request queued", || {
            pools.snapshot().pending_requests == queued as u32 + 1
        })
        .await;
    }
    drop(held.pop());
    let mut grants = Vec::new();
    for _ in 0..5 {
        let (tag, release) = requests.next().await;
        grants.push(tag);
        let _ = release.send(());
    }
    assert_eq!(grants, vec![1, 11, 2, 12, 3]);
}

#[tokio::test]
async fn fairness_at_scale_with_one_flooding_tenant() {
    const TENANTS: usize = 64;
    const LIGHT: usize = 5;
    const HEAVY: usize = 100 * LIGHT;
    const RUNNING: usize = 4;
    let limits = Limits {
        pending_requests: 1_024,
        requests_per_tenant: 1_024,
        requests_per_provider: 1_024,
        running_requests: RUNNING as u32,
        running_per_tenant: RUNNING as u32,
        running_per_provider: RUNNING as u32,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let names: Vec<String> = (0..8)
        .map(|i| format!("p{i}"))
        .chain(["blocker".into()])
        .collect();
    let receipts = install_providers(&pools, &names).await;
    let mut held = block(&pools, &receipts[8], RUNNING).await;

    // Tenant t spreads over (t % 8) + 1 providers; tenant 0 floods with 100x.
    let mut requests = Requests::new();
    let mut queued = 0;
    for tenant in 0..TENANTS {
        let count = if tenant == 0 { HEAVY } else { LIGHT };
        for i in 0..count {
            let receipt = &receipts[i % (tenant % 8 + 1)];
            requests.queue(
                &pools,
                plan(&format!("t{tenant}"), i as u64),
                receipt,
                tenant,
            );
            queued += 1;
        }
    }
    eventually("every request queued", || {
        pools.snapshot().pending_requests == queued
    })
    .await;

    // While every tenant is backlogged (each light tenant still has a
    // waiter), observe grants one release at a time.
    let window = TENANTS * (LIGHT - 1);
    let mut running: std::collections::VecDeque<oneshot::Sender<()>> = Default::default();
    let mut grants = Vec::with_capacity(window);
    for _ in 0..window {
        match held.pop() {
            Some(blocker) => drop(blocker),
            None => {
                let _ = running.pop_front().expect("a request is running").send(());
            }
        }
        let (tenant, release) = requests.next().await;
        grants.push(tenant);
        running.push_back(release);
    }

    let mut counts: HashMap<usize, usize> = HashMap::new();
    for tenant in &grants {
        *counts.entry(*tenant).or_default() += 1;
    }
    let fair = window as f64 / TENANTS as f64;
    for tenant in 0..TENANTS {
        let got = counts.get(&tenant).copied().unwrap_or(0) as f64;
        assert!(
            (got - fair).abs() <= fair * 0.10,
            "tenant {tenant} got {got} grants, fair share {fair}"
        );
    }
    for tenant in 1..TENANTS {
        let positions: Vec<usize> = grants
            .iter()
            .enumerate()
            .filter(|(_, t)| **t == tenant)
            .map(|(i, _)| i)
            .collect();
        let first_wait = positions[0];
        assert!(
            first_wait < TENANTS,
            "tenant {tenant} first served at grant {first_wait}"
        );
        for pair in positions.windows(2) {
            assert!(
                pair[1] - pair[0] <= TENANTS,
                "tenant {tenant} waited {} grants, more than one rotation",
                pair[1] - pair[0]
            );
        }
    }
    drop(running);
    requests.tasks.abort_all();
}

#[tokio::test]
async fn running_ceilings_per_tenant_and_per_provider_hold() {
    let limits = Limits {
        running_requests: 8,
        running_per_tenant: 2,
        running_per_provider: 3,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let names: Vec<String> = ["shared", "other"].iter().map(|s| s.to_string()).collect();
    let receipts = install_providers(&pools, &names).await;

    let mut requests = Requests::new();
    // Tenant a: 4 requests on "shared"; tenants b and c: 2 each on "shared";
    // tenant d: 2 on "other".
    let queued = [("a", 0, 4), ("b", 0, 2), ("c", 0, 2), ("d", 1, 2)];
    let mut tag = 0;
    for (tenant, provider, count) in queued {
        for _ in 0..count {
            requests.queue(&pools, plan(tenant, tag as u64), &receipts[provider], tag);
            tag += 1;
        }
    }
    eventually(
        "the ceilings hold: 3 on shared + 2 on other running",
        || {
            let s = pools.snapshot();
            s.running_requests == 5 && s.pending_requests == 5
        },
    )
    .await;
    let mut granted = Vec::new();
    for _ in 0..5 {
        granted.push(requests.next().await);
    }
    let tenant_of = |tag: usize| match tag {
        0..=3 => "a",
        4..=5 => "b",
        6..=7 => "c",
        _ => "d",
    };
    let mut per_tenant: HashMap<&str, usize> = HashMap::new();
    for (tag, _) in &granted {
        *per_tenant.entry(tenant_of(*tag)).or_default() += 1;
    }
    assert_eq!(
        per_tenant.get("d"),
        Some(&2),
        "the other provider is not blocked"
    );
    assert!(
        per_tenant.values().all(|n| *n <= 2),
        "no tenant above 2: {per_tenant:?}"
    );
    let on_shared: usize = per_tenant
        .iter()
        .filter(|(t, _)| **t != "d")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(on_shared, 3, "the shared provider holds at its ceiling");
    requests.tasks.abort_all();
}

#[tokio::test]
async fn admission_after_retire_is_closed_and_queues_nothing() {
    let pools = start(Limits::DEFAULT).await;
    let receipts = install_providers(&pools, &["p".to_string()]).await;
    pools.retire().await;
    let refused = pools
        .admit(request(&pools, plan("t", 1), &receipts[0], b"x"))
        .await;
    assert_eq!(refused.err().map(|e| e.code()), Some("closed"));
    assert_eq!(pools.snapshot().pending_requests, 0);
}

#[tokio::test]
async fn a_rotation_creates_no_extra_running_allowance() {
    // Running limits are keyed by the logical provider: a request on the new
    // epoch waits for the one still running on the old epoch.
    let limits = Limits {
        running_per_provider: 1,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let first = install_providers(&pools, &["p".to_string()])
        .await
        .remove(0);
    let old = admitted(&pools, request(&pools, plan("t", 0), &first, b"x")).await;
    let p = provider("p");
    let second = pools
        .install(installation(&p, 1, b"k2", http_config("p", 1)))
        .await
        .expect("rotate");

    let mut requests = Requests::new();
    requests.queue(&pools, plan("u", 1), &second, 1);
    eventually("the new-epoch request waits", || {
        pools.snapshot().pending_requests == 1
    })
    .await;
    assert_eq!(pools.snapshot().running_requests, 1);
    drop(old);
    let (tag, _release) = requests.next().await;
    assert_eq!(tag, 1, "granted once the old epoch's request is gone");
}
