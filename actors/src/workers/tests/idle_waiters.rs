//! The pool's idle waiters (`when_idle` callers) are bounded: one past the
//! bound is answered `Busy` at once, and a waiter that gave up frees its
//! place for the next.

use tokio::sync::oneshot;

use super::fixture;
use crate::workers::testing::within;
use crate::workers::{tasks, Msg, WaitError};

/// Idle waiters are bounded: one past the bound is answered `Busy` at once,
/// the others when the pool goes idle.
#[tokio::test]
async fn idle_waiters_are_bounded() {
    let f = fixture(1).await;
    let (gate, _job) = f.hold().await;
    let mut waiters = Vec::new();
    for _ in 0..=tasks::IDLE_WAITERS {
        let (reply, idle) = oneshot::channel();
        let queued = f.pool.mailbox().try_send(Msg::WhenIdle { reply });
        assert!(queued.is_ok(), "room in the mailbox");
        waiters.push(idle);
    }
    assert_eq!(f.counts().await.running(), 1);
    let mut extra = waiters.pop().expect("one past the bound");
    assert_eq!(extra.try_recv(), Ok(Err(WaitError::Busy)));
    gate.open();
    for idle in waiters {
        assert_eq!(within("idle", idle).await, Ok(Ok(())));
    }
}

/// Waiters that gave up (their receivers dropped) do not count against the
/// bound: with the bound full of them, the next waiter is held and answered
/// when the pool goes idle, not refused `Busy`.
#[tokio::test]
async fn idle_waiters_that_gave_up_free_their_places() {
    let f = fixture(1).await;
    let (gate, _job) = f.hold().await;
    let mut waiters = Vec::new();
    for _ in 0..tasks::IDLE_WAITERS {
        let (reply, idle) = oneshot::channel();
        let queued = f.pool.mailbox().try_send(Msg::WhenIdle { reply });
        assert!(queued.is_ok(), "room in the mailbox");
        waiters.push(idle);
    }
    // The counts answer comes after every waiter above was held.
    assert_eq!(f.counts().await.running(), 1);
    drop(waiters);
    let (reply, mut next) = oneshot::channel();
    let queued = f.pool.mailbox().try_send(Msg::WhenIdle { reply });
    assert!(queued.is_ok(), "room in the mailbox");
    assert_eq!(f.counts().await.running(), 1, "the job still runs");
    assert!(
        next.try_recv().is_err(),
        "the waiter is held while the job runs, not refused busy"
    );
    gate.open();
    assert_eq!(within("idle", next).await, Ok(Ok(())));
}
