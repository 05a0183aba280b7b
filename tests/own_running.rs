//! Own running ceilings. A tenant's
//! (`ProviderPools::set_tenant_running`) holds the tenant below the
//! node-wide share and leaves other tenants alone; a raise grants the
//! tenant's waiters at once; it is refused below what the tenant runs,
//! above the startup share, and past the table's bound, changing nothing;
//! clearing it restores the node-wide share. A provider's
//! (`ProviderPools::set_provider_running`) holds the provider's requests
//! of every tenant, under the same rules. Paused clock, in-memory dialer.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use provider_pools::{
    AdmitError, InstallReceipt, LimitField, Limits, LimitsError, LowerError, PoolReady,
    ProviderPools,
};
use provider_pools::{ProviderId, TenantId};
use support::{bounded, plan, request, running, with_mem};

type Admit = Pin<Box<dyn Future<Output = Result<PoolReady, AdmitError>> + Send>>;

fn tenant(name: &str) -> TenantId {
    TenantId::new(name).expect("a valid tenant")
}

/// An admission of `tenant`, polled once: `Ok` holds the waiting future.
async fn admit_once(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &str,
    session: u64,
) -> Result<Admit, Result<PoolReady, AdmitError>> {
    let admitting = pools.clone();
    let admit = request(pools, plan(tenant, session), receipt, b"");
    let mut future: Admit = Box::pin(async move { admitting.admit(admit).await });
    match std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await {
        Poll::Pending => Ok(future),
        Poll::Ready(answer) => Err(answer),
    }
}

#[tokio::test(start_paused = true)]
async fn a_tenants_own_ceiling_holds_it_below_the_node_wide_share_and_leaves_others_alone() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    pools
        .set_tenant_running(&tenant("a"), Some(1))
        .expect("a ceiling below the startup share");
    let first = running(&pools, &receipt, "a", 1).await;
    let second = admit_once(&pools, &receipt, "a", 2)
        .await
        .expect("a's second request waits at its own ceiling");
    // b still runs as the node-wide share allows.
    let b1 = running(&pools, &receipt, "b", 1).await;
    let b2 = running(&pools, &receipt, "b", 2).await;
    assert_eq!(pools.snapshot().running_requests, 3);
    drop(first);
    let ready = bounded("a's waiter, after its first ends", second).await;
    assert!(ready.is_ok(), "{ready:?}");
    drop((b1, b2, ready));
}

#[tokio::test(start_paused = true)]
async fn raising_a_tenants_ceiling_grants_its_waiters_at_once() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let a = tenant("a");
    pools.set_tenant_running(&a, Some(1)).expect("set");
    let _first = running(&pools, &receipt, "a", 1).await;
    let second = admit_once(&pools, &receipt, "a", 2)
        .await
        .expect("waits at the ceiling");
    assert_eq!(pools.snapshot().pending_requests, 1);
    pools.set_tenant_running(&a, Some(2)).expect("raise");
    // Granted by the raise itself: no task ran in between.
    assert_eq!(
        (
            pools.snapshot().pending_requests,
            pools.snapshot().running_requests
        ),
        (0, 2)
    );
    assert!(bounded("the raised waiter", second).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_ceiling_below_what_the_tenant_runs_is_refused_and_changes_nothing() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let a = tenant("a");
    let _one = running(&pools, &receipt, "a", 1).await;
    let _two = running(&pools, &receipt, "a", 2).await;
    assert_eq!(
        pools.set_tenant_running(&a, Some(1)),
        Err(LowerError::InUse {
            field: LimitField::RunningPerTenant,
            used: 2,
            requested: 1,
        })
    );
    // Nothing changed: a third runs under the node-wide share.
    let third = admit_once(&pools, &receipt, "a", 3).await;
    assert!(matches!(third, Err(Ok(_))), "{:?}", third.err());
}

#[tokio::test(start_paused = true)]
async fn a_ceiling_above_the_startup_share_is_refused() {
    let (pools, _receipt) = with_mem(Limits::DEFAULT).await;
    let startup = Limits::DEFAULT.running_per_tenant;
    assert_eq!(
        pools.set_tenant_running(&tenant("a"), Some(startup + 1)),
        Err(LowerError::Limits(LimitsError::Raised {
            field: LimitField::RunningPerTenant,
            value: u64::from(startup + 1),
            bound: u64::from(startup),
        }))
    );
}

