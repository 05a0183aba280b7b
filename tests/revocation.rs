//! Execution permission: capacity alone never starts a request. The start
//! needs a fresh dispatch for the same session, ledger, provider and epoch,
//! and that epoch still current when the request starts. A request still
//! queued when a rotation retires its epoch is granted on the current one.

mod support;

use provider_pools::{
    AdmitError, CallMismatch, Epoch, ExecutionPlan, LedgerId, Limits, PolicyTable, PoolReady,
    ProviderId, ProviderPools, SessionId, TenantId,
};
use support::{admitted, eventually, http_config, installation, plan, request, task, with_alpha};
use tokio::task::JoinHandle;

fn policy_for(tenant: &str, provider: &provider_pools::ProviderId) -> PolicyTable {
    let policy = PolicyTable::new();
    policy.allow(TenantId::new(tenant).expect("tenant"), provider.clone());
    policy
}

/// A node that runs one request at a time, holding one for `holder`, and
/// tenant `t`'s request (allowed by the returned policy) queued behind it.
async fn queued_behind_a_holder() -> (
    ProviderPools,
    ProviderId,
    PolicyTable,
    PoolReady,
    JoinHandle<Result<PoolReady, AdmitError>>,
) {
    let limits = Limits {
        running_requests: 1,
        running_per_tenant: 1,
        running_per_provider: 1,
        ..Limits::DEFAULT
    };
    let (pools, p, receipt) = with_alpha(limits, 1).await;
    let policy = policy_for("t", &p);
    let held = admitted(&pools, request(&pools, plan("holder", 0), &receipt, b"h")).await;
    let waiter = {
        let (pools, request) = (pools.clone(), request(&pools, plan("t", 1), &receipt, b"x"));
        task(async move { pools.admit(request).await })
    };
    eventually("the request is queued", || {
        pools.snapshot().pending_requests == 1
    })
    .await;
    (pools, p, policy, held, waiter)
}

#[tokio::test(start_paused = true)]
async fn queued_revocation_refuses_the_start_and_returns_the_capacity() {
    let (pools, p, policy, held, waiter) = queued_behind_a_holder().await;
    assert!(policy.revoke(&TenantId::new("t").expect("tenant"), &p));
    drop(held);

    let ready = waiter.await.expect("task").expect("capacity granted");
    assert_eq!(pools.snapshot().running_requests, 1);
    let refused = pools.dispatch(&policy, ready.plan(), ready.provider());
    assert!(
        matches!(refused, Err(AdmitError::Revoked(_))),
        "got {refused:?}"
    );
    drop(ready);
    support::quiescent(&pools).await;
    assert_eq!(pools.snapshot().running_requests, 0, "the capacity returns");
}

#[tokio::test]
async fn a_matching_fresh_call_starts_the_request() {
    let (pools, p, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let policy = policy_for("t", &p);
    let ready = admitted(&pools, request(&pools, plan("t", 1), &receipt, b"x")).await;
    let call = pools
        .dispatch(&policy, ready.plan(), ready.provider())
        .expect("allowed");
    assert_eq!(call.epoch(), Epoch::new(1));
    let running = ready.start(call).expect("the call matches the grant");
    assert_eq!(running.client().epoch(), Epoch::new(1));
    assert_eq!(running.input().bytes().as_ref(), b"x");
}

#[tokio::test]
async fn a_provider_rotated_after_the_grant_refuses_the_start() {
    let (pools, p, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let policy = policy_for("t", &p);
    let ready = admitted(&pools, request(&pools, plan("t", 1), &receipt, b"x")).await;
    pools
        .install(installation(&p, 1, b"k2", http_config("alpha", 1)))
        .await
        .expect("rotate");
    let call = pools
        .dispatch(&policy, ready.plan(), ready.provider())
        .expect("allowed");
    assert_eq!(call.epoch(), Epoch::new(2));
    assert_eq!(
        ready.start(call).err(),
        Some(AdmitError::Retired {
            provider: p.clone()
        })
    );
}

/// A request queued on an epoch that a rotation retires keeps its place:
/// its grant carries a lease on the provider's current epoch, a fresh
/// dispatch starts it, and the old epoch drains.
#[tokio::test(start_paused = true)]
async fn a_request_queued_across_a_rotation_is_granted_on_the_current_epoch() {
    let (pools, p, policy, held, waiter) = queued_behind_a_holder().await;
    pools
        .install(installation(&p, 1, b"k2", http_config("alpha", 1)))
        .await
        .expect("rotate");

    drop(held);
    let ready = waiter.await.expect("task").expect("granted");
    assert_eq!(
        ready.epoch(),
        Epoch::new(2),
        "re-leased on the current epoch"
    );
    let call = pools
        .dispatch(&policy, ready.plan(), ready.provider())
        .expect("allowed");
    let running = ready
        .start(call)
        .expect("the call matches the re-leased grant");
    assert_eq!(running.client().epoch(), Epoch::new(2));
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().retained_epochs,
        1,
        "epoch 1 drains: nothing leases it any more"
    );
}

#[tokio::test]
async fn a_call_dispatched_before_a_rotation_refuses_the_start() {
    let (pools, p, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let policy = policy_for("t", &p);
    let ready = admitted(&pools, request(&pools, plan("t", 1), &receipt, b"x")).await;
    let call = pools
        .dispatch(&policy, ready.plan(), ready.provider())
        .expect("allowed");
    assert_eq!(
        call.epoch(),
        Epoch::new(1),
        "the granted epoch, still current"
    );
    pools
        .install(installation(&p, 1, b"k2", http_config("alpha", 1)))
        .await
        .expect("rotate");
    // Call and grant agree on epoch 1, but it has been retired since.
    assert_eq!(
        ready.start(call).err(),
        Some(AdmitError::Retired {
            provider: p.clone()
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_must_match_session_ledger_and_freshness() {
    let (pools, p, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let policy = policy_for("t", &p);
    let stale = pools.dispatch(&policy, &plan("t", 1), &p).expect("allowed");

    let ready = admitted(&pools, request(&pools, plan("t", 1), &receipt, b"x")).await;
    assert_eq!(
        ready.start(stale).err(),
        Some(AdmitError::Mismatch {
            what: CallMismatch::Stale
        })
    );

    let far = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    let other_session = plan("t", 2);
    let other_ledger = ExecutionPlan::seal(
        TenantId::new("t").expect("tenant"),
        SessionId::new(1),
        LedgerId::new(9),
        far,
        far,
    );
    for (other, what) in [
        (other_session, CallMismatch::Session),
        (other_ledger, CallMismatch::Ledger),
    ] {
        let ready = admitted(&pools, request(&pools, plan("t", 1), &receipt, b"x")).await;
        let call = pools.dispatch(&policy, &other, &p).expect("allowed");
        assert_eq!(ready.start(call).err(), Some(AdmitError::Mismatch { what }));
    }
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().running_requests,
        0,
        "refused starts return their capacity"
    );
}

#[tokio::test]
async fn a_call_for_another_provider_is_refused() {
    let (pools, p, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let other = support::provider("beta");
    pools
        .install(installation(&other, 0, b"k", http_config("beta", 1)))
        .await
        .expect("beta");
    let policy = policy_for("t", &p);
    policy.allow(TenantId::new("t").expect("tenant"), other.clone());
    let ready = admitted(&pools, request(&pools, plan("t", 1), &receipt, b"x")).await;
    let call = pools
        .dispatch(&policy, ready.plan(), &other)
        .expect("allowed");
    assert_eq!(
        ready.start(call).err(),
        Some(AdmitError::Mismatch {
            what: CallMismatch::Provider
        })
    );
}
