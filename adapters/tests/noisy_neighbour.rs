//! One tenant never degrades another: a VICTIM tenant keeps 100 % success,
//! with default limits, while an ATTACKER tenant sharing the registry and
//! its providers misbehaves in every way a guest plausibly can — bad blob
//! keys, calls dropped mid-dial, unread streams, a pending flood, a
//! metadata hog, a hanging origin path, huge bodies, connection churn, and
//! all of them at once. Real loopback origin, real temporary blob root.
//!
//! Each test prints the victim's latency (p50, p99) for RELIABILITY.md
//! ("Noisy neighbour"); nothing here asserts a duration.

mod noisy;
mod support;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use provider_pools_actors::{AdmitError, AdmitRequest, OriginKind, PoolReady};
use provider_pools_adapters::blob::{
    self, BlobError, BlobKey, BlobKeyError, BlobLimits, PathRefusal,
};
use provider_pools_adapters::http_origin::{self, BodyLimits};
use tokio::task::JoinHandle;

use noisy::{Neighbourhood, Outcome, Stop};
use support::{eventually, get, plan, plan_until, task};

/// Victim rounds per submitter: 4 × 25 = 100 calls per scenario.
const ROUNDS: usize = 25;
/// Each attacker call's own deadline.
const ATTACKER_DEADLINE: Duration = Duration::from_secs(2);
/// Upper bound on any attacker loop's iterations (it stops sooner).
const MAX_ATTACKS: usize = 20_000;

type Attackers = Vec<JoinHandle<()>>;

fn attacker_plan(session: usize) -> provider_pools_actors::ExecutionPlan {
    let deadline = tokio::time::Instant::now() + ATTACKER_DEADLINE;
    plan_until("attacker", session as u64, deadline)
}

/// Runs the victim beside `attackers`, stops them, and checks the victim
/// lost nothing and the registry shuts down clean.
async fn victim_beside(name: &str, hood: Arc<Neighbourhood>, stop: Stop, attackers: Attackers) {
    let outcome: Outcome = hood.victim(ROUNDS).await;
    stop.stop();
    for attacker in attackers {
        support::bounded("an attacker to stop", attacker)
            .await
            .expect("attacker task");
    }
    println!(
        "noisy-neighbour {name}: victim {}/{} ok, p50 {} us, p99 {} us",
        outcome.ok,
        noisy::SUBMITTERS * ROUNDS,
        outcome.percentile(0.5),
        outcome.percentile(0.99),
    );
    assert!(
        outcome.failures.is_empty(),
        "{name}: the victim failed {} calls, first: {:?}",
        outcome.failures.len(),
        &outcome.failures[..outcome.failures.len().min(3)]
    );
    assert_eq!(outcome.ok, noisy::SUBMITTERS * ROUNDS, "{name}");
    let hood = Arc::into_inner(hood).expect("every attacker let go");
    let report = hood.pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{name}: {report:?}");
}

/// Bad blob keys: a key through a regular file (`file.txt/x`) for get and
/// put. Each is the attacker's own typed error.
fn bad_blob_keys(hood: &Arc<Neighbourhood>, stop: &Stop) -> Attackers {
    let (hood, stop) = (Arc::clone(hood), stop.clone());
    vec![task(async move {
        let through_a_file = BlobKey::parse("file.txt/x").expect("a valid key");
        for session in 0..MAX_ATTACKS {
            if stop.stopped() {
                break;
            }
            let plan = attacker_plan(session);
            let Ok(running) = hood.start(&hood.files, OriginKind::Blob, plan).await else {
                continue;
            };
            let limits = BlobLimits::default();
            let put = blob::put(&hood.pools, &running, &through_a_file, Bytes::new(), limits).await;
            assert_unusable(put.err());
            let got = blob::get(&hood.pools, &running, &through_a_file, limits).await;
            assert_unusable(got.err());
            tokio::task::yield_now().await;
        }
    })]
}

fn assert_unusable(err: Option<BlobError>) {
    assert!(
        matches!(err, Some(BlobError::Refused(PathRefusal::Unusable { .. }))),
        "the attacker's own error: {err:?}"
    );
}

