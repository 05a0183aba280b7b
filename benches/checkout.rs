//! Idle-connection checkout and park through the epoch actor, against
//! deadpool and bb8 managing the same resource.
//!
//! The resource is a real loopback TCP connection, dialed once per pooled
//! slot before measuring; afterwards the loops only check out and return.
//! Every pool holds at most 16 connections ([`POOL`]); each runs at 1, 16
//! and 256 concurrent tasks, and one iteration is one checkout and one
//! return by one of the tasks (criterion's time is wall time per operation
//! across all tasks, so lower is higher throughput).
//!
//! - `checkout/*`: each task holds one admitted `RunningRequest` (admitted
//!   before the timer starts) and loops `reserve_connection` → `park`, the
//!   real path of an adapter that found an idle connection: the tenant's
//!   connection share, a take from the client's idle stash under its
//!   lock, then the park back into it; no actor hop. deadpool (`get` +
//!   drop, no-op `recycle`) and bb8 (`get` + drop, no-op `is_valid`) are
//!   the baselines. At 256 tasks the engine has no row: a checkout that
//!   finds nothing idle waits in the epoch actor's queue for the client,
//!   by tenant rotation (a hop per checkout, not a pool's hand-off), and
//!   the wait for capacity belongs to admission — see the next group.
//! - `admitted/*`: what one guest call pays to get a connection when the
//!   provider admits 16 running requests at a time: the engine's
//!   admit → dispatch → start → checkout → park → release, against deadpool
//!   and bb8 behind a 16-permit `tokio::sync::Semaphore` (acquire → get →
//!   drop → release), the unfair admission a hand-rolled stack would use.
//!
//! Run with `cargo bench --locked --bench checkout`.

mod support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use provider_pools::{DialError, DialErrorKind, DialTarget, Dialer, Limits};
use support::{run_tasks, share, Engine};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Connections each pool may hold.
const POOL: u32 = 16;

/// Concurrent tasks of each benchmark.
const CONCURRENCY: [usize; 3] = [1, 16, 256];

/// A loopback listener that accepts every connection and keeps it open.
async fn origin() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    support::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    addr
}

async fn connect(addr: SocketAddr) -> Result<TcpStream, std::io::Error> {
    TcpStream::connect(addr).await
}

/// The engine's dialer: one loopback TCP connection per dial.
#[derive(Clone)]
struct TcpDialer {
    addr: SocketAddr,
    dials: Arc<AtomicUsize>,
}

impl Dialer for TcpDialer {
    type Conn = TcpStream;

    async fn dial(&self, _: DialTarget<'_>) -> Result<TcpStream, DialError> {
        self.dials.fetch_add(1, Ordering::Relaxed);
        connect(self.addr)
            .await
            .map_err(|e| DialError::new(DialErrorKind::Refused, e.to_string()))
    }
}

/// deadpool's manager for the same resource; `recycle` does nothing.
struct DeadpoolManager {
    addr: SocketAddr,
}

impl deadpool::managed::Manager for DeadpoolManager {
    type Type = TcpStream;
    type Error = std::io::Error;

    async fn create(&self) -> Result<TcpStream, std::io::Error> {
        connect(self.addr).await
    }

    async fn recycle(
        &self,
        _: &mut TcpStream,
        _: &deadpool::managed::Metrics,
    ) -> deadpool::managed::RecycleResult<std::io::Error> {
        Ok(())
    }
}

type Deadpool = deadpool::managed::Pool<DeadpoolManager>;

/// bb8's manager for the same resource; `is_valid` does nothing.
struct Bb8Manager {
    addr: SocketAddr,
}

impl bb8::ManageConnection for Bb8Manager {
    type Connection = TcpStream;
    type Error = std::io::Error;

    async fn connect(&self) -> Result<TcpStream, std::io::Error> {
        connect(self.addr).await
    }

