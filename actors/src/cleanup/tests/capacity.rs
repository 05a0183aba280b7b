use std::sync::Arc;

use tokio::sync::oneshot;

use super::{events, fixture, Script};
use crate::cleanup::CleanupError;
use crate::workers::testing::{deadline, within, Gate};
use crate::workers::{JobError, WorkerPool};

/// Cleanup progresses while every provider worker is held by a blocked job.
#[tokio::test]
async fn cleanup_progresses_while_every_worker_is_held() {
    let f = fixture(1).await;
    let runtime = tokio::runtime::Handle::current();
    let workers = WorkerPool::spawn_linked(
        &f.limits,
        Arc::clone(&f.accounts),
        runtime,
        f.host.get_cell(),
    );
    let workers = workers.await.expect("worker pool starts");
    let mut gates = Vec::new();
    for _ in 0..2 {
        let (gate, held, started) = Gate::new();
        let job = workers.spawn_blocking(move || held.wait()).await;
        drop(job.expect("a free worker"));
        within("a worker is held", started).await.expect("started");
        gates.push(gate);
    }
    let refused = workers.spawn_blocking(|| ()).await.expect_err("saturated");
    assert_eq!(refused.code(), "capacity");
    assert!(matches!(
        refused,
        JobError::Capacity {
            resource: "provider_workers",
            ..
        }
    ));

    let ticket = f.submit("conn", Script::Succeed);
    within("cleanup while saturated", ticket.outcome())
        .await
        .expect("closed");
    assert_eq!(
        f.log.events(),
        events(&["conn destroyed", "conn charge released"])
    );
    drop(gates);
    workers.when_idle(deadline()).await.expect("workers drain");
}

/// With every cleanup slot taken, a submission is refused at once and gets
/// its resource and charge back untouched.
#[tokio::test]
async fn a_full_cleanup_pool_refuses_and_hands_the_resource_back() {
    let f = fixture(1).await;
    let (verdict, wait) = oneshot::channel();
    let slow = f.submit("slow", Script::Wait(wait));
    let (probe, paid) = f.probe("next", Script::Succeed);
    let refused = f.pool.submit(probe, paid).expect_err("no cleanup slot");
    let capacity = CleanupError::Capacity {
        resource: "cleanup_jobs",
        used: 1,
        limit: 1,
    };
    assert_eq!(refused.error, capacity);
    assert_eq!(refused.error.code(), "capacity");
    assert_eq!(refused.resource.name, "next");
    assert_eq!(f.connections.used(), 2, "both charges still held");
    drop(refused.resource);
    drop(refused.charge);

    verdict.send(true).expect("the close waits");
    within("slow cleanup", slow.outcome())
        .await
        .expect("closed");
    let expected = [
        "next destroyed",
        "next charge released",
        "slow destroyed",
        "slow charge released",
    ];
    assert_eq!(f.log.events(), events(&expected));
    f.idle().await;
    assert!(f
        .pool
        .submit(f.probe("again", Script::Succeed).0, ())
        .is_ok());
}

/// The cleanup slots can be lowered, never below use, and never above the
/// startup limit that sized the release slots.
#[tokio::test]
async fn cleanup_slots_lower_but_never_below_use() {
    let f = fixture(2).await;
    let (verdict, wait) = oneshot::channel();
    let slow = f.submit("slow", Script::Wait(wait));
    let in_use = f.pool.set_limit(0).expect_err("one cleanup running");
    assert_eq!((in_use.resource, in_use.used), ("cleanup_jobs", 1));
    f.pool.set_limit(1).expect("one in use, one allowed");
    let (probe, paid) = f.probe("next", Script::Succeed);
    let refused = f.pool.submit(probe, paid).expect_err("lowered");
    let full = |used, limit| CleanupError::Capacity {
        resource: "cleanup_jobs",
        used,
        limit,
    };
    assert_eq!(refused.error, full(1, 1));
    f.pool.set_limit(50).expect("taken as the startup limit");
    let (probe, paid) = f.probe("next", Script::Succeed);
    let ticket = f.pool.submit(probe, paid).map_err(|r| r.error);
    within("next cleanup", ticket.expect("restored").outcome())
        .await
        .expect("closed");
    verdict.send(true).expect("the close waits");
    within("slow cleanup", slow.outcome())
        .await
        .expect("closed");
    f.idle().await;
}

#[tokio::test]
async fn after_close_submissions_are_refused_and_handed_back() {
    let f = fixture(1).await;
    f.pool.close();
    let (probe, paid) = f.probe("conn", Script::Succeed);
    let refused = f.pool.submit(probe, paid).expect_err("closed");
    assert_eq!(
        (refused.error.clone(), refused.resource.name),
        (CleanupError::Closed, "conn")
    );
    assert_eq!(f.connections.used(), 1);
    let children = f.host.get_children();
    assert!(children
        .iter()
        .any(|c| c.get_id() == f.pool.cell().get_id()));
}
