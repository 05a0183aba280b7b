//! Hedged admissions on real threads never leak running capacity: many
//! waiters are dropped while the scheduler grants a burst of freed
//! capacity, some after the batch holding their cancellation was drained,
//! so their grants go into channels whose receivers are gone
//! (`scheduler/state.rs`, `grant_ready`'s `Err` branch); afterwards all the
//! running capacity is available again and shutdown is clean.
//!
//! A 4-worker runtime, the real clock, bounded rounds. Each round a holder
//! takes every running slot; each hedge task queues a first request, and
//! once every first request is queued, a second one behind them all, then
//! waits for whichever is granted first and drops the other. The holder
//! lets go of every slot at once: the scheduler grants the first requests
//! in one loop, each grant wakes its hedge task on another worker, which
//! drops its second request while the scheduler is still granting the
//! first requests queued after it. `tests/grant_races.rs` forces the same
//! branch deterministically on one thread.

mod support;

use std::future::Future;
use std::sync::Arc;

use provider_pools::{InstallReceipt, Limits, ProviderPools};
use support::{bounded, eventually, plan, request, with_mem};
use tokio::sync::Barrier;

/// Hedge tasks per round; the running ceiling is twice this.
const HEDGES: usize = 32;
const ROUNDS: u64 = 100;

fn limits() -> Limits {
    let running = 2 * HEDGES as u32;
    Limits {
        running_requests: running,
        running_per_tenant: running,
        running_per_provider: running,
        pending_requests: 2 * running,
        requests_per_tenant: 2 * running,
        requests_per_provider: 2 * running,
        ..Limits::DEFAULT
    }
}

/// One hedge: queues `first`, waits at `queued` until every first request
/// is, then queues `second` and keeps whichever is granted first; the
/// other is dropped then and there.
async fn hedge(pools: ProviderPools, receipt: InstallReceipt, session: u64, queued: Arc<Barrier>) {
    let first = pools.admit(request(&pools, plan("hedge", session), &receipt, b""));
    tokio::pin!(first);
    // Queue the first request: one poll, while every slot is held.
    let polled =
        std::future::poll_fn(|cx| std::task::Poll::Ready(first.as_mut().poll(cx).is_pending()))
            .await;
    assert!(
        polled,
        "every running slot is held: the first request waits"
    );
    queued.wait().await;
    let second = pools.admit(request(&pools, plan("hedge", session + 1), &receipt, b""));
    let won = tokio::select! {
        biased;
        won = &mut first => won,
        won = second => won,
    };
    drop(won.expect("one of the two is granted"));
}

/// Waits (bounded) until nothing is pending or running.
async fn capacity_all_free(pools: &ProviderPools, when: &str) {
    eventually(
        &format!("nothing pending or running {when} (running capacity leaked?)"),
        || {
            let s = pools.snapshot();
            (s.pending_requests, s.running_requests) == (0, 0)
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hedged_admissions_on_real_threads_leave_all_running_capacity_free() {
    let limits = limits();
    let (pools, receipt) = with_mem(limits).await;
    for round in 0..ROUNDS {
        capacity_all_free(&pools, &format!("before round {round}")).await;
        let mut holders = Vec::new();
        for slot in 0..u64::from(limits.running_requests) {
            let admit = pools.admit(request(&pools, plan("holder", slot), &receipt, b""));
            holders.push(bounded("a holder's admission", admit).await.expect("free"));
        }
        let queued = Arc::new(Barrier::new(HEDGES + 1));
        let mut hedges = Vec::new();
        for i in 0..HEDGES as u64 {
            let session = 1_000 * (round + 1) + 2 * i;
            hedges.push(support::task(hedge(
                pools.clone(),
                receipt.clone(),
                session,
                Arc::clone(&queued),
            )));
        }
        bounded("every first request queued", queued.wait()).await;
        eventually("every second request queued", || {
            pools.snapshot().pending_requests == 2 * HEDGES as u32
        })
        .await;
        drop(holders);
        for hedge in hedges {
            bounded("a hedge ends", hedge).await.expect("hedge task");
        }
    }
    capacity_all_free(&pools, "after the last round").await;
    let mut admitted = Vec::new();
    for slot in 0..u64::from(limits.running_requests) {
        let admit = pools.admit(request(&pools, plan("after", slot), &receipt, b""));
        admitted.push(
            bounded("an admission up to the running ceiling", admit)
                .await
                .expect("the running capacity came back"),
        );
    }
    drop(admitted);
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "not clean after shutdown: {report:?}");
}
