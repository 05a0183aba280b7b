//! A stand-in for tokio's `Notify` under loom, with the part of its
//! contract the slot pool relies on: a `notify_one` is never lost — it wakes a
//! waiting `Notified`, or is kept for the next one to come. tokio's own
//! `Notify` takes a `std` mutex that loom cannot schedule around (tokio
//! checks it with its own loom models), so the models of the structures
//! that wait on one see this instead: their own atomics, in every
//! interleaving, around a wake-up that is exact.
//!
//! It wakes every registered waiter per notification (each re-checks and
//! only one consumes it) and keeps any number of notifications where tokio
//! keeps one: both only ever add a spurious wake-up, which the pool's
//! waiters absorb by looking again.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use loom::sync::Mutex;

#[derive(Debug, Default)]
struct Inner {
    permits: usize,
    waiters: Vec<Waker>,
}

/// Notifications not yet consumed, and the tasks waiting for one.
#[derive(Debug, Default)]
pub(crate) struct Notify(Mutex<Inner>);

impl Notify {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Wakes the waiting tasks, or keeps the notification for the next.
    pub(crate) fn notify_one(&self) {
        let waiters = {
            let mut inner = self
                .0
                .lock()
                .expect("the stand-in never panics under its lock");
            inner.permits += 1;
            std::mem::take(&mut inner.waiters)
        };
        waiters.into_iter().for_each(Waker::wake);
    }

    pub(crate) fn notified(&self) -> Notified<'_> {
        Notified(self)
    }
}

/// One wait for a notification.
#[derive(Debug)]
pub(crate) struct Notified<'a>(&'a Notify);

impl Notified<'_> {
    /// Nothing to do: a notification is kept until consumed.
    pub(crate) fn enable(self: Pin<&mut Self>) -> bool {
        false
    }
}

impl Future for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut inner = self
            .0
             .0
            .lock()
            .expect("the stand-in never panics under its lock");
        if inner.permits > 0 {
            inner.permits -= 1;
            Poll::Ready(())
        } else {
            inner.waiters.push(cx.waker().clone());
            Poll::Pending
        }
    }
}
