//! Admission end to end, against the limiters a runtime author would
//! otherwise write, measured in the same run.
//!
//! - `admission/admit_start_drop`: one caller, one tenant: stage input,
//!   `admit` (one hop to the scheduler and its answer), `dispatch`, `start`,
//!   drop (the release hop).
//! - `admission/semaphore_baseline`: `Semaphore::acquire` + drop from the same
//!   lone caller.
//! - `admission_1024/admit_start_drop`: the same round trip from 1,024
//!   concurrent tasks spread over 64 tenants × 8 providers, with 64 running
//!   requests node-wide, so most tasks wait in the scheduler's queue.
//! - `admission_1024/semaphore_baseline`: `Semaphore::acquire` + drop from
//!   the same 1,024 tasks on 64 permits — the unfair floor: no tenant, no
//!   queue order beyond arrival, no accounting.
//! - `admission_1024/fifo_mutex_baseline`: the same cycle through a
//!   hand-rolled fair-FIFO limiter, `Mutex<(permits, VecDeque<oneshot>)>`,
//!   with 64 permits.
//! - `admission_1024/owner_task_floor`: the same cycle through the least a
//!   single-owner design pays — one task owns 64 permits and a FIFO of
//!   waiters; an acquire is a message with a oneshot to answer, a release a
//!   second message. No tenant, no ceiling, no accounting: the cost of the
//!   hops alone, for reading the admission row against.
//!
//! The concurrent rows time `1,024 × rounds` completed cycles and report
//! total time / completed cycles (`iter_custom`). Everything runs on a
//! 2-worker runtime.
//!
//! Run with `cargo bench --locked --bench admission`.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use provider_pools::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, Epoch, ExecutionPlan,
    Installation, LedgerId, Limits, OriginKind, OriginSlot, PolicyTable, PoolsConfig,
    ProviderConfig, ProviderId, ProviderPools, ServiceName, SessionId, TenantId, TypedSlot,
};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::Instant;

/// Concurrent tasks in the loaded rows.
const TASKS: usize = 1024;
/// Tenants and logical providers the tasks are spread over.
const TENANTS: usize = 64;
const PROVIDERS: usize = 8;
/// Running requests node-wide, and the baselines' permits.
const RUNNING: u32 = 64;
/// Each task completes at least this many cycles per sample, so that the
/// start and the tail of a sample stay small beside the loaded middle.
const MIN_ROUNDS: u64 = 16;

/// One (tenant, provider) a task admits for.
#[derive(Clone)]
struct Route {
    tenant: TenantId,
    provider: ProviderId,
    slot: TypedSlot,
}

struct Fixture {
    pools: ProviderPools,
    policy: PolicyTable,
    routes: Vec<Route>,
}

/// A registry with `providers` providers (one HTTP origin each) and
/// `tenants` tenants allowed to call every one of them.
async fn fixture(runtime: &Runtime, limits: Limits, tenants: usize, providers: usize) -> Fixture {
    let mut config = PoolsConfig::new(runtime.handle().clone(), BrokerGeneration::new());
    config.limits = limits;
    let pools = ProviderPools::start(config).await.expect("registry starts");
    let mut installed = Vec::new();
    for p in 0..providers {
        let provider = ProviderId::new(format!("bench-{p}")).expect("provider");
        let receipt = pools
            .install(Installation {
                provider: provider.clone(),
                authority: Authority::new("http://127.0.0.1").expect("authority"),
                expected: Epoch::ZERO,
                credential: Credential::from_slice(b"bench").expect("credential"),
                config: ProviderConfig::new(ServiceName::new(format!("bench-{p}")).expect("svc"))
                    .with_origin(OriginSlot::new(0), OriginKind::Http, "http://127.0.0.1:1"),
            })
            .await
            .expect("install");
        installed.push((provider, receipt.slots[0]));
    }
    let policy = PolicyTable::new();
    let mut routes = Vec::new();
    for t in 0..tenants {
        let tenant = TenantId::new(format!("tenant-{t}")).expect("tenant");
        for (provider, slot) in &installed {
            policy.allow(tenant.clone(), provider.clone());
            routes.push(Route {
                tenant: tenant.clone(),
                provider: provider.clone(),
                slot: *slot,
            });
        }
    }
    Fixture {
        pools,
        policy,
        routes,
    }
}

