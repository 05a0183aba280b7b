//! Admission end to end, against the limiters a runtime author would
//! otherwise write, measured in the same run.
//!
//! The limiters compared:
//!
//! - the engine: stage input, `admit` (granted at once when capacity is
//!   free and nobody waits, else queued until a release grants it),
//!   `dispatch`, `start`, drop (the release);
//! - `semaphore_baseline`: `tokio::sync::Semaphore::acquire` + drop — the
//!   unfair floor: no tenant, no queue order beyond arrival, no accounting;
//! - `fifo_mutex_baseline`: a hand-rolled fair-FIFO limiter,
//!   `Mutex<(permits, VecDeque<oneshot>)>`, acquire + drop;
//! - `mea_fair_share_baseline`: mea 0.6's `admission::FairShare` keyed by
//!   `TenantId` (the nearest published fair peer: a permit goes to the key
//!   holding the fewest, hand-off under one mutex), `acquire(tenant)` + drop;
//! - `owner_task_floor`: the least a single-owner design pays — one task
//!   owns the permits and a FIFO of waiters; an acquire is a message with a
//!   oneshot to answer, a release a second message. No tenant, no ceiling,
//!   no accounting: the cost of the hops alone.
//!
//! The rows, by group:
//!
//! - `admission/admit_start_drop`: one caller, one tenant, one provider.
//! - `admission/semaphore_baseline`, `admission/fifo_mutex_baseline`,
//!   `admission/mea_fair_share_baseline`: the same lone caller through each
//!   baseline (64 permits; mea keyed by that one tenant).
//! - `admission_1024/admit_start_drop`: the same round trip from 1,024
//!   concurrent tasks spread over 64 tenants × 8 providers, with 64 running
//!   requests node-wide (4 per tenant, 16 per provider), so most tasks wait
//!   in the scheduler's queue.
//! - `admission_1024/semaphore_baseline`, `admission_1024/fifo_mutex_baseline`,
//!   `admission_1024/owner_task_floor`: the same 1,024 tasks on 64 permits.
//! - `admission_1024/mea_fair_share_baseline`: the same 1,024 tasks on 64
//!   permits, keyed by the same 64 tenants.
//!
//! How cost grows with the spread of keys: two more shapes of the same
//! loaded cycle (1,024 tasks, 64 running node-wide, the node-wide ceiling the
//! one that binds), each group with the mea and semaphore baselines of the
//! same run beside the engine, to read against `admission_1024`:
//!
//! - `admission_1024_own_tenant/{admit_start_drop, mea_fair_share_baseline,
//!   semaphore_baseline}`: 1,024 tenants × 1 provider, one task (so one
//!   waiter) per tenant; 64 running per provider.
//! - `admission_1024_one_tenant/{admit_start_drop, mea_fair_share_baseline,
//!   semaphore_baseline}`: 1 tenant × 1 provider, all 1,024 tasks; 64
//!   running for the tenant and the provider.
//!
//! Who actually waits: in these groups every limiter drops its permit (or
//! running request) as soon as it has it. An engine `admit` or an
//! `acquire` of the semaphore, the FIFO mutex or mea that finds capacity
//! free and nobody waiting is granted without yielding, so a task runs
//! cycle after cycle while the other worker does the same, few permits
//! are held at once and the queues stay nearly empty: those rows read a
//! cross-core hand-off, not 1,024 waiters.
//!
//! - `admission_1024_held/*`, `admission_1024_own_tenant_held/*`,
//!   `admission_1024_one_tenant_held/*`: the three shapes' rows again, each
//!   cycle holding its permit (or running request) across one
//!   `tokio::task::yield_now` before dropping it, so 64 are held and the
//!   rest wait in every limiter's queue; every row pays the same yield.
//!
//! What a provider's rate costs on the admission path, in one run:
//!
//! - `admission_rate/no_rate`: the `admission_1024` cycle (64 tenants × 8
//!   providers) on a registry whose providers have no rate;
//! - `admission_rate/rate_never_binding`: the same cycle on a second
//!   registry whose 8 providers each have a rate of 10⁹ a second with a
//!   burst of 10⁶, which never binds: every check and every grant pays the
//!   rate's bookkeeping, and nothing waits for a token.
//!
//! What the fairness policies cost on the admission path, in one run:
//!
//! - `admission_fairness/{rotation, rotation_weighted, least_held}`: the
//!   `admission_1024_held` cycle (64 tenants × 8 providers, each running
//!   request held across one yield so that the rest wait) on three
//!   registries: the default rotation with every weight 1, the rotation
//!   with the 64 tenants at weights 1, 2 and 4 in turn, and
//!   `Fairness::LeastHeld` with the same weights;
//! - `admission_fairness/classes`: the default rotation with the tasks'
//!   plans spread over the three priority classes in turn (task i in
//!   `Priority::ALL[i % 3]`), under the default minimum shares.
//!
//! The concurrent rows time `1,024 × rounds` completed cycles and report
//! total time / completed cycles (`iter_custom`). Everything runs on a
//! 2-worker runtime.
//!
//! Run with `cargo bench --locked --bench admission`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use provider_pools::{
    AdmitError, AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, Epoch, ExecutionPlan,
    Fairness, Installation, LedgerId, Limits, OriginKind, OriginSlot, PolicyTable, PoolsConfig,
    Priority, ProviderConfig, ProviderId, ProviderPools, RateLimit, ServiceName, SessionId,
    TenantId, TypedSlot,
};
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;
use tokio::time::Instant;

