//! Admission applied on the caller's task (`scheduler/core.rs`): with the
//! queue free, an admit is granted, queued or refused within its first poll,
//! with no task run in between; and retirement answers every queued waiter
//! `Closed` there and then (the scheduler's `Close`), instead of leaving it
//! to wait out its deadline. (These tests began as the killers of the
//! mailbox-bound mutants of the message-driven scheduler, RELIABILITY.md
//! "Mutation testing"; that mailbox is gone.)
//!
//! Paused clock, no I/O: admit futures are polled once by hand and then held
//! unpolled, so the answers seen are the ones given at the first poll.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use provider_pools::{AdmitError, InstallReceipt, Limits, PoolReady, ProviderPools};
use support::{bounded, plan, request, running, with_mem};

type Admit = Pin<Box<dyn Future<Output = Result<PoolReady, AdmitError>> + Send>>;

/// An admission for a tenant of its own (`t{n}`), polled once: `Ok` holds
/// the still-waiting future, `Err` the answer it gave at once.
async fn queue(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    n: u64,
) -> Result<Admit, Result<PoolReady, AdmitError>> {
    let admitting = pools.clone();
    let admit = request(pools, plan(&format!("t{n}"), n), receipt, b"");
    let mut future: Admit = Box::pin(async move { admitting.admit(admit).await });
    let polled = std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
    match polled {
        Poll::Pending => Ok(future),
        Poll::Ready(answer) => Err(answer),
    }
}

#[tokio::test(start_paused = true)]
async fn admits_with_capacity_free_are_granted_at_their_first_poll_and_the_rest_queue() {
    let (pools, receipt) = with_mem(Limits {
        pending_requests: 4,
        requests_per_tenant: 4,
        requests_per_provider: 4,
        running_requests: 4,
        running_per_tenant: 4,
        running_per_provider: 4,
        ..Limits::DEFAULT
    })
    .await;
    // No task runs between these polls: a grant here was made on the
    // caller's own task, not by the scheduler actor.
    let mut granted = Vec::new();
    for n in 0..4 {
        match queue(&pools, &receipt, n).await {
            Err(Ok(ready)) => granted.push(ready),
            Err(Err(err)) => panic!("request {n} refused: {err:?}"),
            Ok(_) => panic!("request {n} waited with capacity free"),
        }
    }
    let mut pending = Vec::new();
    for n in 4..8 {
        match queue(&pools, &receipt, n).await {
            Ok(waiting) => pending.push(waiting),
            Err(answer) => panic!("request {n} answered at once: {answer:?}"),
        }
    }
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.pending_requests, snapshot.running_requests),
        (4, 4),
        "four running, four queued: {snapshot:?}"
    );
    // The full queue refuses the next one at its first poll.
    let refused = queue(&pools, &receipt, 8).await;
    assert!(
        matches!(
            refused,
            Err(Err(AdmitError::Capacity {
                resource: "pending_requests",
                used: 4,
                limit: 4,
            }))
        ),
        "the full queue refuses at once: {:?}",
        refused.err()
    );
    // Each release hands its capacity to a queued request.
    drop(granted);
    for (n, waiting) in pending.into_iter().enumerate() {
        let ready = bounded("a queued request's grant", waiting).await;
        assert!(ready.is_ok(), "request {}: {ready:?}", n + 4);
    }
}

#[tokio::test(start_paused = true)]
async fn a_burst_polled_before_any_task_runs_is_held_to_the_pending_bound() {
    let pending_requests = 4;
    let (pools, receipt) = with_mem(Limits {
        pending_requests,
        requests_per_tenant: 4,
        requests_per_provider: 4,
        running_requests: 64,
        running_per_provider: 64,
        ..Limits::DEFAULT
    })
    .await;
    let bound = 64 + u64::from(pending_requests);
    let mut burst = Vec::new();
    let mut refused = None;
    for n in 0..=bound {
        match queue(&pools, &receipt, n).await {
            Ok(waiting) => burst.push(Ok(waiting)),
            Err(Ok(ready)) => burst.push(Err(ready)),
            Err(Err(err)) => {
                refused = Some((n, err));
                break;
            }
        }
    }
    assert!(
        matches!(
            refused,
            Some((n, AdmitError::Capacity { resource: "pending_requests", .. })) if n == bound
        ),
        "64 run, 4 wait, the next is refused by the pending bound: {refused:?}"
    );
    assert_eq!(
        burst.iter().filter(|b| b.is_err()).count(),
        64,
        "the 64 running were granted at their first poll"
    );
    drop(burst);
    support::quiesce().await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.pending_requests, snapshot.running_requests),
        (0, 0),
        "the burst left nothing behind: {snapshot:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn retirement_answers_a_queued_waiter_closed_at_once() {
    let (pools, receipt) = with_mem(Limits {
        running_requests: 1,
        running_per_tenant: 1,
        running_per_provider: 1,
        ..Limits::DEFAULT
    })
    .await;
    let first = running(&pools, &receipt, "a", 1).await;
    let mut waiting = queue(&pools, &receipt, 2)
        .await
        .expect("the only running slot is taken: the request waits");
    support::quiesce().await;
    assert_eq!(
        pools.snapshot().pending_requests,
        1,
        "the request is queued"
    );
    pools.retire().await;
    support::quiesce().await;
    // Polled once more: its answer is already there, well before its
    // deadline (the queue age, 5 s).
    let answer = std::future::poll_fn(|cx| Poll::Ready(waiting.as_mut().poll(cx))).await;
    assert!(
        matches!(answer, Poll::Ready(Err(AdmitError::Closed))),
        "the queued request hears Closed at once: {answer:?}"
    );
    drop(first);
}
