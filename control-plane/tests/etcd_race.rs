//! Three nodes race for one lease on a real etcd while an observer reads it
//! back: at every observed instant one node at most holds it and no other
//! node believes it does, tenures never overlap, tokens strictly increase;
//! when the holder stops renewing, another node takes over only after the
//! lease expired, with a larger token.
//!
//! A node's tenure is what it may safely believe: from the answer to its
//! acquisition until it sends its release, or until the send instant of its
//! last successful acquisition or renewal plus the time to live, whichever
//! comes first. etcd expires a lease no earlier than that.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::etcd::{EtcdClient, EtcdConfig};
use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, LeaseGrant, LeaseKey, LeaseName, LeaseRequest, NodeId,
};
use provider_pools_test_peers::Etcd;
use tokio::time::{sleep, Instant};

const TTL: Duration = Duration::from_secs(2);
const RACE_FOR: Duration = Duration::from_secs(6);
/// How long past the expiry of an abandoned lease a takeover may take.
const TAKEOVER_SLACK: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
struct Tenure {
    node: String,
    token: u64,
    start: Instant,
    end: Instant,
}

#[derive(Debug)]
struct Observation {
    sent: Instant,
    received: Instant,
    holder: Option<(String, u64)>,
}

/// A lease its holder stopped renewing.
#[derive(Debug)]
struct Abandoned {
    grant: LeaseGrant,
    start: Instant,
    last_ok: Instant,
}

fn key() -> LeaseKey {
    LeaseKey::Global(LeaseName::new("race").expect("valid"))
}

fn request(node: &NodeId) -> LeaseRequest {
    LeaseRequest::new(key(), node.clone(), TTL).expect("valid request")
}

/// One node: acquires when it can, renews one to three times, releases,
/// and goes again, until `stop`; a lease held then is abandoned.
async fn contend(
    client: Arc<EtcdClient>,
    index: usize,
    stop: Arc<AtomicBool>,
) -> (Vec<Tenure>, Option<Abandoned>) {
    let node = NodeId::new(format!("node-{index}")).expect("valid");
    let mut tenures = Vec::new();
    let mut round = 0;
    while !stop.load(Ordering::SeqCst) {
        let sent = Instant::now();
        let grant = match client.acquire(request(&node)).await {
            Ok(grant) => grant,
            Err(ControlPlaneError::LeaseHeld { .. } | ControlPlaneError::LeaseLost) => {
                sleep(Duration::from_millis(30)).await;
                continue;
            }
            Err(other) => panic!("{node}: acquire failed: {other}"),
        };
        let start = Instant::now();
        let mut last_ok = sent;
        let mut lost = false;
        for _ in 0..(index + round) % 3 + 1 {
            sleep(Duration::from_millis(400)).await;
            if stop.load(Ordering::SeqCst) {
                return (
                    tenures,
                    Some(Abandoned {
                        grant,
                        start,
                        last_ok,
                    }),
                );
            }
            let renew_sent = Instant::now();
            match client.renew(grant.clone()).await {
                Ok(_) => last_ok = renew_sent,
                // Too slow to renew (a loaded machine): the tenure ended
                // at its bound; that is the contract, not a failure.
                Err(ControlPlaneError::LeaseLost) => {
                    lost = true;
                    break;
                }
                Err(other) => panic!("{node}: renew failed: {other}"),
            }
        }
        let mut end = last_ok + TTL;
        if !lost {
            let release_sent = Instant::now();
            match client.release(grant.clone()).await {
                Ok(()) => end = end.min(release_sent),
                Err(ControlPlaneError::LeaseLost) => {}
                Err(other) => panic!("{node}: release failed: {other}"),
            }
        }
        tenures.push(Tenure {
            node: node.to_string(),
            token: grant.token.get(),
            start,
            end,
        });
        round += 1;
        sleep(Duration::from_millis(20 * (index as u64 + 1))).await;
    }
    (tenures, None)
}

/// Reads the lease back every 20 ms until `stop`.
async fn observe(client: Arc<EtcdClient>, stop: Arc<AtomicBool>) -> Vec<Observation> {
    let mut seen = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let sent = Instant::now();
        let state = client.read_lease(key()).await.expect("observer read");
        let received = Instant::now();
        seen.push(Observation {
            sent,
            received,
            holder: state.and_then(|state| {
                state
                    .holder
                    .map(|holder| (holder.to_string(), state.token.get()))
            }),
        });
        sleep(Duration::from_millis(20)).await;
    }
    seen
}

