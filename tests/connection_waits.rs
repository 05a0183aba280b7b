//! A request whose client is at `connections_per_client` waits, within its
//! deadline, for a connection of that client — the next one parked, or a
//! dial once one is destroyed — served by tenant rotation, holding no
//! connection charge while it waits. With nobody waiting, a parked
//! connection is taken from the stash on the checkout's first poll, without
//! the epoch actor; once callers wait, a parked one goes to them, never to
//! a newcomer — whether it asks before the actor has run or its checkout
//! is already queued at the actor.
//!
//! Paused clock, in-memory connections: [`support::quiesce`] returns only once every
//! task and actor has run out of work, so each step below is deterministic.

mod support;

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use provider_pools::{
    ConnectError, DialError, DialTarget, Dialer, InstallReceipt, Limits, PooledConnection,
    ProviderPools, RunningRequest,
};
use support::{running, with_mem};
use tokio::task::JoinHandle;

/// Opens in-memory connections numbered from 1.
#[derive(Clone, Default)]
struct Mem {
    dials: Arc<AtomicUsize>,
}

impl Dialer for Mem {
    type Conn = usize;

    async fn dial(&self, _: DialTarget<'_>) -> Result<usize, DialError> {
        Ok(self.dials.fetch_add(1, Ordering::SeqCst) + 1)
    }
}

/// A client of `per_client` connections, which one tenant may fill alone.
async fn setup(per_client: u32) -> (ProviderPools, InstallReceipt, Mem) {
    let (pools, receipt) = with_mem(Limits {
        connections_per_client: per_client,
        connections_per_tenant: per_client,
        ..Limits::DEFAULT
    })
    .await;
    (pools, receipt, Mem::default())
}

type Waiting = JoinHandle<(
    RunningRequest,
    Result<PooledConnection<usize>, ConnectError>,
)>;

/// `request` asks for a connection in a task of its own; returns once the
/// ask has reached wherever it waits.
async fn ask(pools: &ProviderPools, dialer: &Mem, request: RunningRequest) -> Waiting {
    let (pools, dialer) = (pools.clone(), dialer.clone());
    #[allow(clippy::disallowed_methods, reason = "the test owns its task")]
    let task = tokio::spawn(async move {
        let conn = pools.reserve_connection(&request, &dialer).await;
        (request, conn)
    });
    support::quiesce().await;
    task
}

async fn hold(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &str,
    session: u64,
) -> (RunningRequest, PooledConnection<usize>) {
    let request = running(pools, receipt, tenant, session).await;
    let conn = pools
        .reserve_connection(&request, &Mem::default())
        .await
        .expect("the client has room");
    (request, conn)
}

#[tokio::test(start_paused = true)]
async fn a_request_at_a_full_client_takes_the_connection_parked_next() {
    let (pools, receipt, dialer) = setup(1).await;
    let (_first, held) = hold(&pools, &receipt, "a", 1).await;
    let waiting = ask(&pools, &dialer, running(&pools, &receipt, "b", 2).await).await;
    assert!(!waiting.is_finished(), "the full client made it wait");
    assert_eq!(
        pools.snapshot().connections.waiting,
        1,
        "counted as waiting"
    );

    held.park();
    let (_second, conn) = waiting.await.expect("waiter task");
    let conn = conn.expect("the parked connection");
    assert_eq!(
        pools.snapshot().connections.waiting,
        0,
        "served, no longer waiting"
    );
    assert!(conn.is_reused());
    assert_eq!(*conn.get(), 1, "a's connection");
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 0, "nothing dialed");
}

/// Polls `ask` once, as its task's first turn would, before any actor runs.
fn first_poll<F: Future>(ask: Pin<&mut F>) -> Poll<F::Output> {
    ask.poll(&mut Context::from_waker(Waker::noop()))
}

