use tokio::sync::oneshot;

use super::{events, fixture, Script};
use crate::cleanup::CleanupCounts;
use provider_pools_test_peers::eventually;

use crate::workers::testing::within;

/// A successful cleanup destroys the resource, then releases its charge,
/// then frees its slot.
#[tokio::test]
async fn success_destroys_then_releases_the_charge() {
    let f = fixture(2).await;
    let ticket = f.submit("conn", Script::Succeed);
    within("cleanup", ticket.outcome()).await.expect("closed");
    assert_eq!(
        f.log.events(),
        events(&["conn destroyed", "conn charge released"])
    );
    assert_eq!(f.connections.used(), 0);
    f.idle().await;
    assert_eq!(f.gauges(), (0, 0));
}

/// A failed close hands back the resource, still owned and still charged,
/// counted in `failed_cleanup` until the caller drops it.
#[tokio::test]
async fn a_failed_close_returns_the_still_charged_resource() {
    let f = fixture(2).await;
    let ticket = f.submit("conn", Script::Fail);
    let failed = within("cleanup", ticket.outcome())
        .await
        .expect_err("fails");
    assert_eq!(failed.reason(), "peer refused the close");
    assert_eq!(failed.resource().name, "conn");
    assert!(f.log.events().is_empty(), "neither destroyed nor released");
    assert_eq!(f.connections.used(), 1, "the charge is not refunded");
    f.idle().await;
    assert_eq!(f.gauges(), (0, 1));

    drop(failed);
    assert_eq!(
        f.log.events(),
        events(&["conn destroyed", "conn charge released"])
    );
    assert_eq!((f.connections.used(), f.gauges().1), (0, 0));
}

/// A repaired failure can be resubmitted; it stays counted until accepted.
#[tokio::test]
async fn a_repaired_failure_is_resubmitted_and_closes() {
    let f = fixture(1).await;
    let ticket = f.submit("conn", Script::Fail);
    let mut failed = within("cleanup", ticket.outcome())
        .await
        .expect_err("fails");
    f.idle().await;
    failed.resource_mut().script = Script::Succeed;
    let ticket = f
        .pool
        .resubmit(failed)
        .map_err(|(_, e)| e)
        .expect("accepted");
    within("second cleanup", ticket.outcome())
        .await
        .expect("closed");
    assert_eq!(
        f.log.events(),
        events(&["conn destroyed", "conn charge released"])
    );
    f.idle().await;
    assert_eq!((f.connections.used(), f.gauges()), (0, (0, 0)));
}

/// A delayed close keeps its charge and counts as one running cleanup until
/// it finishes; dropping its ticket does not abort it.
#[tokio::test]
async fn a_delayed_cleanup_keeps_its_charge_until_it_finishes() {
    let f = fixture(2).await;
    let (verdict, wait) = oneshot::channel();
    let ticket = f.submit("slow", Script::Wait(wait));
    drop(ticket);
    assert_eq!(
        f.counts().await,
        CleanupCounts {
            running: 1,
            orphaned: 0
        }
    );
    assert_eq!(f.gauges(), (1, 0));
    assert_eq!(f.connections.used(), 1);
    assert!(f.log.events().is_empty());

    verdict.send(true).expect("the close waits");
    f.idle().await;
    assert_eq!(
        f.log.events(),
        events(&["slow destroyed", "slow charge released"])
    );
    assert_eq!((f.connections.used(), f.gauges()), (0, (0, 0)));
}

/// A failure whose ticket was dropped stays owned and charged in the actor,
/// keeping its slot, until the actor stops; then it is dropped, resource
/// first.
#[tokio::test]
async fn a_failure_nobody_waits_for_stays_charged_in_the_actor() {
    let f = fixture(1).await;
    let (verdict, wait) = oneshot::channel();
    drop(f.submit("lost", Script::Wait(wait)));
    verdict.send(false).expect("the close waits");
    f.idle().await;
    assert_eq!(
        f.counts().await,
        CleanupCounts {
            running: 0,
            orphaned: 1
        }
    );
    assert_eq!((f.connections.used(), f.gauges()), (1, (0, 1)));
    assert!(f.log.events().is_empty(), "not refunded");
    let (probe, paid) = f.probe("next", Script::Succeed);
    let refused = f
        .pool
        .submit(probe, paid)
        .expect_err("the kept failure holds the slot");
    assert_eq!(refused.error.code(), "capacity");
    drop(refused);

    f.pool.cell().stop(None);
    eventually("the stopped actor drops its kept failure", || {
        f.gauges().1 == 0
    })
    .await;
    let expected = [
        "next destroyed",
        "next charge released",
        "lost destroyed",
        "lost charge released",
    ];
    assert_eq!(f.log.events(), events(&expected));
    assert_eq!(f.connections.used(), 0);
}

/// A panicking close drops the resource before its charge, frees its slot
/// after the join, and poisons nothing.
#[tokio::test]
async fn a_panicking_close_drops_the_resource_before_its_charge() {
    let f = fixture(1).await;
    let ticket = f.submit("bad", Script::Panic);
    within("panicking cleanup", ticket.outcome())
        .await
        .expect("gone");
    assert_eq!(
        f.log.events(),
        events(&["bad destroyed", "bad charge released"])
    );
    f.idle().await;
    let ticket = f.submit("good", Script::Succeed);
    within("next cleanup", ticket.outcome())
        .await
        .expect("closed");
    assert_eq!(f.gauges(), (0, 0));
}

/// Waiting for idleness before shutdown destroys nothing: a failure nobody
/// waits for stays kept, owned and charged, however often the pool is
/// waited on, until the pool closes.
#[tokio::test]
async fn waiting_for_idleness_before_shutdown_keeps_the_failures() {
    let f = fixture(2).await;
    drop(f.submit("kept", Script::Fail));
    f.idle().await;
    assert_eq!(f.counts().await.orphaned, 1);
    // The failure is kept when this wait arrives.
    f.idle().await;
    assert_eq!(f.counts().await.orphaned, 1);
    assert_eq!(f.connections.used(), 1, "still charged");
    assert_eq!(f.log.events(), events(&[]), "nothing destroyed");
}

/// Once shutdown closes the pool, waiting for idleness destroys the kept
/// failures (resource first), and a close that fails afterwards is
/// destroyed at once: a kept connection holds its request's epoch, which
/// the registry waits for before it stops this actor.
#[tokio::test]
async fn a_closed_pool_destroys_failures_nobody_waits_for() {
    let f = fixture(2).await;
    drop(f.submit("kept", Script::Fail));
    f.idle().await;
    assert_eq!(f.counts().await.orphaned, 1);
    let (verdict, wait) = oneshot::channel();
    drop(f.submit("late", Script::Wait(wait)));

    f.pool.close();
    verdict.send(false).expect("the close waits");
    f.idle().await;
    assert_eq!(f.counts().await, CleanupCounts::default());
    assert_eq!((f.connections.used(), f.gauges()), (0, (0, 0)));
    let events = f.log.events();
    for name in ["kept", "late"] {
        let at = |what: &str| events.iter().position(|e| *e == format!("{name} {what}"));
        let (destroyed, released) = (at("destroyed"), at("charge released"));
        assert!(
            destroyed.is_some() && destroyed < released,
            "{name}: destroyed, then released: {events:?}"
        );
    }
}
