//! A provider's request rate (`ProviderPools::configure_provider_rate`),
//! end to end through the admission core and the scheduler actor's alarm,
//! on the paused clock: a lone tenant's grants follow the rate exactly,
//! one burst at once then one per interval; a request whose turn cannot
//! come before its deadline is refused at enqueue, and one whose turn
//! comes exactly at its deadline is granted; a live lowering spaces later
//! grants and revokes none, and is never above the configured rate; a
//! flooding tenant leaves every other backlogged tenant its max-min fair
//! share of the rate (within 2 %, Jain ≥ 0.99), and a tenant asking less
//! all it asks; a tenant's own rate spaces its grants only.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use provider_pools::{
    AdmitError, InstallReceipt, PoolReady, ProviderPools, RateError, RateInForce, RateLimit,
};
use support::{bounded, plan, plan_until, request, task, with_mem};
use tokio::sync::mpsc;
use tokio::time::Instant;

type Admit = Pin<Box<dyn Future<Output = Result<PoolReady, AdmitError>> + Send>>;

fn per_second(requests: u32, burst: u32) -> RateLimit {
    RateLimit::new(requests, Duration::from_secs(1), burst)
}

/// An admission of `tenant` until `deadline`, polled once: `Ok` holds the
/// waiting future, `Err` the answer it gave at once.
async fn admit_once(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &str,
    session: u64,
    deadline: Instant,
) -> Result<Admit, Result<PoolReady, AdmitError>> {
    let admitting = pools.clone();
    let admit = request(
        pools,
        plan_until(tenant, session, deadline, deadline),
        receipt,
        b"",
    );
    let mut future: Admit = Box::pin(async move { admitting.admit(admit).await });
    match std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await {
        Poll::Pending => Ok(future),
        Poll::Ready(answer) => Err(answer),
    }
}

/// Admits `n` requests of `tenant` as tasks; each sends the offset from
/// `start` at which it was granted, then releases its grant at once.
fn admit_all(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &'static str,
    n: u64,
    start: Instant,
) -> mpsc::UnboundedReceiver<Duration> {
    let (sent, granted) = mpsc::unbounded_channel();
    for session in 0..n {
        let admit = request(pools, plan(tenant, session), receipt, b"");
        let (pools, sent) = (pools.clone(), sent.clone());
        task(async move {
            let ready = pools
                .admit(admit)
                .await
                .expect("granted within its deadline");
            let _ = sent.send(Instant::now() - start);
            drop(ready);
        });
    }
    granted
}

#[tokio::test(start_paused = true)]
async fn a_lone_tenant_gets_the_burst_then_one_grant_per_interval() {
    let (pools, receipt) = with_mem(provider_pools::Limits::DEFAULT).await;
    pools
        .configure_provider_rate(&receipt.provider, per_second(10, 2))
        .expect("a first rate");
    let start = Instant::now();
    let mut granted = admit_all(&pools, &receipt, "a", 12, start);
    let mut offsets = Vec::new();
    while offsets.len() < 12 {
        offsets.push(
            bounded("the next grant", granted.recv())
                .await
                .expect("a grant"),
        );
    }
    let expected: Vec<_> = [0, 0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1_000]
        .map(Duration::from_millis)
        .to_vec();
    assert_eq!(offsets, expected, "the burst at once, then one per 100 ms");
}

#[tokio::test(start_paused = true)]
async fn a_request_whose_turn_comes_after_its_deadline_is_refused_at_enqueue() {
    let (pools, receipt) = with_mem(provider_pools::Limits::DEFAULT).await;
    pools
        .configure_provider_rate(&receipt.provider, per_second(10, 1))
        .expect("a first rate");
    let now = Instant::now();
    let far = now + Duration::from_secs(60);
    let first = admit_once(&pools, &receipt, "a", 1, far).await;
    let Err(Ok(_first)) = first else {
        panic!("the one token is granted at once");
    };
    // The next token comes at 100 ms: a deadline then is met.
    let second = admit_once(&pools, &receipt, "a", 2, now + Duration::from_millis(100))
        .await
        .expect("its turn comes at its deadline: it waits");
    // One of a's ahead: the turn after it is at 200 ms.
    let late = admit_once(&pools, &receipt, "a", 3, now + Duration::from_millis(199)).await;
    match late {
        Err(Err(AdmitError::RateLimited {
            requests,
            period,
            wait,
        })) => {
            assert_eq!((requests, period), (10, Duration::from_secs(1)));
            assert_eq!(wait, Duration::from_millis(200));
        }
        other => panic!("expected a refusal naming the rate, got {:?}", other.err()),
    }
    let on_time = admit_once(&pools, &receipt, "a", 4, now + Duration::from_millis(200))
        .await
        .expect("a turn exactly at the deadline waits");
    let second = bounded("the second grant", second).await;
    assert!(
        second.is_ok(),
        "granted at its deadline: {:?}",
        second.err()
    );
    assert_eq!(Instant::now() - now, Duration::from_millis(100));
    let on_time = bounded("the third grant", on_time).await;
    assert!(
        on_time.is_ok(),
        "granted at its deadline: {:?}",
        on_time.err()
    );
    assert_eq!(Instant::now() - now, Duration::from_millis(200));
    assert_eq!(
        AdmitError::RateLimited {
            requests: 10,
            period: Duration::from_secs(1),
            wait: Duration::from_millis(200)
        }
        .code(),
        "rate_limited"
    );
}

