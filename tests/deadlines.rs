//! Deadlines: a waiter's age is at most the queue age, narrowed by the Store
//! and I/O deadlines; no stage resets them; expiry frees the slot. Paused
//! clock: timers fire exactly when time is advanced to them.

mod support;

use std::time::Duration;

use provider_pools::{AdmitError, Limits, PoolReady, ProviderPools};
use support::{admitted, eventually, plan, plan_until, request, with_alpha};
use tokio::time::Instant;

/// A registry whose only running slot is held, so new requests queue.
async fn saturated() -> (ProviderPools, provider_pools::InstallReceipt, PoolReady) {
    let limits = Limits {
        running_requests: 1,
        running_per_tenant: 1,
        running_per_provider: 1,
        ..Limits::DEFAULT
    };
    let (pools, _, receipt) = with_alpha(limits, 1).await;
    let held = admitted(&pools, request(&pools, plan("holder", 0), &receipt, b"h")).await;
    (pools, receipt, held)
}

#[tokio::test(start_paused = true)]
async fn the_queue_age_bounds_the_wait() {
    let (pools, receipt, _held) = saturated().await;
    let started = Instant::now();
    let result = pools
        .admit(request(&pools, plan("t", 1), &receipt, b"x"))
        .await;
    assert_eq!(result.err(), Some(AdmitError::Timeout));
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(5),
        "the default queue age"
    );
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().pending_requests,
        0,
        "the expired waiter is gone"
    );
}

#[tokio::test(start_paused = true)]
async fn the_store_and_io_deadlines_narrow_the_wait() {
    let (pools, receipt, _held) = saturated().await;
    for (store, io, expected) in [(2, 60, 2), (60, 1, 1), (3, 3, 3)] {
        let started = Instant::now();
        let plan = plan_until(
            "t",
            1,
            started + Duration::from_secs(store),
            started + Duration::from_secs(io),
        );
        let result = pools.admit(request(&pools, plan, &receipt, b"x")).await;
        assert_eq!(result.err(), Some(AdmitError::Timeout));
        assert_eq!(started.elapsed(), Duration::from_secs(expected));
    }
}

#[tokio::test(start_paused = true)]
async fn a_passed_deadline_times_out_at_once() {
    let (pools, receipt, _held) = saturated().await;
    let now = Instant::now();
    let plan = plan_until("t", 1, now, now + Duration::from_secs(60));
    let result = pools.admit(request(&pools, plan, &receipt, b"x")).await;
    assert_eq!(result.err(), Some(AdmitError::Timeout));
    assert_eq!(now.elapsed(), Duration::ZERO);
    assert_eq!(pools.snapshot().pending_requests, 0, "nothing was queued");
}

#[tokio::test(start_paused = true)]
async fn the_grant_keeps_the_admission_deadline() {
    let (pools, receipt, held) = saturated().await;
    let admitted_at = Instant::now();
    let waiter = {
        let pools = pools.clone();
        let request = request(&pools, plan("t", 1), &receipt, b"x");
        support::task(async move { pools.admit(request).await })
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(held);
    let ready = waiter
        .await
        .expect("waiter task")
        .expect("granted after 3 s");
    assert_eq!(ready.deadline(), admitted_at + Duration::from_secs(5));

    // The second stage shares the deadline: 2.5 s later it has passed.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let call = pools
        .dispatch(&support::allow_all(), ready.plan(), ready.provider())
        .expect("dispatch");
    assert_eq!(ready.start(call).err(), Some(AdmitError::Timeout));
}

#[tokio::test(start_paused = true)]
async fn a_shorter_queue_age_applies_to_future_admissions_only() {
    let (pools, receipt, _held) = saturated().await;
    let before = Instant::now();
    let early = {
        let pools = pools.clone();
        let request = request(&pools, plan("t", 1), &receipt, b"x");
        support::task(async move { pools.admit(request).await })
    };
    eventually("the early request queued", || {
        pools.snapshot().pending_requests == 1
    })
    .await;
    pools
        .lower_limits(Limits {
            queue_age: Duration::from_secs(1),
            running_requests: 1,
            running_per_tenant: 1,
            running_per_provider: 1,
            ..Limits::DEFAULT
        })
        .await
        .expect("lowering the queue age");

    let later = Instant::now();
    let late = pools
        .admit(request(&pools, plan("t", 2), &receipt, b"y"))
        .await;
    assert_eq!(late.err(), Some(AdmitError::Timeout));
    assert_eq!(later.elapsed(), Duration::from_secs(1), "the new queue age");

    let early = early.await.expect("early task");
    assert_eq!(early.err(), Some(AdmitError::Timeout));
    assert_eq!(
        before.elapsed(),
        Duration::from_secs(5),
        "the age in force when admitted"
    );
}