/// The abandoned lease is taken over by one of `challengers` only after it
/// expired, with a larger token; until then every refusal names its holder.
async fn take_over(
    challengers: &[(Arc<EtcdClient>, NodeId)],
    abandoned: &Abandoned,
) -> (Tenure, Instant) {
    let expiry = abandoned.last_ok + TTL;
    let deadline = expiry + TAKEOVER_SLACK;
    for turn in 0.. {
        let (client, node) = &challengers[turn % challengers.len()];
        match client.acquire(request(node)).await {
            Ok(grant) => {
                let start = Instant::now();
                assert!(
                    start >= expiry,
                    "{node} took the lease {:?} before the abandoned one could expire",
                    expiry - start
                );
                assert!(
                    grant.token > abandoned.grant.token,
                    "takeover token {} is not above the abandoned {}",
                    grant.token,
                    abandoned.grant.token
                );
                let release_sent = Instant::now();
                client.release(grant.clone()).await.expect("released");
                let tenure = Tenure {
                    node: node.to_string(),
                    token: grant.token.get(),
                    start,
                    end: release_sent,
                };
                return (tenure, start);
            }
            Err(ControlPlaneError::LeaseHeld { holder, token }) => {
                assert_eq!(
                    (&holder, token),
                    (&abandoned.grant.holder, abandoned.grant.token),
                    "refused naming another holder than the abandoned one"
                );
            }
            Err(other) => panic!("{node}: acquire failed: {other}"),
        }
        assert!(
            Instant::now() < deadline,
            "nobody took over the abandoned lease within {TAKEOVER_SLACK:?} of its expiry"
        );
        sleep(Duration::from_millis(100)).await;
    }
    unreachable!("the loop only ends by returning or panicking")
}

fn check(tenures: &mut [Tenure], observations: &[Observation]) {
    tenures.sort_by_key(|tenure| tenure.start);
    for pair in tenures.windows(2) {
        let (earlier, later) = (&pair[0], &pair[1]);
        assert!(
            later.start >= earlier.end,
            "overlapping tenures: {earlier:?} and {later:?}"
        );
        assert!(
            later.token > earlier.token,
            "tokens do not increase: {earlier:?} then {later:?}"
        );
    }
    for seen in observations {
        let covering: Vec<&Tenure> = tenures
            .iter()
            .filter(|tenure| tenure.start <= seen.sent && seen.received <= tenure.end)
            .collect();
        match &seen.holder {
            Some((holder, token)) => {
                assert!(
                    tenures
                        .iter()
                        .any(|tenure| (&tenure.node, tenure.token) == (holder, *token)),
                    "observed {holder} with token {token}, which no node was granted"
                );
                assert!(
                    covering.iter().all(|tenure| &tenure.node == holder),
                    "observed {holder} holding while {covering:?} believed it held"
                );
            }
            None => assert!(
                covering.is_empty(),
                "observed the lease free while {covering:?} believed it held"
            ),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::disallowed_methods, reason = "tests own their tasks")]
async fn three_nodes_race_one_holds_at_a_time_and_a_silent_holder_is_taken_over() {
    let etcd = tokio::task::block_in_place(Etcd::start);
    let config = EtcdConfig::new(format!("http://{}", etcd.addr())).with_prefix("/race/");
    let client = || Arc::new(EtcdClient::new(config.clone()).expect("valid config"));
    let clients: Vec<Arc<EtcdClient>> = (0..3).map(|_| client()).collect();

    let stop_observing = Arc::new(AtomicBool::new(false));
    let observer = tokio::spawn(observe(client(), stop_observing.clone()));
    let stop_racing = Arc::new(AtomicBool::new(false));
    let racers: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(index, client)| tokio::spawn(contend(client.clone(), index, stop_racing.clone())))
        .collect();
    sleep(RACE_FOR).await;
    stop_racing.store(true, Ordering::SeqCst);

    let mut tenures = Vec::new();
    let mut abandoned = Vec::new();
    for racer in racers {
        let (mut done, held) = racer.await.expect("racer finished");
        tenures.append(&mut done);
        abandoned.extend(held);
    }
    assert!(
        tenures.len() >= 3,
        "only {} tenures in {RACE_FOR:?}: {tenures:?}",
        tenures.len()
    );
    assert!(
        abandoned.len() <= 1,
        "two nodes held the lease: {abandoned:?}"
    );

    // Phase two: the holder stops renewing (one is made if the race ended
    // between tenures).
    let abandoned = match abandoned.pop() {
        Some(held) => held,
        None => {
            let node = NodeId::new("node-0").expect("valid");
            let sent = Instant::now();
            let grant = clients[0]
                .acquire(request(&node))
                .await
                .expect("the free lease is granted");
            Abandoned {
                grant,
                start: Instant::now(),
                last_ok: sent,
            }
        }
    };
    let challengers: Vec<(Arc<EtcdClient>, NodeId)> = (0..3)
        .map(|index| NodeId::new(format!("node-{index}")).expect("valid"))
        .zip(clients.iter().cloned())
        .filter(|(node, _)| *node != abandoned.grant.holder)
        .map(|(node, client)| (client, node))
        .collect();
    let (takeover, _) = take_over(&challengers, &abandoned).await;
    tenures.push(Tenure {
        node: abandoned.grant.holder.to_string(),
        token: abandoned.grant.token.get(),
        start: abandoned.start,
        end: abandoned.last_ok + TTL,
    });
    tenures.push(takeover);

    stop_observing.store(true, Ordering::SeqCst);
    let observations = observer.await.expect("observer finished");
    let holders: std::collections::BTreeSet<&str> = observations
        .iter()
        .filter_map(|seen| seen.holder.as_ref().map(|(holder, _)| holder.as_str()))
        .collect();
    assert!(
        observations.len() >= 100 && holders.len() >= 2,
        "the observer saw {} states and holders {holders:?}",
        observations.len()
    );
    check(&mut tenures, &observations);
}