/// Calls dropped at every point of their life, dials in flight included.
fn cancelled_calls(hood: &Arc<Neighbourhood>, stop: &Stop) -> Attackers {
    let (hood, stop) = (Arc::clone(hood), stop.clone());
    vec![task(async move {
        for session in 0..MAX_ATTACKS {
            if stop.stopped() {
                break;
            }
            let plan = attacker_plan(session);
            let Ok(running) = hood.start(&hood.web, OriginKind::Http, plan).await else {
                continue;
            };
            let call = http_origin::call(
                &hood.pools,
                &running,
                &hood.dialer,
                get("/close"),
                BodyLimits::default(),
            );
            poll_then_drop(call, 1 + session % 16).await;
        }
    })]
}

/// Polls `future` at most `polls` times, yielding between polls, then
/// drops it.
async fn poll_then_drop<F: Future>(future: F, polls: usize) {
    let mut future = std::pin::pin!(future);
    for _ in 0..polls {
        if futures_poll_once(future.as_mut()).await {
            return;
        }
        tokio::task::yield_now().await;
    }
}

async fn futures_poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> bool {
    let mut future = Some(future);
    std::future::poll_fn(|cx| {
        let ready = future.take().is_some_and(|f| f.poll(cx).is_ready());
        std::task::Poll::Ready(ready)
    })
    .await
}

/// Streams opened on a path that never ends and never read, held past
/// their deadline until the attacker is stopped.
fn unread_streams(hood: &Arc<Neighbourhood>, stop: &Stop) -> Attackers {
    (0..16)
        .map(|n| {
            let (hood, stop) = (Arc::clone(hood), stop.clone());
            task(async move {
                let plan = attacker_plan(1_000_000 + n);
                let Ok(running) = hood.start(&hood.web, OriginKind::Http, plan).await else {
                    return;
                };
                let opened = http_origin::call_streaming(
                    &hood.pools,
                    &running,
                    &hood.dialer,
                    get("/hang"),
                    BodyLimits::default(),
                )
                .await;
                drop(running);
                while !stop.stopped() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                drop(opened);
            })
        })
        .collect()
}