#[tokio::test(start_paused = true)]
async fn with_nobody_waiting_a_parked_connection_is_taken_without_a_message_hop() {
    let (pools, receipt, dialer) = setup(1).await;
    let (_first, held) = hold(&pools, &receipt, "a", 1).await;
    held.park();
    support::quiesce().await;
    let next = running(&pools, &receipt, "b", 2).await;
    let mut asking = pin!(pools.reserve_connection(&next, &dialer));
    let Poll::Ready(conn) = first_poll(asking.as_mut()) else {
        panic!("the checkout waited for the epoch actor");
    };
    assert_eq!(
        conn.map(|c| (*c.get(), c.is_reused())).ok(),
        Some((1, true)),
        "a's parked connection, taken from the stash directly"
    );
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_connection_parked_while_a_caller_waits_goes_to_it_not_to_a_newcomer() {
    let (pools, receipt, dialer) = setup(1).await;
    let (_first, held) = hold(&pools, &receipt, "a", 1).await;
    let waiting = ask(&pools, &dialer, running(&pools, &receipt, "b", 2).await).await;
    let newcomer = running(&pools, &receipt, "c", 3).await;
    // Parked, and the epoch actor woken, but it has not run yet when the
    // newcomer asks: the newcomer must not take the connection from the
    // stash ahead of the caller already waiting.
    held.park();
    let mut late = pin!(pools.reserve_connection(&newcomer, &dialer));
    assert!(
        first_poll(late.as_mut()).is_pending(),
        "the newcomer took the parked connection ahead of the waiter"
    );
    let (_second, conn) = waiting.await.expect("waiter task");
    assert_eq!(
        conn.map(|c| (*c.get(), c.is_reused())).ok(),
        Some((1, true)),
        "the waiter got a's connection"
    );
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_request_at_a_full_client_dials_once_a_connection_is_destroyed() {
    let (pools, receipt, dialer) = setup(1).await;
    let (_first, held) = hold(&pools, &receipt, "a", 1).await;
    let waiting = ask(&pools, &dialer, running(&pools, &receipt, "b", 2).await).await;
    assert!(!waiting.is_finished());
    assert_eq!(
        pools.snapshot().connections.connecting,
        0,
        "a waiter holds no connection charge"
    );

    drop(held);
    let (_second, conn) = waiting.await.expect("waiter task");
    let conn = conn.expect("a fresh connection");
    assert!(!conn.is_reused());
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 1);
    assert_eq!(pools.snapshot().connections.active, 1);
}

#[tokio::test(start_paused = true)]
async fn a_request_at_a_full_client_times_out_at_its_deadline_holding_nothing() {
    let (pools, receipt, dialer) = setup(1).await;
    let (_first, held) = hold(&pools, &receipt, "a", 1).await;
    let soon = tokio::time::Instant::now() + Duration::from_millis(250);
    let late = support::running_until(&pools, &receipt, "b", 2, soon).await;
    let started = tokio::time::Instant::now();
    assert_eq!(
        pools.reserve_connection(&late, &dialer).await.err(),
        Some(ConnectError::Timeout)
    );
    assert_eq!(
        tokio::time::Instant::now() - started,
        soon - started,
        "at its deadline"
    );
    drop(late);

    // What frees after it left is still there for the next caller.
    held.park();
    support::quiesce().await;
    let counts = pools.snapshot().connections;
    assert_eq!(
        (
            counts.idle,
            counts.active,
            counts.connecting,
            counts.waiting
        ),
        (1, 0, 0, 0),
        "the departed waiter is no longer counted once the actor looked"
    );
    let (_next, conn) = hold(&pools, &receipt, "c", 3).await;
    assert!(conn.is_reused(), "the departed waiter took nothing");
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_that_leaves_passes_its_turn_and_loses_no_connection() {
    let (pools, receipt, dialer) = setup(1).await;
    let (_first, held) = hold(&pools, &receipt, "a", 1).await;
    let leaving = ask(&pools, &dialer, running(&pools, &receipt, "b", 2).await).await;
    let staying = ask(&pools, &dialer, running(&pools, &receipt, "c", 3).await).await;
    leaving.abort();
    assert!(leaving.await.is_err_and(|e| e.is_cancelled()));

    held.park();
    let (_third, conn) = staying.await.expect("waiter task");
    assert_eq!(
        conn.map(|c| (*c.get(), c.is_reused())).ok(),
        Some((1, true))
    );
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 0);
}

/// A caller whose checkout is already queued at the epoch actor when a
/// connection is parked does not take it ahead of the caller already
/// waiting: the actor hands the parked connection to the waiter, and the
/// newcomer waits its turn.
#[tokio::test(start_paused = true)]
async fn a_checkout_queued_before_a_park_does_not_take_it_ahead_of_a_waiter() {
    let (pools, receipt, dialer) = setup(1).await;
    let (_first, held) = hold(&pools, &receipt, "a", 1).await;
    let waiting = ask(&pools, &dialer, running(&pools, &receipt, "b", 2).await).await;
    let newcomer = running(&pools, &receipt, "c", 3).await;
    // Polled once, with no await before the park: its checkout is in the
    // epoch actor's mailbox ahead of the park's wake-up.
    let mut late = pin!(pools.reserve_connection(&newcomer, &dialer));
    assert!(
        first_poll(late.as_mut()).is_pending(),
        "a caller waits while the client is full"
    );
    held.park();

    let (_second, conn) = waiting.await.expect("waiter task");
    assert_eq!(
        conn.map(|c| (*c.get(), c.is_reused())).ok(),
        Some((1, true)),
        "the waiter gets the parked connection"
    );
    assert!(
        first_poll(late.as_mut()).is_pending(),
        "the newcomer waits its turn"
    );
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn waiters_of_a_full_client_are_served_by_tenant_rotation() {
    let (pools, receipt, dialer) = setup(4).await;
    let mut held = Vec::new();
    for session in 0..4 {
        held.push(hold(&pools, &receipt, "x", session).await);
    }
    // Tenant a queues three callers before tenant b queues one.
    let mut waiting = Vec::new();
    for (tenant, session) in [("a", 10), ("a", 11), ("a", 12), ("b", 20)] {
        let request = running(&pools, &receipt, tenant, session).await;
        waiting.push((tenant, ask(&pools, &dialer, request).await));
    }
    assert_eq!(pools.snapshot().connections.waiting, 4);
    let mut served = Vec::new();
    // Each served caller keeps its connection: the client stays full.
    let mut kept = Vec::new();
    while let Some((_, conn)) = held.pop() {
        conn.park();
        support::quiesce().await;
        let done: Vec<usize> = (0..waiting.len())
            .filter(|&i| waiting[i].1.is_finished())
            .collect();
        assert_eq!(done.len(), 1, "one parked connection serves one waiter");
        let (tenant, task) = waiting.remove(done[0]);
        let (request, conn) = task.await.expect("waiter task");
        let conn = conn.expect("served");
        assert!(conn.is_reused());
        served.push(tenant);
        kept.push((request, conn));
    }
    assert_eq!(
        served,
        ["a", "b", "a", "a"],
        "b does not wait behind all of a"
    );
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 0);
    assert_eq!(pools.snapshot().connections.waiting, 0);
}

/// Opens in-memory connections of another type than [`Mem`]'s.
#[derive(Clone, Default)]
struct Named;

impl Dialer for Named {
    type Conn = String;

    async fn dial(&self, _: DialTarget<'_>) -> Result<String, DialError> {
        Ok("named".to_owned())
    }
}

#[tokio::test(start_paused = true)]
async fn a_waiter_of_another_connection_type_is_not_stuck_behind_idle_ones() {
    let (pools, receipt, _) = setup(1).await;
    let (_first, held) = hold(&pools, &receipt, "a", 1).await;
    held.park();
    support::quiesce().await;
    assert_eq!(pools.snapshot().connections.idle, 1);
    // The client's only connection is parked, and of a type `b` cannot use:
    // it is destroyed to make room for `b`'s dial.
    let request = running(&pools, &receipt, "b", 2).await;
    let conn = tokio::time::timeout(
        Duration::from_secs(1),
        pools.reserve_connection(&request, &Named),
    )
    .await
    .expect("served well before the idle connection would expire")
    .expect("a fresh connection of its own type");
    assert_eq!(conn.get(), "named");
    let counts = pools.snapshot().connections;
    assert_eq!((counts.idle, counts.active), (0, 1));
}