    async fn is_valid(&self, _: &mut TcpStream) -> Result<(), std::io::Error> {
        Ok(())
    }

    fn has_broken(&self, _: &mut TcpStream) -> bool {
        false
    }
}

type Bb8 = bb8::Pool<Bb8Manager>;

/// The three pools, each filled with [`POOL`] idle connections.
struct Pools {
    engine: Arc<Engine>,
    dialer: Arc<TcpDialer>,
    deadpool: Deadpool,
    bb8: Bb8,
}

fn limits() -> Limits {
    Limits {
        connections: POOL,
        connections_per_client: POOL,
        // One tenant stands for every caller here.
        connections_per_tenant: POOL,
        idle_connections: POOL,
        // 16 running requests at a time; everyone else queues.
        running_per_tenant: POOL,
        running_per_provider: POOL,
        pending_requests: 1_024,
        requests_per_tenant: 1_024,
        requests_per_provider: 1_024,
        queue_age: Duration::from_secs(60),
        idle_age: Duration::from_secs(3_600),
        ..Limits::DEFAULT
    }
}

async fn pools() -> Pools {
    let addr = origin().await;
    let engine = Arc::new(Engine::start(limits(), &addr.to_string()).await);
    let dialer = Arc::new(TcpDialer {
        addr,
        dials: Arc::new(AtomicUsize::new(0)),
    });
    let deadpool = Deadpool::builder(DeadpoolManager { addr })
        .max_size(POOL as usize)
        .build()
        .expect("deadpool");
    let bb8 = Bb8::builder()
        .max_size(POOL)
        .build(Bb8Manager { addr })
        .await
        .expect("bb8");

    // Fill each pool: hold POOL connections at once, then return them all.
    let mut requests = Vec::new();
    let mut conns = Vec::new();
    for _ in 0..POOL {
        let running = engine.running().await;
        let conn = engine
            .pools
            .reserve_connection(&running, dialer.as_ref())
            .await
            .expect("dial");
        conns.push(conn);
        requests.push(running);
    }
    conns.into_iter().for_each(|conn| conn.park());
    drop(requests);
    let objects: Vec<_> = futures_get(&deadpool).await;
    drop(objects);
    let mut held = Vec::new();
    for _ in 0..POOL {
        held.push(bb8.get_owned().await.expect("bb8 connection"));
    }
    drop(held);
    Pools {
        engine,
        dialer,
        deadpool,
        bb8,
    }
}

async fn futures_get(pool: &Deadpool) -> Vec<deadpool::managed::Object<DeadpoolManager>> {
    let mut objects = Vec::new();
    for _ in 0..POOL {
        objects.push(pool.get().await.expect("deadpool object"));
    }
    objects
}

/// `iters` checkout + park cycles over `tasks` tasks, each holding one
/// running request admitted before the timer starts.
async fn engine_held(p: &Pools, tasks: usize, iters: u64) -> Duration {
    let mut requests = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        requests.push(p.engine.running().await);
    }
    let start = Instant::now();
    let mut requests = requests.into_iter();
    run_tasks(tasks, |i| {
        let (engine, dialer) = (Arc::clone(&p.engine), Arc::clone(&p.dialer));
        let running = requests.next().expect("one request per task");
        async move {
            for _ in 0..share(iters, tasks, i) {
                let conn = engine
                    .pools
                    .reserve_connection(&running, dialer.as_ref())
                    .await
                    .expect("idle connection");
                conn.park();
            }
        }
    })
    .await;
    start.elapsed()
}

/// `iters` admit → checkout → park → release cycles over `tasks` tasks.
async fn engine_admitted(p: &Pools, tasks: usize, iters: u64) -> Duration {
    let start = Instant::now();
    run_tasks(tasks, |i| {
        let (engine, dialer) = (Arc::clone(&p.engine), Arc::clone(&p.dialer));
        async move {
            for _ in 0..share(iters, tasks, i) {
                let running = engine.running().await;
                let conn = engine
                    .pools
                    .reserve_connection(&running, dialer.as_ref())
                    .await
                    .expect("idle connection");
                conn.park();
            }
        }
    })
    .await;
    start.elapsed()
}