/// A pending flood: many more admissions at once than the attacker's
/// share, each holding its grant until the attacker is stopped.
fn pending_flood(hood: &Arc<Neighbourhood>, stop: &Stop) -> Attackers {
    (0..500)
        .map(|n| {
            let (hood, stop) = (Arc::clone(hood), stop.clone());
            task(async move {
                let plan = plan("attacker", 2_000_000 + n);
                let Ok(input) = hood.pools.stage_input(&plan, Bytes::new()) else {
                    return;
                };
                let admitted: Result<PoolReady, AdmitError> = hood
                    .pools
                    .admit(AdmitRequest {
                        plan,
                        provider: hood.web.provider.clone(),
                        slot: hood.web.slots[0],
                        kind: OriginKind::Http,
                        input,
                    })
                    .await;
                while admitted.is_ok() && !stop.stopped() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        })
        .collect()
}

/// Staged inputs just under 1 MiB each, held, until refused.
fn metadata_hog(hood: &Arc<Neighbourhood>, stop: &Stop) -> Attackers {
    let (hood, stop) = (Arc::clone(hood), stop.clone());
    vec![task(async move {
        let mut held = Vec::new();
        let plan = plan("attacker", 3_000_000);
        loop {
            match hood
                .pools
                .stage_input(&plan, Bytes::from(vec![0u8; 1024 * 1024 - 1]))
            {
                Ok(input) => held.push(input),
                Err(AdmitError::Capacity { resource, .. }) => {
                    assert_eq!(resource, "metadata_per_tenant", "refused at its own share");
                    break;
                }
                Err(other) => panic!("unexpected refusal: {other}"),
            }
        }
        while !stop.stopped() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(held);
    })]
}

/// Buffered calls of `path` in a loop on `tasks` tasks, each with its own
/// deadline, errors ignored (they are the attacker's own).
fn looping_calls(
    hood: &Arc<Neighbourhood>,
    stop: &Stop,
    path: &'static str,
    tasks: usize,
    limits: BodyLimits,
) -> Attackers {
    (0..tasks)
        .map(|n| {
            let (hood, stop) = (Arc::clone(hood), stop.clone());
            task(async move {
                for round in 0..MAX_ATTACKS / tasks {
                    if stop.stopped() {
                        break;
                    }
                    let plan = attacker_plan(4_000_000 + n * MAX_ATTACKS + round);
                    let Ok(running) = hood.start(&hood.web, OriginKind::Http, plan).await else {
                        tokio::task::yield_now().await;
                        continue;
                    };
                    let _ =
                        http_origin::call(&hood.pools, &running, &hood.dialer, get(path), limits)
                            .await;
                }
            })
        })
        .collect()
}

fn huge_limits() -> BodyLimits {
    BodyLimits {
        max_response: 16 * 1024 * 1024,
        ..BodyLimits::default()
    }
}

async fn neighbourhood() -> (Arc<Neighbourhood>, Stop) {
    (Arc::new(Neighbourhood::new().await), Stop::default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_baseline() {
    let (hood, stop) = neighbourhood().await;
    victim_beside("quiet", hood, stop, Vec::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guests_bad_blob_keys_never_back_off_the_shared_blob_client() {
    // A last segment too long for the put's temporary name is refused
    // before any I/O.
    let name = "n".repeat(blob::MAX_NAME + 1);
    assert_eq!(
        BlobKey::parse(&name).err(),
        Some(BlobKeyError::NameLength {
            len: blob::MAX_NAME + 1
        })
    );
    let (hood, stop) = neighbourhood().await;
    let attackers = bad_blob_keys(&hood, &stop);
    victim_beside("bad blob keys", hood, stop, attackers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guests_cancelled_calls_never_back_off_the_shared_http_client() {
    let (hood, stop) = neighbourhood().await;
    let attackers = cancelled_calls(&hood, &stop);
    victim_beside("cancelled calls", hood, stop, attackers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tenant_cannot_hold_every_connection_of_a_shared_client() {
    let (hood, stop) = neighbourhood().await;
    let attackers = unread_streams(&hood, &stop);
    // The attacker holds its whole share of the client before the victim
    // starts.
    let share = provider_pools_actors::Limits::DEFAULT.connections_per_tenant;
    let pools = hood.pools.clone();
    eventually("the attacker to hold its share of connections", || {
        pools.snapshot().connections.active >= share
    })
    .await;
    victim_beside("unread streams", hood, stop, attackers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doomed_admits_never_crowd_another_tenant_out_of_the_scheduler_mailbox() {
    let (hood, stop) = neighbourhood().await;
    let attackers = pending_flood(&hood, &stop);
    victim_beside("pending flood", hood, stop, attackers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tenant_cannot_fill_the_node_metadata_budget() {
    let (hood, stop) = neighbourhood().await;
    let attackers = metadata_hog(&hood, &stop);
    let pools = hood.pools.clone();
    eventually("the attacker to hold its metadata share", || {
        pools.snapshot().metadata_bytes >= 2 * (1024 * 1024 - 1)
    })
    .await;
    victim_beside("metadata hog", hood, stop, attackers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_origin_path_called_by_one_tenant_leaves_the_others_served() {
    let (hood, stop) = neighbourhood().await;
    let attackers = looping_calls(&hood, &stop, "/hang", 16, BodyLimits::default());
    victim_beside("hanging origin", hood, stop, attackers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_bodies_read_by_one_tenant_leave_the_others_served() {
    let (hood, stop) = neighbourhood().await;
    let attackers = looping_calls(&hood, &stop, "/huge", 4, huge_limits());
    victim_beside("huge bodies", hood, stop, attackers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_churn_by_one_tenant_leaves_the_others_served() {
    let (hood, stop) = neighbourhood().await;
    let attackers = looping_calls(&hood, &stop, "/close", 4, BodyLimits::default());
    victim_beside("connection churn", hood, stop, attackers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_attack_at_once_leaves_the_victim_served() {
    let (hood, stop) = neighbourhood().await;
    let mut attackers = bad_blob_keys(&hood, &stop);
    attackers.extend(cancelled_calls(&hood, &stop));
    attackers.extend(unread_streams(&hood, &stop));
    attackers.extend(pending_flood(&hood, &stop));
    attackers.extend(metadata_hog(&hood, &stop));
    attackers.extend(looping_calls(
        &hood,
        &stop,
        "/hang",
        8,
        BodyLimits::default(),
    ));
    attackers.extend(looping_calls(&hood, &stop, "/huge", 2, huge_limits()));
    attackers.extend(looping_calls(
        &hood,
        &stop,
        "/close",
        2,
        BodyLimits::default(),
    ));
    victim_beside("all at once", hood, stop, attackers).await;
}
