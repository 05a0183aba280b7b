//! Cancellation and request ownership: a dropped waiter refunds its queue
//! slot but not bytes still held elsewhere; the running owner travels with
//! the I/O operation and its results.

mod support;

use provider_pools::{Bytes, Limits, PoolReady, ProviderPools};
use support::{admitted, allow_all, eventually, plan, request, task, with_alpha};

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
async fn dropping_a_queued_admit_refunds_its_slot_but_not_held_input() {
    let (pools, receipt, _held) = saturated().await;
    let baseline = pools.snapshot().metadata_bytes;
    let input = pools
        .stage_input(&plan("a", 1), Bytes::from(vec![7u8; 4_000]))
        .expect("input staged");
    assert_eq!(pools.snapshot().metadata_bytes, baseline + 4_000);

    let mut queued = request(&pools, plan("t", 1), &receipt, b"");
    queued.input = input.clone();
    let waiter = {
        let pools = pools.clone();
        task(async move { pools.admit(queued).await })
    };
    eventually("queued", || pools.snapshot().pending_requests == 1).await;
    let with_request = pools.snapshot().metadata_bytes;
    assert!(with_request > baseline + 4_000, "the request's own charge");

    waiter.abort();
    // The abort drops the admit future when the task next runs: awaited
    // here, then the refunds the engine makes are done.
    assert!(waiter.await.expect_err("aborted").is_cancelled());
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().pending_requests,
        0,
        "the queue slot is refunded"
    );
    assert_eq!(
        pools.snapshot().metadata_bytes,
        baseline + 4_000,
        "the request's own charge is refunded"
    );
    assert_eq!(input.len(), 4_000, "the caller still holds the input");
    drop(input);
    assert_eq!(pools.snapshot().metadata_bytes, baseline);
}

#[tokio::test(start_paused = true)]
async fn cancellation_with_retained_input_and_result_bytes() {
    let (pools, receipt, held) = saturated().await;
    drop(held);
    support::quiescent(&pools).await;
    assert_eq!(pools.snapshot().running_requests, 0, "free");
    let baseline = pools.snapshot().metadata_bytes;

    let ready = admitted(&pools, request(&pools, plan("t", 1), &receipt, b"in")).await;
    let call = pools
        .dispatch(&allow_all(), ready.plan(), ready.provider())
        .expect("dispatch");
    let running = ready.start(call).expect("start");
    let input = running.input().clone();
    let output = running
        .stage_output(Bytes::from(vec![1u8; 10_000]))
        .expect("result staged");

    // The caller returns: its handle is gone, the unread result remains.
    drop(running);
    assert_eq!(
        pools.snapshot().running_requests,
        1,
        "the result keeps the running owner"
    );
    assert_eq!(output.bytes().len(), 10_000);

    drop(output);
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().running_requests,
        0,
        "the running capacity returns with the result"
    );
    assert!(
        pools.snapshot().metadata_bytes > baseline,
        "input bytes held elsewhere stay charged"
    );
    drop(input);
    assert_eq!(pools.snapshot().metadata_bytes, baseline);
}

#[tokio::test(start_paused = true)]
async fn a_grant_to_a_waiter_that_left_is_returned() {
    let (pools, receipt, held) = saturated().await;
    let waiter = {
        let (pools, request) = (pools.clone(), request(&pools, plan("t", 1), &receipt, b"x"));
        task(async move { pools.admit(request).await })
    };
    eventually("queued", || pools.snapshot().pending_requests == 1).await;
    // Release and abandon together: whichever wins, nothing stays owned.
    drop(held);
    waiter.abort();
    let _ = waiter.await;
    support::quiescent(&pools).await;
    let s = pools.snapshot();
    assert!(
        s.pending_requests == 0 && s.running_requests == 0,
        "nothing pending or running"
    );
    let again = admitted(&pools, request(&pools, plan("t", 2), &receipt, b"y")).await;
    drop(again);
}