#[tokio::test(start_paused = true)]
async fn a_live_lowering_spaces_later_grants_and_revokes_none() {
    let (pools, receipt) = with_mem(provider_pools::Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    pools
        .configure_provider_rate(&provider, per_second(10, 2))
        .expect("a first rate");
    let now = Instant::now();
    let far = now + Duration::from_secs(60);
    let held: Vec<_> = [1, 2]
        .map(|session| {
            let pools = pools.clone();
            let admit = request(&pools, plan("a", session), &receipt, b"");
            async move { bounded("the burst", pools.admit(admit)).await }
        })
        .into_iter()
        .collect();
    let mut running = Vec::new();
    for admit in held {
        running.push(admit.await.expect("the burst is granted at once"));
    }
    assert_eq!(
        pools.set_provider_rate(&provider, per_second(11, 2)),
        Err(RateError::Raised {
            configured: per_second(10, 2)
        })
    );
    assert_eq!(
        pools.set_provider_rate(&provider, per_second(10, 3)),
        Err(RateError::Raised {
            configured: per_second(10, 2)
        })
    );
    pools
        .set_provider_rate(&provider, per_second(2, 1))
        .expect("a lowering");
    assert_eq!(
        pools.provider_rate(&provider),
        Some(RateInForce {
            rate: per_second(2, 1),
            configured: per_second(10, 2),
            tokens: 0,
        })
    );
    assert_eq!(
        pools.snapshot().running_requests,
        2,
        "the grants made stand"
    );
    let third = admit_once(&pools, &receipt, "a", 3, far)
        .await
        .expect("waits");
    let fourth = admit_once(&pools, &receipt, "a", 4, far)
        .await
        .expect("waits");
    let third = bounded("the third grant", third).await.expect("granted");
    // The two grants at 10 a second spent the TAT up to 200 ms.
    assert_eq!(Instant::now() - now, Duration::from_millis(200));
    let fourth = bounded("the fourth grant", fourth).await.expect("granted");
    assert_eq!(
        Instant::now() - now,
        Duration::from_millis(700),
        "500 ms apart"
    );
    drop((third, fourth, running));
    assert_eq!(
        pools.configure_provider_rate(&provider, per_second(1, 1)),
        Err(RateError::Configured {
            configured: per_second(10, 2)
        }),
        "configured once"
    );
    for invalid in [
        per_second(0, 1),
        per_second(1, 0),
        per_second(1, RateLimit::MAX_BURST + 1),
        RateLimit::new(1, RateLimit::MAX_PERIOD + Duration::from_nanos(1), 1),
        RateLimit::new(2, Duration::from_nanos(1), 1),
    ] {
        assert_eq!(
            pools.set_provider_rate(&provider, invalid),
            Err(RateError::Invalid { rate: invalid }),
            "{invalid:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_tenants_own_rate_spaces_its_grants_and_leaves_the_others_alone() {
    let (pools, receipt) = with_mem(provider_pools::Limits::DEFAULT).await;
    let acme = provider_pools::TenantId::new("acme").expect("tenant");
    pools
        .configure_tenant_rate(&acme, per_second(10, 1))
        .expect("a tenant's first rate");
    let start = Instant::now();
    let mut acme_granted = admit_all(&pools, &receipt, "acme", 3, start);
    let mut globex_granted = admit_all(&pools, &receipt, "globex", 3, start);
    let mut globex = Vec::new();
    for _ in 0..3 {
        globex.push(bounded("globex's grant", globex_granted.recv()).await);
    }
    assert_eq!(
        globex,
        [Some(Duration::ZERO); 3],
        "a tenant without a rate is granted at once"
    );
    let mut acme_offsets = Vec::new();
    for _ in 0..3 {
        let offset = bounded("acme's grant", acme_granted.recv()).await;
        acme_offsets.push(offset.expect("a grant"));
    }
    assert_eq!(acme_offsets, [0, 100, 200].map(Duration::from_millis));
    // Its token spent at 200 ms: a request due before 300 ms is refused at
    // once, naming the tenant's rate.
    let soon = Instant::now() + Duration::from_millis(99);
    let refused = admit_once(&pools, &receipt, "acme", 9, soon).await;
    match refused {
        Err(Err(AdmitError::RateLimited { requests, wait, .. })) => {
            assert_eq!((requests, wait), (10, Duration::from_millis(100)));
        }
        other => panic!("expected a refusal naming the rate, got {:?}", other.err()),
    }
    assert_eq!(
        pools.tenant_rate(&acme).map(|r| (r.rate, r.tokens)),
        Some((per_second(10, 1), 0))
    );
    assert_eq!(
        pools.set_tenant_rate(&acme, per_second(20, 1)),
        Err(RateError::Raised {
            configured: per_second(10, 1)
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_flooding_tenant_leaves_the_others_their_max_min_fair_share_of_the_rate() {
    // 100 a second, one at a time. flood keeps 24 requests waiting, b and
    // c keep 2 each, d asks 10 a second. Max-min fair: d gets all it
    // asks, flood, b and c 30 a second each.
    let (pools, receipt) = with_mem(provider_pools::Limits::DEFAULT).await;
    pools
        .configure_provider_rate(&receipt.provider, per_second(100, 1))
        .expect("a first rate");
    let start = Instant::now();
    let end = start + Duration::from_secs(5);
    let (sent, mut granted) = mpsc::unbounded_channel();
    let mut session = 0;
    let mut workers = Vec::new();
    for (tenant, loops) in [("flood", 24), ("b", 2), ("c", 2), ("d", 1)] {
        for _ in 0..loops {
            session += 1;
            let (pools, sent, receipt) = (pools.clone(), sent.clone(), receipt.clone());
            workers.push(task(async move {
                let mut next = start;
                while Instant::now() < end {
                    if tenant == "d" {
                        tokio::time::sleep_until(next).await;
                        next += Duration::from_millis(100);
                    }
                    let admit = request(&pools, plan(tenant, session), &receipt, b"");
                    let ready = pools.admit(admit).await.expect("granted in time");
                    if Instant::now() < end {
                        let _ = sent.send(tenant);
                    }
                    drop(ready);
                }
            }));
        }
    }
    drop(sent);
    let mut counts = std::collections::BTreeMap::new();
    while let Some(tenant) = bounded("the workload", granted.recv()).await {
        *counts.entry(tenant).or_insert(0u32) += 1;
    }
    for worker in workers {
        bounded("a worker", worker)
            .await
            .expect("no worker panicked");
    }
    let of = |tenant| f64::from(counts.get(tenant).copied().unwrap_or(0));
    let total: f64 = counts.values().map(|&n| f64::from(n)).sum();
    // The whole rate: one at 0, then one per 10 ms, before 5 s.
    assert_eq!(total, 500.0, "{counts:?}");
    assert_eq!(of("d"), 50.0, "d gets every request it asks: {counts:?}");
    let fair = (total - of("d")) / 3.0;
    for tenant in ["flood", "b", "c"] {
        let share = of(tenant);
        assert!(
            (share - fair).abs() <= 0.02 * fair,
            "{tenant} got {share}, max-min fair is {fair}: {counts:?}"
        );
    }
    let (a, b, c) = (of("flood"), of("b"), of("c"));
    let jain = (a + b + c).powi(2) / (3.0 * (a * a + b * b + c * c));
    assert!(jain >= 0.99, "Jain's index {jain}");
}

#[tokio::test(start_paused = true)]
async fn a_share_of_a_rate_held_until_an_instant_falls_back_by_the_nodes_clock() {
    let (pools, receipt) = with_mem(provider_pools::Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    pools
        .configure_provider_rate(&provider, per_second(100, 5))
        .expect("a first rate");
    let until = Instant::now() + Duration::from_secs(1);
    assert_eq!(
        pools.set_provider_rate_until(&provider, per_second(50, 5), until, per_second(60, 1)),
        Err(RateError::FallbackAbove {
            then: per_second(60, 1)
        })
    );
    assert_eq!(
        pools.set_provider_rate_until(&provider, per_second(200, 5), until, per_second(1, 1)),
        Err(RateError::Raised {
            configured: per_second(100, 5)
        })
    );
    pools
        .set_provider_rate_until(&provider, per_second(50, 5), until, per_second(2, 1))
        .expect("a share and its floor");
    let rate = |pools: &ProviderPools| pools.provider_rate(&provider).map(|r| r.rate);
    assert_eq!(rate(&pools), Some(per_second(50, 5)));
    tokio::time::sleep_until(until).await;
    assert_eq!(rate(&pools), Some(per_second(2, 1)), "no call needed");
}
