//! A waiter that leaves as running capacity frees for it never leaks that
//! capacity: it serves the next request at once — whether the waiter left
//! with its grant unread in its channel, its cancellation reached the
//! scheduler in the same batch as the release that would have granted it,
//! or it left while the scheduler was granting the batch, so that its grant
//! went into a channel whose receiver was already gone (`scheduler/state.rs`,
//! `grant_ready`'s `Err` branch).
//!
//! Paused clock, no I/O: each waiter's future is polled by hand, so each
//! race is forced, not hoped for. The last race needs a waiter to leave
//! between the scheduler's drain and its grants, which on one thread run
//! without a yield: the waiter granted first is polled with a waker that,
//! when the scheduler's grant wakes it (synchronously, inside the grant
//! loop), drops the waiter queued behind it — as a hedged admission does
//! when one of its two requests wins.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use provider_pools::{AdmitError, Limits, PoolReady, ProviderPools};
use support::{bounded, plan, request, running, with_mem};

/// A registry of one running request, `a`'s, and `b` queued behind it:
/// `b`'s admit future, polled once.
async fn one_running_one_queued() -> (
    provider_pools::ProviderPools,
    provider_pools::InstallReceipt,
    provider_pools::RunningRequest,
    Pin<Box<impl Future<Output = Result<provider_pools::PoolReady, provider_pools::AdmitError>>>>,
) {
    let (pools, receipt) = with_mem(Limits {
        running_requests: 1,
        running_per_provider: 1,
        running_per_tenant: 1,
        ..Limits::DEFAULT
    })
    .await;
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
    // whichever way the scheduler answers them (b dropped from the queue,
    // or a grant into b's closed channel returned), the capacity stays free
    // for the next request.
    drop(first);
    drop(waiting);
    capacity_came_back(&pools, &receipt).await;
}

type Admitting = Pin<Box<dyn Future<Output = Result<PoolReady, AdmitError>> + Send>>;

/// A waker that drops the admission it holds when it is first woken with
/// one: the winner's waker, holding the loser.
#[derive(Default)]
struct DropOnWake {
    loser: Mutex<Option<Admitting>>,
    dropped: AtomicBool,
}

impl Wake for DropOnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let loser = self.loser.lock().expect("not poisoned").take();
        if loser.is_some() {
            drop(loser);
            self.dropped.store(true, Ordering::SeqCst);
        }
    }
}

/// `request`'s admit future, boxed.
fn admitting(pools: &ProviderPools, request: provider_pools::AdmitRequest) -> Admitting {
    let pools = pools.clone();
    Box::pin(async move { pools.admit(request).await })
}

/// Polls `future` once with `waker`: true while it is pending.
fn pending_after_one_poll(future: &mut Admitting, waker: &Waker) -> bool {
    future
        .as_mut()
        .poll(&mut Context::from_waker(waker))
        .is_pending()
}

#[tokio::test(start_paused = true)]
async fn a_waiter_that_leaves_while_the_scheduler_grants_its_batch_returns_its_running_capacity() {
    let ceiling = 2;
    let (pools, receipt) = with_mem(Limits {
        running_requests: ceiling,
        running_per_provider: ceiling,
        running_per_tenant: ceiling,
        ..Limits::DEFAULT
    })
    .await;
    let holders = [
        running(&pools, &receipt, "a", 1).await,
        running(&pools, &receipt, "a", 2).await,
    ];
    // Tenant b queues a winner, then a loser behind it in the same group;
    // the winner's waker holds the loser.
    let hedge = Arc::new(DropOnWake::default());
    let hedge_waker = Waker::from(Arc::clone(&hedge));
    let mut winner = admitting(&pools, request(&pools, plan("b", 3), &receipt, b""));
    let mut loser = admitting(&pools, request(&pools, plan("b", 4), &receipt, b""));
    assert!(
        pending_after_one_poll(&mut winner, &hedge_waker),
        "the running ceiling is reached: the winner waits"
    );
    assert!(
        pending_after_one_poll(&mut loser, Waker::noop()),
        "the loser waits behind it"
    );
    *hedge.loser.lock().expect("not poisoned") = Some(loser);
    support::quiesce().await;
    assert_eq!(pools.snapshot().pending_requests, 2, "both are queued");

    // Both releases reach the scheduler in one batch; granting the winner
    // wakes it, its waker drops the loser (whose cancellation misses the
    // drained batch), and the loser's grant goes into a closed channel.
    drop(holders);
    support::quiesce().await;
    assert!(
        hedge.dropped.load(Ordering::SeqCst),
        "the winner was granted while the loser still waited"
    );
    let ready = match winner
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(admitted) => admitted.expect("the winner is granted"),
        Poll::Pending => panic!("the winner's grant is in its channel"),
    };
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.pending_requests, snapshot.running_requests),
        (0, 1),
        "only the winner holds running capacity: {snapshot:?}"
    );
    drop(ready);
    support::quiesce().await;

    // Every running slot is free again: the ceiling's worth of admissions
    // are granted at once, and shutdown is clean once they are dropped.
    let mut admitted = Vec::new();
    for session in 0..u64::from(ceiling) {
        let next = bounded(
            "an admission up to the running ceiling",
            pools.admit(request(&pools, plan("c", 10 + session), &receipt, b"")),
        )
        .await;
        admitted.push(next.expect("the running capacity came back"));
    }
    drop(admitted);
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "not clean after shutdown: {report:?}");
}