#[path = "admission/baselines.rs"]
mod baselines;

use baselines::{Bare, FifoLimiter, MeaFairShare, OwnerTask};

/// Concurrent tasks in the loaded rows.
const TASKS: usize = 1024;
/// Running requests node-wide, and the baselines' permits.
const RUNNING: u32 = 64;

/// How the loaded rows' tasks are spread over tenants and providers, and
/// the running ceilings per tenant and per provider.
#[derive(Clone, Copy)]
struct Shape {
    group: &'static str,
    tenants: usize,
    providers: usize,
    running_per_tenant: u32,
    running_per_provider: u32,
}

/// 64 tenants × 8 providers: the loaded rows of record.
const SPREAD: Shape = Shape {
    group: "admission_1024",
    tenants: 64,
    providers: 8,
    running_per_tenant: 4,
    running_per_provider: 16,
};

/// 1,024 tenants with one task each, on one provider.
const OWN_TENANT: Shape = Shape {
    group: "admission_1024_own_tenant",
    tenants: TASKS,
    providers: 1,
    running_per_tenant: 4,
    running_per_provider: RUNNING,
};

/// Every task for one tenant on one provider.
const ONE_TENANT: Shape = Shape {
    group: "admission_1024_one_tenant",
    tenants: 1,
    providers: 1,
    running_per_tenant: RUNNING,
    running_per_provider: RUNNING,
};
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
    fixture_under(runtime, limits, tenants, providers, Fairness::Rotation).await
}

/// [`fixture`] under the fairness policy `fairness`.
async fn fixture_under(
    runtime: &Runtime,
    limits: Limits,
    tenants: usize,
    providers: usize,
    fairness: Fairness,
) -> Fixture {
    let mut config = PoolsConfig::new(runtime.handle().clone(), BrokerGeneration::new());
    config.limits = limits;
    config.fairness = fairness;
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

/// The limits of the loaded rows: 1,024 may wait, 64 may run, with
/// `shape`'s running ceilings per tenant and per provider.
fn loaded_limits(shape: Shape) -> Limits {
    Limits {
        pending_requests: 1024,
        requests_per_tenant: 1024,
        requests_per_provider: 1024,
        running_requests: RUNNING,
        running_per_tenant: shape.running_per_tenant,
        running_per_provider: shape.running_per_provider,
        // Nothing in a sample should time out, however slow the machine.
        queue_age: Duration::from_secs(60),
        ..Limits::DEFAULT
    }
}

/// stage → admit → dispatch → start → drop, for `route` in class `class`.
async fn round_trip(f: &Fixture, route: &Route, class: Priority, hold: Hold) {
    let far = Instant::now() + Duration::from_secs(60);
    let plan = ExecutionPlan::seal(
        route.tenant.clone(),
        SessionId::new(1),
        LedgerId::new(1),
        far,
        far,
    )
    .with_priority(class);
    // Refused busy (the queue's owner has as many operations left for it
    // as it takes), nothing was queued: retried after a yield, as a
    // caller would, and the retry counts in the cycle's time.
    let ready = loop {
        let input = f
            .pools
            .stage_input(&plan, Bytes::from_static(b"bench"))
            .expect("input");
        let admitted = f
            .pools
            .admit(AdmitRequest {
                plan: plan.clone(),
                provider: route.provider.clone(),
                slot: route.slot,
                kind: OriginKind::Http,
                input,
            })
            .await;
        match admitted {
            Err(AdmitError::Busy) => tokio::task::yield_now().await,
            answer => break answer.expect("admitted"),
        }
    };
    let call = f
        .pools
        .dispatch(&f.policy, &plan, &route.provider)
        .expect("dispatch");
    let running = ready.start(call).expect("start");
    hold.keep().await;
    drop(running);
}

/// Whether a cycle holds its permit across one yield to the runtime
/// before dropping it.
#[derive(Clone, Copy)]
enum Hold {
    /// Dropped as soon as it is granted.
    Release,
    /// Held across one `yield_now`, so other tasks run while it is held.
    AcrossYield,
}

impl Hold {
    /// Called with the permit held.
    async fn keep(self) {
        if let Hold::AcrossYield = self {
            tokio::task::yield_now().await;
        }
    }
}

/// One cycle of a loaded row, run by each of the `TASKS` tasks in turn.
trait Cycle: Send + Sync + 'static {
    fn cycle(&self, task: usize, hold: Hold) -> impl Future<Output = ()> + Send;
}

