//! A waiter that leaves as running capacity frees for it never leaks that
//! capacity: it serves the next request at once — whether the waiter left
//! with its grant unread in its channel, or its cancellation reached the
//! scheduler in the same batch as the release that would have granted it.
//!
//! Paused clock, no I/O: the waiter's future is polled once by hand (so it
//! is queued) and never again, so each race is forced, not hoped for.
//!
//! Not reachable here: the scheduler sending a grant into a channel whose
//! receiver was dropped after the batch that held the release was drained
//! (`scheduler/state.rs`, `grant_ready`'s `Err` branch). On one thread the
//! drain and the send run without a yield between them, so that path needs
//! real threads (issue 19's models and multi-threaded chaos).

mod support;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use provider_pools::Limits;
use support::{bounded, http_config, installation, plan, provider, request, running, start};

/// A registry of one running request, `a`'s, and `b` queued behind it:
/// `b`'s admit future, polled once.
async fn one_running_one_queued() -> (
    provider_pools::ProviderPools,
    provider_pools::InstallReceipt,
    provider_pools::RunningRequest,
    Pin<Box<impl Future<Output = Result<provider_pools::PoolReady, provider_pools::AdmitError>>>>,
) {
    let pools = start(Limits {
        running_requests: 1,
        running_per_provider: 1,
        running_per_tenant: 1,
        ..Limits::DEFAULT
    })
    .await;
    let receipt = pools
        .install(installation(
            &provider("mem"),
            0,
            b"k",
            http_config("mem", 1),
        ))
        .await
        .expect("install");
    let first = running(&pools, &receipt, "a", 1).await;
    let queued = request(&pools, plan("b", 2), &receipt, b"");
    let admitting = pools.clone();
    let mut waiting = Box::pin(async move { admitting.admit(queued).await });
    let polled = std::future::poll_fn(|cx| Poll::Ready(waiting.as_mut().poll(cx).is_pending()));
    assert!(polled.await, "the only running slot is taken: b waits");
    support::quiesce().await;
    assert_eq!(pools.snapshot().pending_requests, 1, "b is queued");
    (pools, receipt, first, waiting)
}

/// The capacity is back: nothing pending or running, and `c` is admitted
/// at once.
async fn capacity_came_back(
    pools: &provider_pools::ProviderPools,
    receipt: &provider_pools::InstallReceipt,
) {
    support::quiesce().await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.pending_requests, snapshot.running_requests),
        (0, 0),
        "the grant was returned: {snapshot:?}"
    );
    let third = bounded(
        "an admission after the raced grant",
        pools.admit(request(pools, plan("c", 3), receipt, b"")),
    )
    .await;
    assert!(third.is_ok(), "the running capacity came back: {third:?}");
}

#[tokio::test(start_paused = true)]
async fn a_grant_sent_to_a_waiter_that_leaves_unread_returns_its_running_capacity() {
    let (pools, receipt, first, waiting) = one_running_one_queued().await;
    // a's release grants the slot to b; b's future is never polled again,
    // so the grant waits unread in its channel when b leaves.
    drop(first);
    support::quiesce().await;
    let granted = pools.snapshot();
    assert_eq!(
        (granted.pending_requests, granted.running_requests),
        (0, 1),
        "the grant was sent to b before b left: {granted:?}"
    );
    drop(waiting);
    capacity_came_back(&pools, &receipt).await;
}

#[tokio::test(start_paused = true)]
async fn a_waiter_cancelled_as_its_release_arrives_loses_no_running_capacity() {
    let (pools, receipt, first, waiting) = one_running_one_queued().await;
    // a's release and b's cancellation reach the scheduler in one batch;
    // whichever way the scheduler settles them (b dropped from the queue,
    // or a grant into b's closed channel returned), the capacity stays free
    // for the next request.
    drop(first);
    drop(waiting);
    capacity_came_back(&pools, &receipt).await;
}
