//! Provider jobs on bounded worker slots: reserve before submitting, join
//! before refunding, a dropped waiter refunds nothing, panics poison
//! nothing, and shutdown waits for real joins without aborting.

mod support;

use std::time::Duration;

use provider_pools::{JobError, Limits};
use support::{bounded, deadline, eventually, start};

fn one_worker() -> Limits {
    Limits {
        provider_workers: 1,
        ..Limits::DEFAULT
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_waiter_never_refunds_a_running_blocking_job() {
    let pools = start(one_worker()).await;
    let gate = support::Gate::default();
    let job = {
        let gate = gate.waiter();
        pools
            .spawn_blocking(move || {
                gate.wait();
                7
            })
            .await
            .expect("a free worker")
    };
    drop(job);
    assert_eq!(pools.snapshot().workers, 1, "the job still holds its slot");
    assert_eq!(
        pools.spawn_blocking(|| ()).await.err(),
        Some(JobError::Capacity {
            resource: "provider_workers",
            used: 1,
            limit: 1
        })
    );
    gate.open();
    eventually("the joined job releases its slot", || {
        pools.snapshot().workers == 0
    })
    .await;
    let next = pools
        .spawn_blocking(|| 8)
        .await
        .expect("the slot is free again");
    assert_eq!(bounded("join", next.join()).await, Ok(8));
}

#[tokio::test]
async fn a_provider_panic_answers_its_waiter_and_poisons_nothing() {
    let pools = start(one_worker()).await;
    let panicking = pools
        .spawn(|| async { panic!("provider bug") })
        .await
        .expect("accepted");
    assert_eq!(
        bounded("join", panicking.join()).await,
        Err(JobError::Panicked)
    );
    eventually("the slot returns after the join", || {
        pools.snapshot().workers == 0
    })
    .await;
    let next = pools.spawn(|| async { 42 }).await.expect("accepted");
    assert_eq!(bounded("join", next.join()).await, Ok(42));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_blocking_shares_the_worker_slots_and_keeps_its_charge() {
    let pools = start(one_worker()).await;
    let gate = support::Gate::default();
    let reload = {
        let gate = gate.waiter();
        pools
            .control_blocking(move || gate.wait())
            .await
            .expect("operator work accepted")
    };
    drop(reload);
    assert!(matches!(
        pools.spawn(|| async {}).await,
        Err(JobError::Capacity { .. })
    ));
    gate.open();
    eventually("released after the join", || pools.snapshot().workers == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_waits_for_real_joins_and_reports_what_remains() {
    let pools = start(one_worker()).await;
    let gate = support::Gate::default();
    let job = {
        let gate = gate.waiter();
        pools
            .spawn_blocking(move || gate.wait())
            .await
            .expect("accepted")
    };
    drop(job);

    let soon = tokio::time::Instant::now() + Duration::from_millis(100);
    let report = pools.shutdown(soon).await;
    assert!(!report.is_clean());
    assert_eq!(
        report.workers, 1,
        "the blocking job was neither aborted nor disowned"
    );
    assert_eq!(
        pools.spawn(|| async {}).await.err(),
        Some(JobError::Closed),
        "no new work after shutdown began"
    );

    gate.open();
    let report = bounded("second shutdown", pools.shutdown(deadline())).await;
    assert!(report.is_clean(), "{report:?}");
}

/// A value whose destructor panics (an adapter bug).
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("adapter bug: destructor panicked");
        }
    }
}

#[tokio::test]
async fn a_refused_job_is_dropped_without_failing_the_worker_pool() {
    let pools = start(one_worker()).await;
    let (release, held) = tokio::sync::oneshot::channel::<()>();
    let holder = pools
        .spawn(move || async move {
            let _ = held.await;
        })
        .await
        .expect("a free worker");

    // What the refused job captured is dropped unrun — by the caller's
    // side or contained — and the pool keeps serving.
    let bomb = Bomb;
    let refused = pools
        .spawn(move || async move {
            let _bomb = bomb;
        })
        .await;
    assert_eq!(
        refused.err(),
        Some(JobError::Capacity {
            resource: "provider_workers",
            used: 1,
            limit: 1
        })
    );
    tokio::task::yield_now().await;
    let snapshot = pools.snapshot();
    assert_eq!(
        snapshot.control,
        provider_pools::ControlState::Running,
        "{snapshot:?}"
    );
    release.send(()).expect("the holder waits");
    assert_eq!(bounded("join", holder.join()).await, Ok(()));
    let next = pools.spawn(|| async { 9 }).await.expect("a free worker");
    assert_eq!(bounded("join", next.join()).await, Ok(9));
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}