struct Admissions {
    fixture: Fixture,
    shape: Shape,
    /// Task i's plans in `Priority::ALL[i % 3]`, else all interactive.
    classes: bool,
}

impl Cycle for Admissions {
    async fn cycle(&self, task: usize, hold: Hold) {
        // Task i admits as tenant i mod T on provider (i / T) mod P; the
        // routes are tenant-major.
        let Shape {
            tenants, providers, ..
        } = self.shape;
        let route = (task % tenants) * providers + task / tenants % providers;
        let class = if self.classes {
            Priority::ALL[task % Priority::ALL.len()]
        } else {
            Priority::default()
        };
        round_trip(&self.fixture, &self.fixture.routes[route], class, hold).await;
    }
}

/// Runs `TASKS` tasks that each complete enough cycles for `iters` cycles
/// in all, and returns the time `iters` cycles took at the loaded rate
/// (total time / completed cycles × `iters`).
fn loaded<C: Cycle>(runtime: &Runtime, iters: u64, limiter: &Arc<C>, hold: Hold) -> Duration {
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
                    limiter.cycle(task, hold).await;
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
    let semaphore = Semaphore::new(RUNNING as usize);
    let fifo = FifoLimiter::new(RUNNING);
    let mea = MeaFairShare::new(RUNNING, 1);

    let mut group = c.benchmark_group("admission");
    group.bench_function("admit_start_drop", |b| {
        b.to_async(&runtime)
            .iter(|| round_trip(&fixture, &route, Priority::default(), Hold::Release))
    });
    group.bench_function("semaphore_baseline", |b| {
        b.to_async(&runtime)
            .iter(|| async { drop(semaphore.acquire().await.expect("open semaphore")) })
    });
    group.bench_function("fifo_mutex_baseline", |b| {
        b.to_async(&runtime).iter(|| fifo.cycle(0, Hold::Release))
    });
    group.bench_function("mea_fair_share_baseline", |b| {
        b.to_async(&runtime).iter(|| mea.cycle(0, Hold::Release))
    });
    group.finish();
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// The engine's loaded cycle in `shape`, with the mea and semaphore
/// baselines beside it, each holding its permit as `hold` says (the group's
/// name gains `_held` when held across a yield); `extra` adds rows to the
/// same group.
fn loaded_group(
    c: &mut Criterion,
    shape: Shape,
    hold: Hold,
    extra: impl FnOnce(&Runtime, &mut Group<'_>, Hold),
) {
    let runtime = runtime();
    let fixture = runtime.block_on(fixture(
        &runtime,
        loaded_limits(shape),
        shape.tenants,
        shape.providers,
    ));
    let admissions = Arc::new(Admissions {
        fixture,
        shape,
        classes: false,
    });
    let bare = Arc::new(Bare(Semaphore::new(RUNNING as usize)));
    let mea = Arc::new(MeaFairShare::new(RUNNING, shape.tenants));

    let mut group = c.benchmark_group(match hold {
        Hold::Release => shape.group.to_string(),
        Hold::AcrossYield => format!("{}_held", shape.group),
    });
    group.bench_function("admit_start_drop", |b| {
        b.iter_custom(|iters| loaded(&runtime, iters, &admissions, hold))
    });
    group.bench_function("semaphore_baseline", |b| {
        b.iter_custom(|iters| loaded(&runtime, iters, &bare, hold))
    });
    extra(&runtime, &mut group, hold);
    group.bench_function("mea_fair_share_baseline", |b| {
        b.iter_custom(|iters| loaded(&runtime, iters, &mea, hold))
    });
    group.finish();
}

/// The FIFO-mutex and single-owner rows of the 64 × 8 groups.
fn fifo_and_owner(runtime: &Runtime, group: &mut Group<'_>, hold: Hold) {
    let fifo = Arc::new(FifoLimiter::new(RUNNING));
    let owner = Arc::new(OwnerTask::start(runtime, RUNNING));
    group.bench_function("fifo_mutex_baseline", |b| {
        b.iter_custom(|iters| loaded(runtime, iters, &fifo, hold))
    });
    group.bench_function("owner_task_floor", |b| {
        b.iter_custom(|iters| loaded(runtime, iters, &owner, hold))
    });
}

fn loaded_1024(c: &mut Criterion) {
    loaded_group(c, SPREAD, Hold::Release, fifo_and_owner);
}

/// How cost grows: the same loaded cycle with one waiter per tenant, and
/// with every waiter on one tenant and one provider.
fn key_spread(c: &mut Criterion) {
    loaded_group(c, OWN_TENANT, Hold::Release, |_, _, _| {});
    loaded_group(c, ONE_TENANT, Hold::Release, |_, _, _| {});
}

/// The three shapes again with every permit held across one yield, so
/// that the baselines' queues fill too.
fn held(c: &mut Criterion) {
    loaded_group(c, SPREAD, Hold::AcrossYield, fifo_and_owner);
    loaded_group(c, OWN_TENANT, Hold::AcrossYield, |_, _, _| {});
    loaded_group(c, ONE_TENANT, Hold::AcrossYield, |_, _, _| {});
}

/// The 64 × 8 cycle without and with a rate that never binds.
fn rate_cost(c: &mut Criterion) {
    let runtime = runtime();
    let plain = |runtime: &Runtime| {
        let fixture = runtime.block_on(fixture(
            runtime,
            loaded_limits(SPREAD),
            SPREAD.tenants,
            SPREAD.providers,
        ));
        Arc::new(Admissions {
            fixture,
            shape: SPREAD,
            classes: false,
        })
    };
    let unrated = plain(&runtime);
    let rated = plain(&runtime);
    let never_binding = RateLimit::new(1_000_000_000, Duration::from_secs(1), 1_000_000);
    for p in 0..SPREAD.providers {
        let provider = ProviderId::new(format!("bench-{p}")).expect("provider");
        (rated.fixture.pools)
            .configure_provider_rate(&provider, never_binding)
            .expect("a first rate");
    }
    let mut group = c.benchmark_group("admission_rate");
    group.bench_function("no_rate", |b| {
        b.iter_custom(|iters| loaded(&runtime, iters, &unrated, Hold::Release))
    });
    group.bench_function("rate_never_binding", |b| {
        b.iter_custom(|iters| loaded(&runtime, iters, &rated, Hold::Release))
    });
    group.finish();
}

/// The 64 × 8 held cycle under the rotation, the weighted rotation and
/// the least-held policy.
fn fairness_cost(c: &mut Criterion) {
    let runtime = runtime();
    let under = |fairness: Fairness, weighted: bool, classes: bool| {
        let fixture = runtime.block_on(fixture_under(
            &runtime,
            loaded_limits(SPREAD),
            SPREAD.tenants,
            SPREAD.providers,
            fairness,
        ));
        for t in (0..SPREAD.tenants).filter(|_| weighted) {
            let tenant = TenantId::new(format!("tenant-{t}")).expect("tenant");
            let weight = [1, 2, 4][t % 3];
            (fixture.pools)
                .set_tenant_weight(&tenant, weight)
                .expect("a weight");
        }
        Arc::new(Admissions {
            fixture,
            shape: SPREAD,
            classes,
        })
    };
    let rotation = under(Fairness::Rotation, false, false);
    let weighted = under(Fairness::Rotation, true, false);
    let least_held = under(Fairness::LeastHeld, true, false);
    let classes = under(Fairness::Rotation, false, true);
    let mut group = c.benchmark_group("admission_fairness");
    for (name, limiter) in [
        ("rotation", &rotation),
        ("rotation_weighted", &weighted),
        ("least_held", &least_held),
        ("classes", &classes),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| loaded(&runtime, iters, limiter, Hold::AcrossYield))
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    lone_caller,
    loaded_1024,
    key_spread,
    held,
    rate_cost,
    fairness_cost
);
criterion_main!(benches);
