//! No refund without destruction, observed while a destructor runs: the
//! room a connection holds (here the client's only connection, which a
//! request of another tenant waits for) is not given to anyone until the
//! connection's own `Drop` has finished.
//!
//! Real threads: a 2-worker runtime. The destructor blocks the test's
//! thread for up to 1 s, waiting for a dial to start; the epoch actor,
//! on a worker, would start the waiter's dial the moment the client's
//! charge came back. The correct order passes deterministically (no dial
//! can start during the destructor, the wait simply ends); a charge
//! returned before the destructor would be caught as soon as the actor ran
//! within that second (300 ms missed one run in five on a loaded 2-core
//! machine).

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use provider_pools::{DialError, DialTarget, Dialer, Limits};
use support::{bounded, eventually, running, with_mem};

#[derive(Default)]
struct Probe {
    /// A connection's destructor is running.
    destroying: AtomicBool,
    /// A dial started while one was.
    dialed_while_destroying: AtomicBool,
    dials: AtomicUsize,
    /// Set by every dial, for the destructor to wait on.
    dialed: Mutex<bool>,
    dial_seen: Condvar,
}

/// A connection whose destructor waits (bounded) for a dial to start.
struct Watched(Arc<Probe>);

impl Drop for Watched {
    fn drop(&mut self) {
        let probe = &self.0;
        probe.destroying.store(true, Ordering::SeqCst);
        let dialed = probe.dialed.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = probe
            .dial_seen
            .wait_timeout_while(dialed, Duration::from_secs(1), |dialed| !*dialed);
        probe.destroying.store(false, Ordering::SeqCst);
    }
}

#[derive(Clone)]
struct WatchedDialer(Arc<Probe>);

impl Dialer for WatchedDialer {
    type Conn = Watched;

    async fn dial(&self, _: DialTarget<'_>) -> Result<Watched, DialError> {
        let probe = &self.0;
        if probe.destroying.load(Ordering::SeqCst) {
            probe.dialed_while_destroying.store(true, Ordering::SeqCst);
        }
        probe.dials.fetch_add(1, Ordering::SeqCst);
        *probe.dialed.lock().unwrap_or_else(PoisonError::into_inner) = true;
        probe.dial_seen.notify_all();
        Ok(Watched(Arc::clone(probe)))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_gets_the_room_of_a_destroyed_connection_only_after_its_destructor_ran() {
    let (pools, receipt) = with_mem(Limits {
        connections_per_client: 1,
        connections_per_tenant: 1,
        ..Limits::DEFAULT
    })
    .await;
    let probe = Arc::new(Probe::default());
    let dialer = WatchedDialer(Arc::clone(&probe));

    let first = running(&pools, &receipt, "a", 1).await;
    let held = bounded("a's dial", pools.reserve_connection(&first, &dialer))
        .await
        .expect("the client has room");
    *probe.dialed.lock().unwrap_or_else(PoisonError::into_inner) = false;

    let second = running(&pools, &receipt, "b", 2).await;
    let waiting = {
        let (pools, dialer) = (pools.clone(), dialer.clone());
        support::task(async move {
            let conn = pools.reserve_connection(&second, &dialer).await;
            (second, conn.map(|c| c.is_reused()))
        })
    };
    eventually("b waits for the client's only connection", || {
        pools.snapshot().connections.waiting == 1
    })
    .await;

    // Destroyed on this thread; the epoch actor runs on the workers.
    drop(held);
    let (_second, reused) = bounded("b's connection", waiting).await.expect("task");
    assert_eq!(reused, Ok(false), "b dialed once the room came back");
    assert!(
        !probe.dialed_while_destroying.load(Ordering::SeqCst),
        "b's dial started while a's connection was still being destroyed"
    );
    assert_eq!(probe.dials.load(Ordering::SeqCst), 2);
}
