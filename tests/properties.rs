//! The accounting invariant under any interleaving (proptest state machine):
//! after every step every count is within the limit in force for it — the
//! snapshot's totals, and the per-tenant, per-provider and per-client counts
//! the harness attributes to what it holds (see `properties/limits.rs`) —
//! and after every handle is dropped and shutdown completes, the snapshot is
//! all zero and clean.
//!
//! 1,000 cases by default; `PROPTEST_CASES` raises it.

#[path = "properties/limits.rs"]
mod limits;
mod support;

use std::sync::{Arc, Weak};
use std::time::Duration;

use limits::{within_limits, Held, Owner};
use proptest::prelude::*;
use provider_pools::{
    DialError, DialTarget, Dialer, Limits, PoolReady, PooledConnection, ProviderPools,
    RunningRequest,
};
use support::{allow_all, http_config, installation, plan, provider, request, start};
use tokio::task::JoinHandle;

#[derive(Debug, Clone)]
enum Op {
    /// Create provider `p`, or rotate it if installed.
    Install(usize),
    /// Queue a request of tenant `t` on provider `p`.
    Admit(usize, usize),
    /// Drop the `i`-th waiting admission (cancel).
    Cancel(usize),
    /// Start the `i`-th granted request.
    Start(usize),
    /// Drop the `i`-th granted, unstarted request.
    DropReady(usize),
    /// Ask for a connection for the `i`-th running request.
    Checkout(usize),
    /// Park the `i`-th connection.
    Park(usize),
    /// Drop the `i`-th connection.
    DropConn(usize),
    /// Close the `i`-th connection on a cleanup slot; `fail` makes it fail.
    Close(usize, bool),
    /// Destroy a kept failed close.
    DropFailed(usize),
    /// Drop the `i`-th running request.
    DropRunning(usize),
    /// Lower the running, pending and connection ceilings and the idle age.
    Lower(u32),
    /// Let time pass.
    Advance(u64),
    /// Run a provider job that holds the `i`-th running request a while.
    Spawn(usize, u64),
    /// Run blocking work on a worker slot.
    SpawnBlocking,
    /// Retire the pools.
    Retire,
}

/// Providers `p0`, `p1`, `p2`.
const PROVIDERS: usize = 3;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0..PROVIDERS).prop_map(Op::Install),
        6 => (0..4usize, 0..PROVIDERS).prop_map(|(t, p)| Op::Admit(t, p)),
        1 => any::<usize>().prop_map(Op::Cancel),
        4 => any::<usize>().prop_map(Op::Start),
        1 => any::<usize>().prop_map(Op::DropReady),
        8 => any::<usize>().prop_map(Op::Checkout),
        3 => any::<usize>().prop_map(Op::Park),
        2 => any::<usize>().prop_map(Op::DropConn),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(i, fail)| Op::Close(i, fail)),
        1 => any::<usize>().prop_map(Op::DropFailed),
        3 => any::<usize>().prop_map(Op::DropRunning),
        1 => (1..8u32).prop_map(Op::Lower),
        2 => (0..40_000u64).prop_map(Op::Advance),
        2 => (any::<usize>(), 0..10_000u64).prop_map(|(i, ms)| Op::Spawn(i, ms)),
        1 => Just(Op::SpawnBlocking),
        1 => Just(Op::Retire),
    ]
}

#[derive(Clone)]
struct Mem;

/// An in-memory connection whose graceful close succeeds or fails.
struct MemConn {
    closes: bool,
}

impl Dialer for Mem {
    type Conn = MemConn;

    async fn dial(&self, _: DialTarget<'_>) -> Result<MemConn, DialError> {
        Ok(MemConn { closes: true })
    }
}

impl provider_pools::Cleanup for MemConn {
    async fn close(self) -> Result<(), provider_pools::CloseFailure<Self>> {
        if self.closes {
            Ok(())
        } else {
            Err(provider_pools::CloseFailure::new(self, "refused"))
        }
    }
}