/// The baselines' admission: a permit from `admission` when there is one.
async fn admit(admission: Option<&Arc<Semaphore>>) -> Option<OwnedSemaphorePermit> {
    match admission {
        Some(s) => Some(Arc::clone(s).acquire_owned().await.expect("open")),
        None => None,
    }
}

async fn deadpool_loop(
    pool: &Deadpool,
    admission: Option<&Arc<Semaphore>>,
    tasks: usize,
    iters: u64,
) -> Duration {
    let start = Instant::now();
    run_tasks(tasks, |i| {
        let pool = pool.clone();
        let admission = admission.cloned();
        async move {
            for _ in 0..share(iters, tasks, i) {
                let permit = admit(admission.as_ref()).await;
                drop(pool.get().await.expect("deadpool object"));
                drop(permit);
            }
        }
    })
    .await;
    start.elapsed()
}

async fn bb8_loop(
    pool: &Bb8,
    admission: Option<&Arc<Semaphore>>,
    tasks: usize,
    iters: u64,
) -> Duration {
    let start = Instant::now();
    run_tasks(tasks, |i| {
        let pool = pool.clone();
        let admission = admission.cloned();
        async move {
            for _ in 0..share(iters, tasks, i) {
                let permit = admit(admission.as_ref()).await;
                drop(pool.get().await.expect("bb8 connection"));
                drop(permit);
            }
        }
    })
    .await;
    start.elapsed()
}

fn checkout(c: &mut Criterion) {
    let runtime = support::runtime();
    let p = runtime.block_on(pools());
    let admission = Arc::new(Semaphore::new(POOL as usize));

    let mut group = c.benchmark_group("checkout");
    group.throughput(Throughput::Elements(1));
    for tasks in CONCURRENCY {
        if tasks <= POOL as usize {
            group.bench_with_input(BenchmarkId::new("engine", tasks), &tasks, |b, &n| {
                b.to_async(&runtime)
                    .iter_custom(|iters| engine_held(&p, n, iters))
            });
        }
        group.bench_with_input(BenchmarkId::new("deadpool", tasks), &tasks, |b, &n| {
            b.to_async(&runtime)
                .iter_custom(|iters| deadpool_loop(&p.deadpool, None, n, iters))
        });
        group.bench_with_input(BenchmarkId::new("bb8", tasks), &tasks, |b, &n| {
            b.to_async(&runtime)
                .iter_custom(|iters| bb8_loop(&p.bb8, None, n, iters))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("admitted");
    group.throughput(Throughput::Elements(1));
    for tasks in CONCURRENCY {
        group.bench_with_input(BenchmarkId::new("engine", tasks), &tasks, |b, &n| {
            b.to_async(&runtime)
                .iter_custom(|iters| engine_admitted(&p, n, iters))
        });
        group.bench_with_input(BenchmarkId::new("deadpool", tasks), &tasks, |b, &n| {
            b.to_async(&runtime)
                .iter_custom(|iters| deadpool_loop(&p.deadpool, Some(&admission), n, iters))
        });
        group.bench_with_input(BenchmarkId::new("bb8", tasks), &tasks, |b, &n| {
            b.to_async(&runtime)
                .iter_custom(|iters| bb8_loop(&p.bb8, Some(&admission), n, iters))
        });
    }
    group.finish();

    // Every engine checkout found an idle connection: nothing was dialed
    // after the fill.
    println!(
        "checkout: engine dials {} (the fill: {POOL}); deadpool size {}, bb8 connections {}",
        p.dialer.dials.load(Ordering::Relaxed),
        p.deadpool.status().size,
        p.bb8.state().connections,
    );
}

criterion_group!(benches, checkout);
criterion_main!(benches);
