//! Stress of the idle stash and the checkout on real threads, counted in
//! real sockets.
//!
//! A 4-worker runtime runs many tasks that admit, start and check out
//! connections of a few clients (two providers of two origin slots each),
//! then park, drop, or abandon them half-way, while a rotator installs new
//! epochs of both providers and the old ones retire. The connections are
//! real loopback TCP sockets to a listener the test runs; each dial writes
//! its provider and epoch (the epoch's credential) as the socket's first
//! bytes, so the listener knows which epoch every open socket belongs to.
//!
//! At quiescence after each round (every task joined, every retired epoch
//! released, nothing checked out or dialing) the sockets still open at the
//! listener are exactly the snapshot's idle connections, all of current
//! epochs: no socket leaked, none counted but gone, nothing of a retired
//! epoch idle. After shutdown every socket is closed and the report is
//! clean and all zero.
//!
//! Default: 3 rounds, a few seconds. `IDLE_STRESS_ROUNDS=n` runs more
//! (figures in RELIABILITY.md, "ThreadSanitizer").

#[path = "idle_stress/sockets.rs"]
mod sockets;
mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use provider_pools::{
    AdmitError, ConnectError, Epoch, InstallError, InstallReceipt, Limits, ProviderId,
    ProviderPools, Snapshot,
};
use sockets::{listener, lock, tag, Shared, TaggingDialer};
use support::rng::Rng;
use support::{installation, plan, provider, request, start, tcp_config, AllowAll};

const PROVIDERS: usize = 2;
const SLOTS: usize = 2;
const TASKS: usize = 16;
const TENANTS: usize = 4;
const ITERATIONS: usize = 150;
/// How long quiescence may take (mailbox hops, EOFs reaching the
/// listener); generous for an instrumented (ThreadSanitizer) build.
const QUIESCENCE_WITHIN: Duration = Duration::from_secs(30);

/// What the tasks did, summed over a run.
#[derive(Debug, Default)]
struct Tally {
    reused: AtomicU64,
    fresh: AtomicU64,
    parked: AtomicU64,
    dropped: AtomicU64,
    abandoned: AtomicU64,
    /// Admissions or starts refused (busy, or the granted epoch rotated).
    refused: AtomicU64,
    rotations: AtomicU64,
}

struct Fixture {
    pools: ProviderPools,
    receipts: Vec<InstallReceipt>,
    dialer: TaggingDialer,
    tally: Tally,
}

/// One task: `ITERATIONS` checkouts of random clients, each parked,
/// dropped, or abandoned by its caller after one poll.
async fn worker(fx: Arc<Fixture>, task: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let tenant = format!("t{}", task % TENANTS);
    for i in 0..ITERATIONS {
        let receipt = &fx.receipts[rng.index(PROVIDERS)];
        let session = (task * ITERATIONS + i) as u64;
        let mut admit = request(&fx.pools, plan(&tenant, session), receipt, b"");
        admit.slot = receipt.slots[rng.index(SLOTS)];
        let started = match fx.pools.admit(admit).await {
            Ok(ready) => fx
                .pools
                .dispatch(&AllowAll, ready.plan(), ready.provider())
                .and_then(|call| ready.start(call)),
            Err(err) => Err(err),
        };
        let running = match started {
            Ok(running) => running,
            Err(AdmitError::Busy | AdmitError::Retired { .. } | AdmitError::Mismatch { .. }) => {
                fx.tally.refused.fetch_add(1, SeqCst);
                continue;
            }
            Err(err) => panic!("task {task}: admission failed: {err:?}"),
        };
        let checkout = fx.pools.reserve_connection(&running, &fx.dialer);
        let conn = if rng.chance(10) {
            // Polled once, then dropped: a dial in flight goes on and parks.
            match tokio::time::timeout(Duration::ZERO, checkout).await {
                Ok(conn) => conn,
                Err(_) => {
                    fx.tally.abandoned.fetch_add(1, SeqCst);
                    continue;
                }
            }
        } else {
            checkout.await
        };
        let conn = match conn {
            Ok(conn) => conn,
            Err(ConnectError::Busy) => {
                fx.tally.refused.fetch_add(1, SeqCst);
                continue;
            }
            Err(err) => panic!("task {task}: checkout failed: {err:?}"),
        };
        let counter = if conn.is_reused() {
            &fx.tally.reused
        } else {
            &fx.tally.fresh
        };
        counter.fetch_add(1, SeqCst);
        conn.get().peer_addr().expect("a connected socket");
        for _ in 0..rng.below(3) {
            tokio::task::yield_now().await;
        }
        if rng.chance(70) {
            conn.park();
            fx.tally.parked.fetch_add(1, SeqCst);
        } else {
            drop(conn);
            fx.tally.dropped.fetch_add(1, SeqCst);
        }
        drop(running);
    }
}