/// Small enough that the steps reach them. Two tenants together fill a
/// client's two connections, so a client bound one too large shows. The
/// tenant share (`connections_per_tenant`) equals the client bound here and
/// after every lowering, so its own check is implied by the client's: with
/// a smaller share, a client bound one too large was no longer reached.
const LIMITS: Limits = Limits {
    retained_configurations: 4,
    configured_clients: 8,
    clients_per_provider: 2,
    connections: 6,
    connections_per_client: 2,
    connections_per_tenant: 2,
    idle_connections: 3,
    pending_requests: 8,
    running_requests: 8,
    requests_per_tenant: 4,
    requests_per_provider: 6,
    running_per_tenant: 3,
    running_per_provider: 4,
    provider_workers: 3,
    ..Limits::DEFAULT
};

/// A handle the harness holds, with whose request it is: the tag lives
/// exactly as long as the handle, so the live tags are the requests held.
type Tagged<T> = (T, Arc<Owner>);

/// An admission still waiting, with its tenant and provider.
struct Waiting {
    task: JoinHandle<Result<PoolReady, provider_pools::AdmitError>>,
    tenant: usize,
    provider: usize,
}

struct World {
    receipts: [Option<provider_pools::InstallReceipt>; PROVIDERS],
    waiting: Vec<Waiting>,
    ready: Vec<Tagged<PoolReady>>,
    running: Vec<Tagged<RunningRequest>>,
    conns: Vec<Tagged<PooledConnection<MemConn>>>,
    failed: Vec<provider_pools::CleanupFailed<MemConn>>,
    /// Every granted request's tag, alive while some handle of it is.
    granted: Vec<Weak<Owner>>,
    sessions: u64,
    /// The startup limits, or the last lowering that succeeded.
    in_force: Limits,
}

impl World {
    fn new() -> Self {
        Self {
            receipts: Default::default(),
            waiting: Vec::new(),
            ready: Vec::new(),
            running: Vec::new(),
            conns: Vec::new(),
            failed: Vec::new(),
            granted: Vec::new(),
            sessions: 0,
            in_force: LIMITS,
        }
    }

    /// What the harness holds, attributed to tenants, providers and clients.
    fn held(&mut self) -> Held {
        self.granted.retain(|tag| tag.strong_count() > 0);
        Held {
            waiting: self
                .waiting
                .iter()
                .map(|w| (w.tenant, w.provider))
                .collect(),
            running: self
                .granted
                .iter()
                .filter_map(Weak::upgrade)
                .map(|o| *o)
                .collect(),
            conns: self.conns.iter().map(|(_, owner)| **owner).collect(),
        }
    }
}

async fn let_tasks_run() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

fn pick<T>(items: &mut Vec<T>, i: usize) -> Option<T> {
    (!items.is_empty()).then(|| items.swap_remove(i % items.len()))
}

