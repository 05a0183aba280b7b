//! The scheduler's mailbox bounds, as the startup limits size them
//! (`scheduler::mailbox_bound`; these tests kill the mutants of that
//! arithmetic that the rest of the suite let survive, RELIABILITY.md
//! "Mutation testing"):
//!
//! - release slots cover the worst case the limits allow: every pending
//!   request's ticket, and every grant still unread in its waiter's channel
//!   beside that waiter's still-armed ticket; a waiter that reads its grant
//!   frees its ticket's slot at once;
//! - message slots bound a burst at `64 + pending_requests`: a burst that
//!   big is taken, the next admission is refused busy rather than queued
//!   without bound;
//! - retirement answers every queued waiter `Closed` there and then (the
//!   scheduler's `Close`), instead of leaving it to wait out its deadline.
//!
//! Paused clock, no I/O: admit futures are polled once by hand (which
//! queues them) and then held unpolled, so grants stay unread and bursts
//! reach the mailbox before the scheduler runs: the worst cases are forced,
//! not hoped for.

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
async fn release_slots_cover_every_pending_ticket_and_every_unread_grant() {
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
    // Four grants, left unread: each holds its grant's release slot and its
    // waiter's armed ticket.
    let mut granted = Vec::new();
    for n in 0..4 {
        granted.push(
            queue(&pools, &receipt, n)
                .await
                .expect("waits for its grant"),
        );
    }
    support::quiesce().await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.pending_requests, snapshot.running_requests),
        (0, 4),
        "every grant was sent: {snapshot:?}"
    );
    // Four more fill the pending bound: one ticket each.
    let mut pending = Vec::new();
    for n in 4..8 {
        match queue(&pools, &receipt, n).await {
            Ok(waiting) => pending.push(waiting),
            Err(answer) => panic!("request {n} refused beside unread grants: {answer:?}"),
        }
    }
    support::quiesce().await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.pending_requests, snapshot.running_requests),
        (4, 4),
        "the four are queued: {snapshot:?}"
    );
    // A waiter that reads its grant frees its ticket's slot there and then:
    // with every slot in use, the next admission takes that one (and the
    // full queue refuses it), instead of being refused busy.
    let mut granted = granted.into_iter();
    let first = granted.next().expect("four grants");
    let first = bounded("an unread grant", first).await.expect("granted");
    let refused = queue(&pools, &receipt, 8)
        .await
        .expect("a release slot was free: the request reached the scheduler");
    let refused = bounded("the full queue's answer", refused).await;
    assert!(
        matches!(
            refused,
            Err(AdmitError::Capacity {
                resource: "pending_requests",
                ..
            })
        ),
        "the full queue refuses: {refused:?}"
    );
    // Every request is served in turn.
    drop(first);
    for (n, waiting) in granted.enumerate() {
        let ready = bounded("an unread grant", waiting).await;
        let ready = ready.unwrap_or_else(|e| panic!("request {}: {e:?}", n + 1));
        drop(ready);
    }
    for (n, waiting) in pending.into_iter().enumerate() {
        let ready = bounded("a queued request's grant", waiting).await;
        assert!(ready.is_ok(), "request {}: {ready:?}", n + 4);
    }
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_64_plus_pending_requests_is_taken_and_the_next_is_refused_busy() {
    let pending_requests = 4;
    let (pools, receipt) = with_mem(Limits {
        pending_requests,
        requests_per_tenant: 4,
        requests_per_provider: 4,
        // Release slots (1 + pending + 2 × running, one of them the
        // registry's close) far outnumber the message slots, so the burst
        // meets the message bound first.
        running_requests: 64,
        ..Limits::DEFAULT
    })
    .await;
    let bound = 64 + u64::from(pending_requests);
    // No await point yields between these polls, so the scheduler takes
    // none of the burst's messages before the last is sent.
    let mut burst = Vec::new();
    let mut refused = None;
    for n in 0..=bound {
        let admitting = pools.clone();
        let admit = request(&pools, plan(&format!("t{n}"), n), &receipt, b"");
        let mut future: Admit = Box::pin(async move { admitting.admit(admit).await });
        let waker = std::task::Waker::noop();
        match future
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
        {
            Poll::Pending => burst.push(future),
            Poll::Ready(answer) => {
                refused = Some((n, answer.err()));
                break;
            }
        }
    }
    assert_eq!(
        refused,
        Some((bound, Some(AdmitError::Busy))),
        "the first {bound} are taken, the next is refused busy"
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