#[tokio::test(start_paused = true)]
async fn clearing_a_tenants_ceiling_restores_the_node_wide_share() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let a = tenant("a");
    pools.set_tenant_running(&a, Some(0)).expect("none at all");
    let waiting = admit_once(&pools, &receipt, "a", 1)
        .await
        .expect("a ceiling of zero holds every request");
    pools.set_tenant_running(&a, None).expect("clear");
    assert!(bounded("the cleared waiter", waiting).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn the_table_of_own_ceilings_is_bounded_and_a_full_one_still_takes_changes() {
    let (pools, _receipt) = with_mem(Limits::DEFAULT).await;
    for n in 0..1_024 {
        pools
            .set_tenant_running(&tenant(&format!("t{n}")), Some(1))
            .expect("room in the table");
    }
    assert_eq!(
        pools.set_tenant_running(&tenant("one-more"), Some(1)),
        Err(LowerError::TenantCeilings { limit: 1_024 })
    );
    // A tenant already in the table may change or clear its own.
    assert_eq!(pools.set_tenant_running(&tenant("t0"), Some(2)), Ok(()));
    assert_eq!(pools.set_tenant_running(&tenant("t1"), None), Ok(()));
    assert_eq!(
        pools.set_tenant_running(&tenant("one-more"), Some(1)),
        Ok(())
    );
}

fn mem() -> ProviderId {
    ProviderId::new("mem").expect("a valid provider")
}

#[tokio::test(start_paused = true)]
async fn a_providers_own_ceiling_holds_its_requests_of_every_tenant() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    pools
        .set_provider_running(&mem(), Some(1))
        .expect("a ceiling below the startup share");
    let a = running(&pools, &receipt, "a", 1).await;
    let b = admit_once(&pools, &receipt, "b", 1)
        .await
        .expect("b waits: the provider runs its one");
    drop(a);
    assert!(bounded("b, after a ends", b).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn raising_a_providers_ceiling_grants_its_waiters_at_once() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    pools.set_provider_running(&mem(), Some(0)).expect("none");
    let waiting = admit_once(&pools, &receipt, "a", 1)
        .await
        .expect("a ceiling of zero holds every request");
    pools.set_provider_running(&mem(), Some(1)).expect("raise");
    assert_eq!(pools.snapshot().running_requests, 1, "granted by the raise");
    assert!(bounded("the raised waiter", waiting).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_provider_ceiling_below_use_or_above_the_startup_share_is_refused() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let _one = running(&pools, &receipt, "a", 1).await;
    let _two = running(&pools, &receipt, "b", 1).await;
    assert_eq!(
        pools.set_provider_running(&mem(), Some(1)),
        Err(LowerError::InUse {
            field: LimitField::RunningPerProvider,
            used: 2,
            requested: 1,
        })
    );
    let startup = Limits::DEFAULT.running_per_provider;
    assert_eq!(
        pools.set_provider_running(&mem(), Some(startup + 1)),
        Err(LowerError::Limits(LimitsError::Raised {
            field: LimitField::RunningPerProvider,
            value: u64::from(startup + 1),
            bound: u64::from(startup),
        }))
    );
    // Nothing changed: a third runs.
    let third = admit_once(&pools, &receipt, "c", 1).await;
    assert!(matches!(third, Err(Ok(_))), "{:?}", third.err());
}

#[tokio::test(start_paused = true)]
async fn provider_demand_lists_each_tenants_queued_and_running_requests_there() {
    let mut limits = Limits::DEFAULT;
    limits.running_per_tenant = 2;
    let (pools, receipt) = with_mem(limits).await;
    let provider = receipt.provider.clone();
    assert!(pools.provider_demand(&provider).is_empty(), "idle at start");
    let a1 = running(&pools, &receipt, "a", 1).await;
    let a2 = running(&pools, &receipt, "a", 2).await;
    let a3 = admit_once(&pools, &receipt, "a", 3)
        .await
        .expect("a's third waits at its share of 2");
    let b1 = running(&pools, &receipt, "b", 1).await;
    let demand: Vec<_> = pools
        .provider_demand(&provider)
        .into_iter()
        .map(|d| (d.tenant.as_str().to_owned(), d.pending, d.running))
        .collect();
    assert_eq!(demand, [("a".to_owned(), 1, 2), ("b".to_owned(), 0, 1)]);
    let other = ProviderId::new("not-installed").expect("a valid id");
    assert!(pools.provider_demand(&other).is_empty());
    drop((a1, a2, a3, b1));
    let left = pools.provider_demand(&provider);
    assert!(
        left.is_empty(),
        "nothing left after every release: {left:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_expiring_provider_ceiling_falls_back_at_its_instant_without_a_timer() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    let until = tokio::time::Instant::now() + std::time::Duration::from_millis(100);
    pools
        .set_provider_running_until(&provider, 3, until, 1)
        .expect("3 until the expiry, then 1");
    let a = running(&pools, &receipt, "a", 1).await;
    let b = running(&pools, &receipt, "b", 1).await;
    let c = running(&pools, &receipt, "c", 1).await;
    let waiting = admit_once(&pools, &receipt, "d", 1)
        .await
        .expect("d waits at the ceiling of 3");
    // Past the expiry, releases hand out nothing until use is under 1.
    tokio::time::advance(std::time::Duration::from_millis(100)).await;
    drop(a);
    drop(b);
    assert_eq!(
        (
            pools.snapshot().running_requests,
            pools.snapshot().pending_requests
        ),
        (1, 1),
        "two releases past the expiry grant nothing: 1 running is the fallback"
    );
    drop(c);
    let ready = bounded("d, once use is under the fallback", waiting).await;
    assert!(ready.is_ok(), "{ready:?}");
    drop(ready);
}

#[tokio::test(start_paused = true)]
async fn setting_a_providers_ceiling_again_clears_its_expiry() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    let now = tokio::time::Instant::now();
    pools
        .set_provider_running_until(&provider, 2, now, 0)
        .expect("expired at once: 0");
    let waiting = admit_once(&pools, &receipt, "a", 1)
        .await
        .expect("nothing runs under an expired ceiling of 0");
    pools
        .set_provider_running(&provider, Some(2))
        .expect("2, with no expiry");
    let ready = bounded("a, granted by the new ceiling", waiting).await;
    assert!(ready.is_ok(), "{ready:?}");
    drop(ready);
}

#[tokio::test(start_paused = true)]
async fn a_fallback_above_the_ceiling_is_refused_naming_the_field() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let until = tokio::time::Instant::now();
    let refused = pools.set_provider_running_until(&receipt.provider, 1, until, 2);
    assert_eq!(
        refused,
        Err(LowerError::Limits(LimitsError::AboveCeiling {
            field: LimitField::RunningPerProvider,
            value: 2,
            ceiling: 1,
        }))
    );
    // Nothing changed: the startup ceiling still applies.
    let _first = running(&pools, &receipt, "a", 1).await;
    let _second = running(&pools, &receipt, "b", 1).await;
}

#[tokio::test(start_paused = true)]
async fn tenant_and_provider_ceilings_together_hold_each_tenant_to_its_own() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    pools
        .set_provider_running(&provider, Some(4))
        .expect("provider 4");
    pools
        .set_tenant_running(&tenant("wide"), Some(1))
        .expect("wide 1");
    pools
        .set_tenant_running(&tenant("solo"), Some(3))
        .expect("solo 3");
    let mut held = Vec::new();
    let mut waiting = Vec::new();
    for round in 0..6u64 {
        for name in ["wide", "solo"] {
            match admit_once(&pools, &receipt, name, round).await {
                Ok(future) => waiting.push(future),
                Err(answer) => held.push(answer.expect("granted")),
            }
        }
    }
    let count = |name: &str| {
        pools
            .provider_demand(&provider)
            .into_iter()
            .find(|d| d.tenant.as_str() == name)
            .map_or(0, |d| d.running)
    };
    assert_eq!((count("wide"), count("solo")), (1, 3));
    // Releases keep the split.
    for _ in 0..3 {
        drop(held.remove(0));
        support::quiesce().await;
        assert!(
            count("wide") <= 1 && count("solo") <= 3,
            "{:?}",
            pools.provider_demand(&provider)
        );
    }
    drop((held, waiting));
}