/// Installs a new epoch of each provider in turn until `stop`, expecting
/// the current epoch; a refusal for room (old epochs not yet drained) is
/// tried again.
async fn rotator(fx: Arc<Fixture>, target: String, stop: Arc<AtomicBool>) {
    let mut turn = 0usize;
    while !stop.load(SeqCst) {
        let index = turn % PROVIDERS;
        let name = provider_name(index);
        let current = current_epoch(&fx.pools, &name);
        let next = tag(index, current.get() + 1);
        let config = tcp_config(name.as_str(), &vec![target.clone(); SLOTS]);
        match fx
            .pools
            .install(installation(&name, current.get(), &next, config))
            .await
        {
            Ok(_) => {
                fx.tally.rotations.fetch_add(1, SeqCst);
                turn += 1;
            }
            Err(InstallError::Capacity(_) | InstallError::Busy) => {}
            Err(err) => panic!("rotation of {name} failed: {err:?}"),
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn provider_name(index: usize) -> ProviderId {
    provider(&format!("p{index}"))
}

fn current_epoch(pools: &ProviderPools, name: &ProviderId) -> Epoch {
    pools.describe(name).expect("installed").epoch
}

/// Polls `check` until it passes, failing after [`QUIESCENCE_WITHIN`] with its last
/// complaint.
async fn until(what: &str, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = tokio::time::Instant::now() + QUIESCENCE_WITHIN;
    loop {
        match check() {
            Ok(()) => return,
            Err(why) if tokio::time::Instant::now() >= deadline => {
                panic!("{what}: not reached within {QUIESCENCE_WITHIN:?}: {why}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
}

/// Quiescence: nothing checked out, dialing, queued or retired; only the
/// current epochs retained.
fn quiet(snapshot: &Snapshot) -> Result<(), String> {
    let c = snapshot.connections;
    let quiet = c.active == 0
        && c.connecting == 0
        && c.retired == 0
        && snapshot.running_requests == 0
        && snapshot.pending_requests == 0
        && snapshot.workers == 0
        && snapshot.retained_epochs == PROVIDERS as u32;
    if quiet {
        Ok(())
    } else {
        Err(format!("{snapshot:?}"))
    }
}

/// The listener has accepted every dialed socket (a socket the pool
/// destroyed may wait in the accept queue a while), and its open sockets
/// are the snapshot's idle connections, all of the current epochs.
fn sockets_match(fx: &Fixture, sockets: &Shared) -> Result<(), String> {
    let snapshot = fx.pools.snapshot();
    let dialed = fx.dialer.dialed.load(SeqCst);
    let s = lock(sockets);
    let current: Vec<u64> = (0..PROVIDERS)
        .map(|p| current_epoch(&fx.pools, &provider_name(p)).get())
        .collect();
    let stale: Vec<_> = s
        .by_epoch
        .iter()
        .filter(|((p, e), _)| current[*p as usize] != *e)
        .collect();
    let idle = snapshot.connections.idle as usize;
    if s.accepted == dialed && s.open == idle && s.untagged == 0 && stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} open at the listener ({} untagged) vs {idle} idle; \
             {} accepted of {dialed} dialed (last accept error: {:?}); \
             open sockets of retired epochs (provider, epoch): {stale:?}; \
             current epochs {current:?}; {snapshot:?}",
            s.open, s.untagged, s.accepted, s.accept_error
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_sockets_match_the_snapshot_at_quiescence_while_epochs_rotate() {
    let rounds: u64 = std::env::var("IDLE_STRESS_ROUNDS")
        .ok()
        .map(|r| r.parse().expect("IDLE_STRESS_ROUNDS is a number"))
        .unwrap_or(3);
    let began = std::time::Instant::now();
    let (target, sockets) = listener().await;
    let limits = Limits {
        connections_per_client: 4,
        connections_per_tenant: 2,
        idle_connections: 12,
        pending_requests: 1_024,
        running_requests: 1_024,
        requests_per_tenant: 1_024,
        requests_per_provider: 1_024,
        running_per_tenant: 1_024,
        running_per_provider: 1_024,
        queue_age: Duration::from_secs(60),
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let mut receipts = Vec::new();
    for index in 0..PROVIDERS {
        let name = provider_name(index);
        let config = tcp_config(name.as_str(), &vec![target.clone(); SLOTS]);
        let installed = pools.install(installation(&name, 0, &tag(index, 1), config));
        receipts.push(installed.await.expect("install"));
    }
    let fx = Arc::new(Fixture {
        pools,
        receipts,
        dialer: TaggingDialer::default(),
        tally: Tally::default(),
    });

    for round in 0..rounds {
        let stop = Arc::new(AtomicBool::new(false));
        let rotating = support::task(rotator(Arc::clone(&fx), target.clone(), Arc::clone(&stop)));
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let seed = round * 1_000 + task as u64;
                support::task(worker(Arc::clone(&fx), task, seed))
            })
            .collect();
        for (task, handle) in tasks.into_iter().enumerate() {
            let joined = tokio::time::timeout(QUIESCENCE_WITHIN * 4, handle).await;
            joined
                .unwrap_or_else(|_| panic!("round {round}: task {task} did not finish"))
                .unwrap_or_else(|err| panic!("round {round}: task {task}: {err}"));
        }
        stop.store(true, SeqCst);
        rotating.await.expect("rotator");

        until(&format!("round {round}: quiescence"), || {
            quiet(&fx.pools.snapshot())
        })
        .await;
        until(
            &format!("round {round}: sockets against the snapshot"),
            || sockets_match(&fx, &sockets),
        )
        .await;
    }

    let t = &fx.tally;
    assert!(
        t.reused.load(SeqCst) > 0 && t.parked.load(SeqCst) > 0 && t.rotations.load(SeqCst) > 0,
        "the run exercised reuse, parking and rotation: {t:?}"
    );
    let report = fx
        .pools
        .shutdown(tokio::time::Instant::now() + QUIESCENCE_WITHIN)
        .await;
    assert!(report.is_clean(), "shutdown is clean: {report:?}");
    assert!(report.owns_nothing(), "all zero: {report:?}");
    until("every socket closed after shutdown", || {
        let s = lock(&sockets);
        if s.open == 0 && s.accepted == fx.dialer.dialed.load(SeqCst) {
            Ok(())
        } else {
            Err(format!("{s:?}"))
        }
    })
    .await;
    println!(
        "idle_stress: {rounds} rounds in {:?}, {} sockets accepted, {t:?}",
        began.elapsed(),
        lock(&sockets).accepted
    );
}
