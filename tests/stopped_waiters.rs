//! A caller that left while waiting for a connection is not counted once
//! its epoch actor has stopped: the shutdown report stays clean.
//!
//! The snapshot's `waiting` counts a departed caller until the epoch actor
//! next looks at the client's queue. A connection of the client destroyed
//! afterwards sends the actor a `Wake` for that look; but when the epoch is
//! drained at the same time, the registry's stop reaches the actor first
//! (ractor serves a stop before queued messages) and the look never comes.
//! Found by `tests/idle_stress.rs` (a shutdown report with `waiting: 1`
//! after everything else was released); reproduced here on one thread with
//! a paused clock: the registry is woken (by `retire`) before the connection
//! is destroyed, so it runs, and stops the drained epoch's actor, before
//! the actor reads its `Wake`.

mod support;

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use provider_pools::{DialError, DialTarget, Dialer, Limits};
use support::{deadline, quiesce, running, with_mem};

#[derive(Clone)]
struct Mem;

impl Dialer for Mem {
    type Conn = u64;

    async fn dial(&self, _: DialTarget<'_>) -> Result<u64, DialError> {
        Ok(7)
    }
}

#[tokio::test(start_paused = true)]
async fn a_departed_waiter_is_not_counted_after_its_epoch_actor_stopped() {
    let (pools, receipt) = with_mem(Limits {
        connections_per_client: 1,
        ..Limits::DEFAULT
    })
    .await;
    let first = running(&pools, &receipt, "a", 1).await;
    let held = pools
        .reserve_connection(&first, &Mem)
        .await
        .expect("the client has room");
    // The client is full: a second caller waits, then leaves.
    let second = running(&pools, &receipt, "b", 2).await;
    let left = tokio::time::timeout(
        Duration::from_millis(10),
        pools.reserve_connection(&second, &Mem),
    )
    .await;
    assert!(left.is_err(), "the second caller waited until it left");
    drop(second);
    quiesce().await;
    assert_eq!(
        pools.snapshot().connections.waiting,
        1,
        "a departed caller counts until the actor's next look"
    );

    // The registry is woken first (retirement queued), then the last
    // connection and lease go: the epoch drains while its `Wake` is queued.
    let mut retire = Box::pin(pools.retire());
    std::future::poll_fn(|cx| {
        let _ = retire.as_mut().poll(cx);
        Poll::Ready(())
    })
    .await;
    drop(held);
    drop(first);
    retire.await;
    quiesce().await;

    let report = pools.shutdown(deadline()).await;
    assert_eq!(report.connections.waiting, 0, "{report:?}");
    assert!(report.is_clean(), "{report:?}");
}