#[tokio::test(start_paused = true)]
async fn a_draining_tenant_ceiling_below_use_applies_at_once_and_grants_nothing_until_under() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let a = tenant("a");
    let first = running(&pools, &receipt, "a", 1).await;
    let second = running(&pools, &receipt, "a", 2).await;
    let refused = pools.set_tenant_running(&a, Some(1));
    assert!(
        matches!(refused, Err(LowerError::InUse { used: 2, .. })),
        "{refused:?}"
    );
    pools
        .set_tenant_running_draining(&a, Some(1))
        .expect("accepted below use");
    let third = admit_once(&pools, &receipt, "a", 3)
        .await
        .expect("a waits: it runs 2 with a ceiling of 1");
    drop(first);
    support::quiesce().await;
    assert_eq!(
        pools.snapshot().pending_requests,
        1,
        "one release leaves a at its ceiling: nothing granted"
    );
    drop(second);
    let ready = bounded("a's waiter, once a runs under 1", third).await;
    assert!(ready.is_ok(), "{ready:?}");
    drop(ready);
}

#[tokio::test(start_paused = true)]
async fn a_providers_lease_held_ceiling_below_use_is_accepted_and_drains() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    let held = running(&pools, &receipt, "a", 1).await;
    let also = running(&pools, &receipt, "b", 1).await;
    let far = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    pools
        .set_provider_running_until(&provider, 1, far, 0)
        .expect("a ceiling of 1 with 2 running drains");
    let waiting = admit_once(&pools, &receipt, "c", 1)
        .await
        .expect("c waits while 2 run under a ceiling of 1");
    drop(held);
    support::quiesce().await;
    assert_eq!(pools.snapshot().pending_requests, 1, "still at the ceiling");
    drop(also);
    let ready = bounded("c, once the provider runs under 1", waiting).await;
    assert!(ready.is_ok(), "{ready:?}");
    drop(ready);
}
