//! Idle connections: destroyed before their charge is released, never
//! reused once expired, destroyed at once when their close notice fires,
//! and reclaimed by the control owner in bounded scans. Paused clock.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use provider_pools::{close_watch, DialError, DialTarget, Dialer, Limits, ProviderPools};
use support::{http_config, installation, provider, running, running_on, start, with_mem};
use tokio::task::JoinSet;

/// What a connection saw when it was destroyed: the active and idle
/// counts at that instant.
type DropLog = Arc<Mutex<Vec<(u32, u32)>>>;

/// An in-memory connection that records the pool's counts when dropped.
struct Recorded {
    pools: ProviderPools,
    log: DropLog,
}

impl Drop for Recorded {
    fn drop(&mut self) {
        let counts = self.pools.snapshot().connections;
        self.log
            .lock()
            .expect("log")
            .push((counts.active, counts.idle));
    }
}

#[derive(Clone)]
struct MemDialer {
    pools: ProviderPools,
    log: DropLog,
    dials: Arc<AtomicUsize>,
}

impl MemDialer {
    fn new(pools: &ProviderPools) -> Arc<Self> {
        Arc::new(Self {
            pools: pools.clone(),
            log: Arc::default(),
            dials: Arc::new(AtomicUsize::new(0)),
        })
    }
}

impl Dialer for MemDialer {
    type Conn = Recorded;

    async fn dial(&self, _: DialTarget<'_>) -> Result<Recorded, DialError> {
        self.dials.fetch_add(1, Ordering::SeqCst);
        Ok(Recorded {
            pools: self.pools.clone(),
            log: Arc::clone(&self.log),
        })
    }
}

/// Lets every actor process what is queued (paused clock, one thread).
async fn let_tasks_run() {
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_connection_is_destroyed_before_its_charge_is_released() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let dialer = MemDialer::new(&pools);

    // Active: dropped by its user.
    let request = running(&pools, &receipt, "t", 1).await;
    let conn = pools
        .reserve_connection(&request, dialer.as_ref())
        .await
        .expect("dial");
    drop(conn);
    // Idle: destroyed when it expires.
    let conn = pools
        .reserve_connection(&request, dialer.as_ref())
        .await
        .expect("dial");
    conn.park();
    let_tasks_run().await;
    assert_eq!(pools.snapshot().connections.idle, 1);
    tokio::time::advance(Duration::from_secs(31)).await;
    let_tasks_run().await;

    let log = dialer.log.lock().expect("log").clone();
    assert_eq!(
        log,
        vec![(1, 0), (0, 1)],
        "each connection was still counted when destroyed"
    );
    assert_eq!(pools.snapshot().connections, Default::default());
}

#[tokio::test(start_paused = true)]
async fn a_parked_connection_is_destroyed_as_soon_as_its_close_notice_fires() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let dialer = MemDialer::new(&pools);
    let request = running(&pools, &receipt, "t", 1).await;
    let (watch, notifier) = close_watch();
    pools
        .reserve_connection(&request, dialer.as_ref())
        .await
        .expect("dial")
        .park_watched(&watch);
    let_tasks_run().await;
    assert_eq!(pools.snapshot().connections.idle, 1);

    // The socket's owner saw the peer close: destroyed in this call, not at
    // the next checkout or at expiry.
    notifier.closed();
    let log = dialer.log.lock().expect("log").clone();
    assert_eq!(
        log,
        vec![(0, 1)],
        "destroyed by the notice, still counted idle while it was"
    );
    assert_eq!(pools.snapshot().connections, Default::default());
}