async fn apply(pools: &ProviderPools, world: &mut World, op: Op) {
    match op {
        Op::Install(p) => {
            let name = format!("p{p}");
            let expected = pools
                .describe(&provider(&name))
                .map_or(0, |d| d.epoch.get());
            let installed = pools
                .install(installation(
                    &provider(&name),
                    expected,
                    b"k",
                    http_config(&name, 2),
                ))
                .await;
            if let Ok(receipt) = installed {
                world.receipts[p] = Some(receipt);
            }
        }
        Op::Admit(t, p) => {
            let Some(receipt) = world.receipts[p].clone() else {
                return;
            };
            world.sessions += 1;
            let plan = plan(&format!("t{t}"), world.sessions);
            let Ok(input) = pools.stage_input(&plan, provider_pools::Bytes::from_static(b"in"))
            else {
                return;
            };
            let mut admit = request(pools, plan, &receipt, b"");
            admit.input = input;
            let pools = pools.clone();
            world.waiting.push(Waiting {
                task: support::task(async move { pools.admit(admit).await }),
                tenant: t,
                provider: p,
            });
        }
        Op::Cancel(i) => {
            if let Some(waiter) = pick(&mut world.waiting, i) {
                waiter.task.abort();
            }
        }
        Op::Start(i) => {
            if let Some((ready, owner)) = pick(&mut world.ready, i) {
                if let Ok(call) = pools.dispatch(&allow_all(), ready.plan(), ready.provider()) {
                    if let Ok(running) = ready.start(call) {
                        world.running.push((running, owner));
                    }
                }
            }
        }
        Op::DropReady(i) => drop(pick(&mut world.ready, i)),
        Op::Checkout(i) => {
            if world.running.is_empty() {
                return;
            }
            let (running, owner) = world.running[i % world.running.len()].clone();
            if let Ok(conn) = pools.reserve_connection(&running, &Mem).await {
                world.conns.push((conn, owner));
            }
        }
        Op::Park(i) => {
            if let Some((conn, _owner)) = pick(&mut world.conns, i) {
                conn.park();
            }
        }
        Op::DropConn(i) => drop(pick(&mut world.conns, i)),
        Op::Close(i, fail) => {
            if let Some((mut conn, _owner)) = pick(&mut world.conns, i) {
                conn.get_mut().closes = !fail;
                if let Ok(ticket) = pools.close_connection(conn) {
                    if let Err(failed) = ticket.outcome().await {
                        world.failed.push(failed);
                    }
                }
            }
        }
        Op::DropFailed(i) => drop(pick(&mut world.failed, i)),
        Op::DropRunning(i) => drop(pick(&mut world.running, i)),
        Op::Lower(n) => {
            let (running, pending) = (
                n.min(LIMITS.running_requests),
                (n + 2).min(LIMITS.pending_requests),
            );
            let per_client = n.min(LIMITS.connections_per_client);
            let lowered = Limits {
                running_requests: running,
                running_per_tenant: LIMITS.running_per_tenant.min(running),
                running_per_provider: LIMITS.running_per_provider.min(running),
                pending_requests: pending,
                requests_per_tenant: LIMITS.requests_per_tenant.min(pending),
                requests_per_provider: LIMITS.requests_per_provider.min(pending),
                // Never below the idle bound, which stays.
                connections: (n + LIMITS.idle_connections).min(LIMITS.connections),
                connections_per_client: per_client,
                connections_per_tenant: LIMITS.connections_per_tenant.min(per_client),
                idle_age: Duration::from_secs(u64::from(n) * 3),
                ..LIMITS
            };
            if pools.lower_limits(lowered).await.is_ok() {
                world.in_force = lowered;
            }
        }
        Op::Advance(ms) => tokio::time::advance(Duration::from_millis(ms)).await,
        Op::Spawn(i, ms) => {
            // The job holds the request and its tag, and drops both at once.
            let held =
                (!world.running.is_empty()).then(|| world.running[i % world.running.len()].clone());
            let _ = pools
                .spawn(move || async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    drop(held);
                })
                .await;
        }
        Op::SpawnBlocking => {
            let _ = pools.spawn_blocking(|| std::hint::black_box(1 + 1)).await;
        }
        Op::Retire => pools.retire().await,
    }
    let_tasks_run().await;
    // Collect admissions that finished, tagging each grant with its owner.
    let mut still_waiting = Vec::new();
    for waiter in world.waiting.drain(..) {
        if waiter.task.is_finished() {
            if let Ok(Ok(ready)) = waiter.task.await {
                let owner = Arc::new(Owner {
                    tenant: waiter.tenant,
                    provider: waiter.provider,
                    epoch: ready.epoch().get(),
                });
                world.granted.push(Arc::downgrade(&owner));
                world.ready.push((ready, owner));
            }
        } else {
            still_waiting.push(waiter);
        }
    }
    world.waiting = still_waiting;
}

fn run_case(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    runtime.block_on(async move {
        let pools = start(LIMITS).await;
        let mut world = World::new();
        // Every provider exists from the start (installs then rotate), so
        // requests and connections are held from the first steps.
        for p in 0..PROVIDERS {
            apply(&pools, &mut world, Op::Install(p)).await;
        }
        for op in ops {
            let step = format!("{op:?}");
            apply(&pools, &mut world, op).await;
            let held = world.held();
            within_limits(&pools.snapshot(), &world.in_force, &held)
                .map_err(|e| TestCaseError::fail(format!("after {step}: {e}")))?;
        }
        for waiter in world.waiting.drain(..) {
            waiter.task.abort();
            let _ = waiter.task.await;
        }
        drop(world);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let report = pools.shutdown(deadline).await;
        prop_assert!(report.is_clean(), "not clean after shutdown: {report:?}");
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(1_000),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_interleaving_stays_within_limits_and_ends_clean(ops in proptest::collection::vec(op(), 1..40)) {
        run_case(ops)?;
    }
}
