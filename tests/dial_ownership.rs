//! A dial belongs to the client, not to the request that asked for it: a
//! guest dropping its call mid-dial cancels nothing and backs nothing off;
//! a dial task that ends without an outcome is a cancelled dial, and backs
//! the client off. Paused clock, in-memory connections.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use provider_pools::{ConnectError, DialError, DialErrorKind, DialTarget, Dialer, Limits};
use support::{running, with_mem};
use tokio::sync::Semaphore;

/// Each dial waits for one permit of `gate`, then opens an in-memory
/// connection.
#[derive(Clone)]
struct Gated {
    gate: Arc<Semaphore>,
    dials: Arc<AtomicUsize>,
}

impl Dialer for Gated {
    type Conn = u64;

    async fn dial(&self, _: DialTarget<'_>) -> Result<u64, DialError> {
        self.dials.fetch_add(1, Ordering::SeqCst);
        let permit = self.gate.acquire().await;
        permit
            .map(|p| p.forget())
            .map_err(|_| DialError::new(provider_pools::DialErrorKind::Other, "gate closed"))?;
        Ok(7)
    }
}

/// Lets every actor and task process what is queued (paused clock).
async fn let_tasks_run() {
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_guest_dropping_its_call_mid_dial_backs_nothing_off() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let dialer = Gated {
        gate: Arc::new(Semaphore::new(0)),
        dials: Arc::default(),
    };

    // Tenant A's call is dropped while its dial waits at the gate.
    let a = running(&pools, &receipt, "tenant-a", 1).await;
    let dropped = tokio::time::timeout(
        Duration::from_millis(10),
        pools.reserve_connection(&a, &dialer),
    )
    .await;
    assert!(dropped.is_err(), "the dial is still in flight");
    drop(a);
    let_tasks_run().await;
    assert_eq!(pools.snapshot().connections.connecting, 1, "still dialing");

    // The dial completes on its own, into the client's idle stash.
    dialer.gate.add_permits(1);
    let_tasks_run().await;
    let counts = pools.snapshot().connections;
    assert_eq!((counts.idle, counts.connecting, counts.active), (1, 0, 0));

    // Tenant B is not backed off, and reuses that connection.
    let b = running(&pools, &receipt, "tenant-b", 2).await;
    let conn = pools
        .reserve_connection(&b, &dialer)
        .await
        .expect("no backoff: the dropped call cancelled nothing");
    assert!(conn.is_reused(), "the abandoned dial's connection");
    assert_eq!(*conn.get(), 7);
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 1, "one dial in all");
    drop(conn);
    drop(b);
    let_tasks_run().await;
    assert_eq!(pools.snapshot().connections, Default::default());
}

/// A dialer with a bug: every dial panics.
#[derive(Clone)]
struct Panicking;

impl Dialer for Panicking {
    type Conn = u64;

    async fn dial(&self, _: DialTarget<'_>) -> Result<u64, DialError> {
        panic!("adapter bug: dial panicked");
    }
}

/// A dial whose task ends without an outcome (here its dialer panicked)
/// counts as a cancelled dial: the client backs off, so a broken adapter
/// is not dialed again by every caller. (A permit dropped before any dial
/// task took it would be only abandoned, with no backoff.)
#[tokio::test(start_paused = true)]
async fn a_dial_whose_task_ends_without_an_outcome_backs_the_client_off_as_cancelled() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let a = running(&pools, &receipt, "tenant-a", 1).await;
    let first = pools.reserve_connection(&a, &Panicking).await;
    assert_eq!(first.map(|_| ()).map_err(|e| e.code()), Err("closed"));
    let_tasks_run().await;

    let b = running(&pools, &receipt, "tenant-b", 2).await;
    match pools.reserve_connection(&b, &Panicking).await {
        Err(ConnectError::Unavailable { kind, .. }) => assert_eq!(kind, DialErrorKind::Cancelled),
        other => panic!(
            "expected backoff after the cancelled dial, got {:?}",
            other.map(|_| ())
        ),
    }
    drop((a, b));
    let_tasks_run().await;
    assert_eq!(pools.snapshot().connections, Default::default());
}