#[tokio::test(start_paused = true)]
async fn an_expired_idle_connection_is_never_reused() {
    let limits = Limits {
        idle_age: Duration::from_secs(10),
        ..Limits::DEFAULT
    };
    let (pools, receipt) = with_mem(limits).await;
    let dialer = MemDialer::new(&pools);
    // Each checkout belongs to a request of its own: a request's waits share
    // its admission deadline.
    let first = running(&pools, &receipt, "t", 1).await;
    pools
        .reserve_connection(&first, dialer.as_ref())
        .await
        .expect("dial")
        .park();
    let_tasks_run().await;
    tokio::time::advance(Duration::from_secs(9)).await;
    let second = running(&pools, &receipt, "t", 2).await;
    let conn = pools
        .reserve_connection(&second, dialer.as_ref())
        .await
        .expect("reuse");
    assert!(conn.is_reused(), "9 s old: still fresh");
    conn.park();
    let_tasks_run().await;
    tokio::time::advance(Duration::from_secs(10)).await;
    let third = running(&pools, &receipt, "t", 3).await;
    let conn = pools
        .reserve_connection(&third, dialer.as_ref())
        .await
        .expect("dial");
    assert!(!conn.is_reused(), "10 s old: expired");
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_thousand_expired_connections_are_reclaimed_in_bounded_scans() {
    const CONNECTIONS: usize = 1_000;
    const CLIENTS: usize = 8;
    const SCAN_BOUND: u32 = 64;
    let limits = Limits {
        connections: 1_024,
        idle_connections: 1_024,
        connections_per_client: 128,
        connections_per_tenant: 128,
        pending_requests: 1_024,
        running_requests: 1_024,
        requests_per_tenant: 1_024,
        requests_per_provider: 1_024,
        running_per_tenant: 1_024,
        running_per_provider: 1_024,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let receipt = pools
        .install(installation(
            &provider("mem"),
            0,
            b"k",
            http_config("mem", CLIENTS as u32),
        ))
        .await
        .expect("install");
    let dialer = MemDialer::new(&pools);

    let mut tasks = JoinSet::new();
    for i in 0..CONNECTIONS {
        let request = running_on(&pools, &receipt, i % CLIENTS, "t", i as u64).await;
        let (pools, dialer) = (pools.clone(), Arc::clone(&dialer));
        tasks.spawn(async move {
            pools
                .reserve_connection(&request, dialer.as_ref())
                .await
                .expect("dial")
        });
    }
    let mut conns = Vec::new();
    while let Some(conn) = tasks.join_next().await {
        conns.push(conn.expect("task"));
    }
    for conn in conns {
        conn.park();
    }
    let_tasks_run().await;
    assert_eq!(pools.snapshot().connections.idle, CONNECTIONS as u32);

    tokio::time::advance(Duration::from_secs(30)).await;
    let_tasks_run().await;
    let mut idle = pools.snapshot().connections.idle;
    let mut scans = 0;
    while idle > 0 {
        tokio::time::advance(Duration::from_secs(1)).await;
        let_tasks_run().await;
        let now = pools.snapshot().connections.idle;
        assert!(
            idle - now <= SCAN_BOUND,
            "one scan reclaimed {} > {SCAN_BOUND}",
            idle - now
        );
        idle = now;
        scans += 1;
        assert!(scans <= 40, "reclaim stalled at {idle} idle");
    }
    assert!(scans >= (CONNECTIONS as u32).div_ceil(SCAN_BOUND) - 1);
    assert_eq!(pools.snapshot().connections, Default::default());
}

/// Dials at once the first time, then never finishes a dial.
#[derive(Default, Clone)]
struct FirstDialOnly {
    dials: Arc<AtomicUsize>,
}

impl Dialer for FirstDialOnly {
    type Conn = u64;

    async fn dial(&self, _: DialTarget<'_>) -> Result<u64, DialError> {
        if self.dials.fetch_add(1, Ordering::SeqCst) == 0 {
            Ok(7)
        } else {
            std::future::pending().await
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_connection_parked_while_a_caller_waits_on_a_dial_goes_to_that_caller() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let dialer = Arc::new(FirstDialOnly::default());
    let first = running(&pools, &receipt, "t", 1).await;
    let held = pools
        .reserve_connection(&first, dialer.as_ref())
        .await
        .expect("first dial");

    // A second caller dials (forever); a third waits on that dial.
    let mut callers = Vec::new();
    for session in [2, 3] {
        let request = running(&pools, &receipt, "t", session).await;
        let (pools, dialer) = (pools.clone(), Arc::clone(&dialer));
        callers.push(support::task(async move {
            let conn = pools.reserve_connection(&request, dialer.as_ref()).await;
            conn.map(|conn| (*conn.get(), conn.is_reused()))
        }));
        let_tasks_run().await;
    }
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 2, "one dial in flight");

    held.park();
    drop(first);
    let waiter = callers.pop().expect("the waiting caller");
    let handed = tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("the waiter is served before the dial in flight ends")
        .expect("task");
    assert_eq!(handed, Ok((7, true)), "the parked connection, reused");
    assert_eq!(pools.snapshot().connections.idle, 0);
    for caller in callers {
        caller.abort();
    }
}