/// The limits of the loaded rows: 1,024 may wait, 64 may run.
fn loaded_limits() -> Limits {
    Limits {
        pending_requests: 1024,
        requests_per_tenant: 1024,
        requests_per_provider: 1024,
        running_requests: RUNNING,
        running_per_tenant: 4,
        running_per_provider: 16,
        // Nothing in a sample should time out, however slow the machine.
        queue_age: Duration::from_secs(60),
        ..Limits::DEFAULT
    }
}

/// stage → admit → dispatch → start → drop, for `route`.
async fn round_trip(f: &Fixture, route: &Route) {
    let far = Instant::now() + Duration::from_secs(60);
    let plan = ExecutionPlan::seal(
        route.tenant.clone(),
        SessionId::new(1),
        LedgerId::new(1),
        far,
        far,
    );
    let input = f
        .pools
        .stage_input(&plan, Bytes::from_static(b"bench"))
        .expect("input");
    let ready = f
        .pools
        .admit(AdmitRequest {
            plan: plan.clone(),
            provider: route.provider.clone(),
            slot: route.slot,
            kind: OriginKind::Http,
            input,
        })
        .await
        .expect("admitted");
    let call = f
        .pools
        .dispatch(&f.policy, &plan, &route.provider)
        .expect("dispatch");
    drop(ready.start(call).expect("start"));
}

/// A fair-FIFO limiter as a runtime author would hand-roll it: permits and
/// a queue of parked waiters behind one mutex; a release hands its permit
/// straight to the oldest waiter.
struct FifoLimiter {
    state: Mutex<FifoState>,
}

struct FifoState {
    permits: u32,
    waiters: VecDeque<oneshot::Sender<()>>,
}

struct FifoPermit<'a>(&'a FifoLimiter);

impl FifoLimiter {
    fn new(permits: u32) -> Self {
        Self {
            state: Mutex::new(FifoState {
                permits,
                waiters: VecDeque::new(),
            }),
        }
    }

    async fn acquire(&self) -> FifoPermit<'_> {
        let wait = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.permits > 0 {
                state.permits -= 1;
                None
            } else {
                let (tx, rx) = oneshot::channel();
                state.waiters.push_back(tx);
                Some(rx)
            }
        };
        if let Some(rx) = wait {
            rx.await.expect("a release hands the permit over");
        }
        FifoPermit(self)
    }
}

impl Drop for FifoPermit<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(waiter) = state.waiters.pop_front() {
            if waiter.send(()).is_ok() {
                return;
            }
        }
        state.permits += 1;
    }
}

/// One cycle of a loaded row, run by each of the `TASKS` tasks in turn.
trait Cycle: Send + Sync + 'static {
    fn cycle(&self, task: usize) -> impl Future<Output = ()> + Send;
}

struct Admissions(Fixture);

impl Cycle for Admissions {
    async fn cycle(&self, task: usize) {
        // Task i admits as tenant i mod 64 on provider (i / 64) mod 8.
        let route = (task % TENANTS) * PROVIDERS + task / TENANTS % PROVIDERS;
        round_trip(&self.0, &self.0.routes[route]).await;
    }
}

struct Bare(Semaphore);

impl Cycle for Bare {
    async fn cycle(&self, _task: usize) {
        drop(self.0.acquire().await.expect("open semaphore"));
    }
}

impl Cycle for FifoLimiter {
    async fn cycle(&self, _task: usize) {
        drop(self.acquire().await);
    }
}

/// The single-owner floor: one task owns the permits and a FIFO of
/// waiters, and is reached only by messages.
struct OwnerTask {
    requests: mpsc::UnboundedSender<Request>,
}

enum Request {
    Acquire(oneshot::Sender<()>),
    Release,
}

impl OwnerTask {
    fn start(runtime: &Runtime, permits: u32) -> Self {
        let (requests, mut inbox) = mpsc::unbounded_channel();
        // A benchmark fixture, not library code: it runs until the sender
        // side is dropped with the fixture.
        #[allow(clippy::disallowed_methods)]
        runtime.spawn(async move {
            let (mut free, mut waiters) = (permits, VecDeque::new());
            let mut batch = Vec::with_capacity(256);
            while inbox.recv_many(&mut batch, 256).await > 0 {
                for request in batch.drain(..) {
                    match request {
                        Request::Acquire(waiter) if free > 0 => {
                            free -= 1;
                            let _ = waiter.send(());
                        }
                        Request::Acquire(waiter) => waiters.push_back(waiter),
                        Request::Release => match waiters.pop_front() {
                            Some(waiter) => {
                                let _ = waiter.send(());
                            }
                            None => free += 1,
                        },
                    }
                }
            }
        });
        Self { requests }
    }
}

impl Cycle for OwnerTask {
    async fn cycle(&self, _task: usize) {
        let (tx, rx) = oneshot::channel();
        self.requests
            .send(Request::Acquire(tx))
            .expect("owner running");
        rx.await.expect("owner answers");
        self.requests.send(Request::Release).expect("owner running");
    }
}

/// Runs `TASKS` tasks that each complete enough cycles for `iters` cycles
/// in all, and returns the time `iters` cycles took at the loaded rate
/// (total time / completed cycles × `iters`).
fn loaded<C: Cycle>(runtime: &Runtime, iters: u64, limiter: &Arc<C>) -> Duration {
    let rounds = iters.div_ceil(TASKS as u64).max(MIN_ROUNDS);
    let completed = rounds * TASKS as u64;
    let limiter = Arc::clone(limiter);
    let elapsed = runtime.block_on(async move {
        // Tasks park on the gate first, so spawning is not timed.
        let gate = Arc::new(Semaphore::new(0));
        let mut tasks = Vec::with_capacity(TASKS);
        for task in 0..TASKS {
            let (gate, limiter) = (Arc::clone(&gate), Arc::clone(&limiter));
            // A benchmark driver, not library code: it keeps every handle.
            #[allow(clippy::disallowed_methods)]
            tasks.push(tokio::spawn(async move {
                gate.acquire().await.expect("open gate").forget();
                for _ in 0..rounds {
                    limiter.cycle(task).await;
                }
            }));
        }
        let start = Instant::now();
        gate.add_permits(TASKS);
        for task in tasks {
            task.await.expect("every cycle succeeds");
        }
        start.elapsed()
    });
    elapsed.mul_f64(iters as f64 / completed as f64)
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn lone_caller(c: &mut Criterion) {
    let runtime = runtime();
    let fixture = runtime.block_on(fixture(&runtime, Limits::DEFAULT, 1, 1));
    let route = fixture.routes[0].clone();
    let semaphore = Semaphore::new(64);

    let mut group = c.benchmark_group("admission");
    group.bench_function("admit_start_drop", |b| {
        b.to_async(&runtime).iter(|| round_trip(&fixture, &route))
    });
    group.bench_function("semaphore_baseline", |b| {
        b.to_async(&runtime)
            .iter(|| async { drop(semaphore.acquire().await.expect("open semaphore")) })
    });
    group.finish();
}

fn loaded_1024(c: &mut Criterion) {
    let runtime = runtime();
    let fixture = runtime.block_on(fixture(&runtime, loaded_limits(), TENANTS, PROVIDERS));
    let admissions = Arc::new(Admissions(fixture));
    let bare = Arc::new(Bare(Semaphore::new(RUNNING as usize)));
    let fifo = Arc::new(FifoLimiter::new(RUNNING));
    let owner = Arc::new(OwnerTask::start(&runtime, RUNNING));

    let mut group = c.benchmark_group("admission_1024");
    group.bench_function("admit_start_drop", |b| {
        b.iter_custom(|iters| loaded(&runtime, iters, &admissions))
    });
    group.bench_function("semaphore_baseline", |b| {
        b.iter_custom(|iters| loaded(&runtime, iters, &bare))
    });
    group.bench_function("fifo_mutex_baseline", |b| {
        b.iter_custom(|iters| loaded(&runtime, iters, &fifo))
    });
    group.bench_function("owner_task_floor", |b| {
        b.iter_custom(|iters| loaded(&runtime, iters, &owner))
    });
    group.finish();
}

criterion_group!(benches, lone_caller, loaded_1024);
criterion_main!(benches);
