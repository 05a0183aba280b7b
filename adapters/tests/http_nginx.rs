//! The HTTP adapter against a real origin: Debian's nginx (installed by
//! `scripts/peers`), whose access log (`$connection $connection_requests`)
//! witnesses reuse, closure and the absence of retries.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use provider_pools_actors::Limits;
use provider_pools_adapters::http_origin::{
    call, call_streaming, BodyLimits, HttpDialer, HttpError, ResponseStream, Sent,
};
use provider_pools_test_peers::{AccessEntry, Nginx, NginxPeer};

/// Every call here is tenant `t`'s: it may use all of a client's
/// connections (the per-tenant share is proven in `noisy_neighbour.rs`).
const ONE_TENANT: Limits = Limits {
    connections_per_tenant: Limits::DEFAULT.connections_per_client,
    ..Limits::DEFAULT
};
use support::{bounded, eventually, get, install, nginx_logged, running, start};

const BODY: usize = 1000;

fn connections(log: &[AccessEntry]) -> BTreeSet<u64> {
    log.iter().map(|entry| entry.connection).collect()
}

#[tokio::test]
async fn sequential_calls_reuse_one_nginx_connection_and_are_never_retried() {
    let nginx = Nginx::new().body(BODY).start();
    let pools = start(ONE_TENANT).await;
    let receipt = install(&pools, &nginx.origin(), &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let path = NginxPeer::body_path(BODY);

    for session in 1..=20 {
        let request = running(&pools, &receipt, session).await;
        let response = bounded(
            "a call to nginx",
            call(&pools, &request, &dialer, get(&path), BodyLimits::default()),
        )
        .await
        .expect("200");
        assert_eq!(
            (response.status.as_u16(), response.body.bytes().len()),
            (200, BODY)
        );
    }
    let log = nginx_logged(&nginx, 20).await;
    assert_eq!(log.len(), 20, "one logged request per call, none retried");
    assert_eq!(connections(&log).len(), 1, "one connection: {log:?}");
    let numbers: Vec<u64> = log.iter().map(|entry| entry.request).collect();
    assert_eq!(numbers, (1..=20).collect::<Vec<_>>());
    assert_eq!(dialer.dials(), 1);
}

/// Parks `count` distinct connections: `count` streams hold one each while
/// the next is opened, then each body is read to its end.
async fn park_distinct(
    pools: &provider_pools_actors::ProviderPools,
    receipt: &provider_pools_actors::InstallReceipt,
    dialer: &HttpDialer,
    count: usize,
    first_session: u64,
) {
    let path = NginxPeer::body_path(BODY);
    let mut streams: Vec<ResponseStream> = Vec::new();
    for session in 0..count as u64 {
        let request = running(pools, receipt, first_session + session).await;
        let stream = bounded(
            "a streaming call to nginx",
            call_streaming(pools, &request, dialer, get(&path), BodyLimits::default()),
        )
        .await
        .expect("200");
        streams.push(stream);
    }
    for mut stream in streams {
        while let Some(chunk) = bounded("a chunk", stream.next_chunk()).await {
            chunk.expect("a body chunk");
        }
    }
}

#[tokio::test]
async fn a_parked_connection_nginx_closes_leaves_the_idle_count_and_its_charges() {
    let nginx = Nginx::new()
        .body(BODY)
        .keepalive_timeout(Duration::from_millis(300))
        .start();
    let pools = start(ONE_TENANT).await;
    let receipt = install(&pools, &nginx.origin(), &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    park_distinct(&pools, &receipt, &dialer, 3, 1).await;
    eventually("three parked connections", || {
        pools.snapshot().connections.idle == 3
    })
    .await;
    // nginx closes them after its keepalive_timeout (300 ms); each driver
    // sees EOF and its connection leaves the stash with its charges, long
    // before the idle age (30 s) or a checkout could reach it.
    eventually("no idle and no charged connection", || {
        let snapshot = pools.snapshot();
        snapshot.connections.idle == 0 && snapshot.connections.active == 0
    })
    .await;
    assert_eq!(dialer.dials(), 3);
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn eight_dead_parked_connections_never_fail_the_next_call() {
    let nginx = Nginx::new()
        .body(BODY)
        .keepalive_timeout(Duration::from_millis(300))
        .start();
    let pools = start(ONE_TENANT).await;
    let receipt = install(&pools, &nginx.origin(), &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    park_distinct(&pools, &receipt, &dialer, 8, 1).await;
    let before = nginx_logged(&nginx, 8).await;
    assert_eq!(
        connections(&before).len(),
        8,
        "eight connections: {before:?}"
    );
    eventually("nginx closed the eight parked connections", || {
        pools.snapshot().connections.idle == 0
    })
    .await;

    let path = NginxPeer::body_path(BODY);
    for session in 100..104 {
        let request = running(&pools, &receipt, session).await;
        let response = bounded(
            "a call after the origin closed every parked connection",
            call(&pools, &request, &dialer, get(&path), BodyLimits::default()),
        )
        .await
        .expect("no call fails because a parked connection was stale");
        assert_eq!(response.status, 200);
    }
    let log = nginx_logged(&nginx, 12).await;
    assert_eq!(log.len(), 12, "each call logged once: {log:?}");
    let after: BTreeSet<u64> = connections(&log[8..]);
    assert_eq!(after.len(), 1, "the four calls shared one fresh connection");
    assert!(after.is_disjoint(&before.iter().map(|e| e.connection).collect()));
    assert_eq!(dialer.dials(), 9, "eight, then one fresh dial");
}

#[tokio::test]
async fn error_phases_say_whether_the_request_left_the_process() {
    let nginx = Nginx::new().body(BODY).start();
    let pools = start(ONE_TENANT).await;
    let receipt = install(&pools, &nginx.origin(), &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let path = NginxPeer::body_path(BODY);

    // The origin answered, but the body was over the limit: it saw it.
    let request = running(&pools, &receipt, 1).await;
    let limits = BodyLimits {
        max_request: 1024,
        max_response: 100,
    };
    let err = bounded(
        "a call",
        call(&pools, &request, &dialer, get(&path), limits),
    )
    .await
    .expect_err("over the response limit");
    assert!(matches!(err, HttpError::ResponseTooLarge { .. }), "{err:?}");
    assert_eq!(err.was_sent(), Sent::Yes);

    // Refused before any dial: nothing left the process.
    let mut big = get(&path);
    big.body = bytes::Bytes::from(vec![0u8; 2048]);
    let err = bounded("a call", call(&pools, &request, &dialer, big, limits))
        .await
        .expect_err("over the request limit");
    assert_eq!(err.was_sent(), Sent::No);
    drop(request);

    // An origin that takes the request and never answers: the deadline
    // passes after the request was handed over, so it may have arrived.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let silent_origin = format!("http://{}", silent.local_addr().expect("addr"));
    let held = support::task(async move {
        let mut kept = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            kept.push(socket);
        }
    });
    let pools2 = start(ONE_TENANT).await;
    let receipt2 = install(&pools2, &silent_origin, &[], b"k").await;
    let dialer2 = HttpDialer::new(pools2.clone());
    let until = tokio::time::Instant::now() + Duration::from_millis(300);
    let request = support::running_until(&pools2, &receipt2, "t", 1, until).await;
    let err = bounded(
        "a call to a silent origin",
        call(&pools2, &request, &dialer2, get("/"), BodyLimits::default()),
    )
    .await
    .expect_err("the deadline passes");
    assert!(matches!(err, HttpError::Timeout { .. }), "{err:?}");
    assert_eq!(err.was_sent(), Sent::Maybe);
    held.abort();

    // No origin at all: the dial fails, nothing was sent.
    drop(nginx);
    let request = running(&pools, &receipt, 2).await;
    let err = bounded(
        "a call to a stopped origin",
        call(&pools, &request, &dialer, get(&path), BodyLimits::default()),
    )
    .await
    .expect_err("the origin is gone");
    assert_eq!(err.was_sent(), Sent::No, "{err:?}");
}

#[tokio::test]
async fn a_buffered_body_is_charged_as_read_and_the_first_chunk_over_the_budget_destroys_the_connection(
) {
    const MIB: usize = 1 << 20;
    let nginx = Nginx::new().body(BODY).body(8 * MIB).start();
    let pools = start(ONE_TENANT).await;
    let receipt = install(&pools, &nginx.origin(), &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = BodyLimits {
        max_request: 1024,
        max_response: 16 * MIB,
    };
    let baseline = pools.snapshot().metadata_bytes;

    // Within the response bound but over the 8 MiB metadata budget: the
    // chunk that does not fit fails the call, nothing past it is kept.
    let request = running(&pools, &receipt, 1).await;
    let err = bounded(
        "a call whose body outgrows the metadata budget",
        call(
            &pools,
            &request,
            &dialer,
            get(&NginxPeer::body_path(8 * MIB)),
            limits,
        ),
    )
    .await
    .expect_err("8 MiB cannot be charged beside everything else");
    assert!(matches!(err, HttpError::Staging(_)), "{err:?}");
    assert_eq!(err.code(), "capacity");
    assert_eq!(err.was_sent(), Sent::Yes);
    drop(request);
    eventually(
        "the connection destroyed, never parked, and the bytes returned",
        || {
            let snapshot = pools.snapshot();
            snapshot.connections.idle == 0
                && snapshot.connections.active == 0
                && snapshot.metadata_bytes == baseline
        },
    )
    .await;

    // The next request is unaffected: a fresh connection, its body charged
    // while it is held and returned when it is dropped.
    let request = running(&pools, &receipt, 2).await;
    let response = bounded(
        "a call after the refused one",
        call(
            &pools,
            &request,
            &dialer,
            get(&NginxPeer::body_path(BODY)),
            limits,
        ),
    )
    .await
    .expect("200");
    assert_eq!(response.body.bytes().len(), BODY);
    assert!(pools.snapshot().metadata_bytes >= baseline + BODY as u32);
    drop(response);
    drop(request);
    let log = nginx_logged(&nginx, 2).await;
    assert_eq!(
        connections(&log).len(),
        2,
        "the refused call's connection was not reused: {log:?}"
    );
    assert_eq!(dialer.dials(), 2);
}

/// The figures RELIABILITY.md's "Real origins" section quotes: 8 tasks
/// (the default `connections_per_client`) × 250 GETs against nginx, then,
/// after nginx closed every idle connection (`keepalive_timeout` 1 s), one
/// more GET per task. Prints distinct connections, requests per
/// connection and dials; asserts that nginx logged each GET exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_origin_figures_reuse_closure_and_no_retries() {
    const TASKS: u64 = 8;
    const GETS: u64 = 250;
    let nginx = Nginx::new()
        .body(BODY)
        .keepalive_timeout(Duration::from_secs(1))
        .start();
    let pools = start(ONE_TENANT).await;
    let receipt = std::sync::Arc::new(install(&pools, &nginx.origin(), &[], b"k").await);
    let dialer = std::sync::Arc::new(HttpDialer::new(pools.clone()));
    let round = |gets: u64, first: u64| {
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let (pools, receipt, dialer) = (pools.clone(), receipt.clone(), dialer.clone());
                support::task(async move {
                    for n in 0..gets {
                        let session = first + t * 10_000 + n;
                        let request = running(&pools, &receipt, session).await;
                        let path = NginxPeer::body_path(BODY);
                        call(&pools, &request, &dialer, get(&path), BodyLimits::default())
                            .await
                            .expect("every GET succeeds");
                    }
                })
            })
            .collect();
        async move {
            for task in tasks {
                bounded("a task's GETs", task).await.expect("task");
            }
        }
    };
    bounded("the load", round(GETS, 1)).await;
    let load = nginx_logged(&nginx, (TASKS * GETS) as usize).await;
    let load_dials = dialer.dials();
    eventually("nginx closed every idle connection", || {
        pools.snapshot().connections.idle == 0
    })
    .await;
    bounded("one GET per task after the closure", round(1, 5_000)).await;
    let all = nginx_logged(&nginx, (TASKS * (GETS + 1)) as usize).await;
    assert_eq!(all.len() as u64, TASKS * (GETS + 1), "each GET logged once");
    let per_connection = |log: &[AccessEntry]| {
        let mut counts = std::collections::BTreeMap::<u64, u64>::new();
        for entry in log {
            *counts.entry(entry.connection).or_default() += 1;
        }
        let values: Vec<u64> = counts.values().copied().collect();
        (
            values.len(),
            values.iter().min().copied().unwrap_or(0),
            values.iter().max().copied().unwrap_or(0),
        )
    };
    let (load_conns, load_min, load_max) = per_connection(&load);
    let (after_conns, _, _) = per_connection(&all[load.len()..]);
    eprintln!(
        "real origin: {} GETs by {TASKS} tasks: {load_conns} connections, {load_min}-{load_max} \
         requests per connection, {load_dials} dials; after nginx's keepalive_timeout: idle 0, \
         {} GETs on {after_conns} new connections, {} dials in all; nginx logged {} requests",
        TASKS * GETS,
        TASKS,
        dialer.dials(),
        all.len()
    );
    assert_eq!(load_conns as u64, load_dials, "one connection per dial");
    assert!(load_conns as u64 <= TASKS);
    assert_eq!(dialer.dials(), load_dials + after_conns as u64);
}

/// The connection-wait load with **default limits**: 16 tasks (four tenants × four)
/// × `NGINX_GETS_PER_TASK` (2,000 unless set) GETs against one nginx. Each
/// tenant's four tasks fill its `connections_per_tenant` share, the sixteen
/// exceed the client's eight connections, so requests wait for a connection
/// of the client (a parked one or a dial once one frees) instead of
/// failing: every GET succeeds, none is refused for capacity, and nginx
/// logs each exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_the_clients_connections_wait_for_one_and_all_succeed() {
    const TENANTS: u64 = 4;
    const TASKS_PER_TENANT: u64 = 4;
    let gets: u64 = std::env::var("NGINX_GETS_PER_TASK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let nginx = Nginx::new().body(BODY).start();
    let pools = start(Limits::DEFAULT).await;
    let receipt = std::sync::Arc::new(install(&pools, &nginx.origin(), &[], b"k").await);
    let dialer = std::sync::Arc::new(HttpDialer::new(pools.clone()));
    let started = std::time::Instant::now();
    let tasks: Vec<_> = (0..TENANTS * TASKS_PER_TENANT)
        .map(|t| {
            let (pools, receipt, dialer) = (pools.clone(), receipt.clone(), dialer.clone());
            let tenant = format!("tenant-{}", t % TENANTS);
            support::task(async move {
                let mut failures = Vec::new();
                for n in 0..gets {
                    let session = t * 1_000_000 + n;
                    let request = support::running_as(
                        &pools,
                        &receipt,
                        &tenant,
                        session,
                        provider_pools_actors::OriginKind::Http,
                    )
                    .await;
                    let path = NginxPeer::body_path(BODY);
                    if let Err(e) =
                        call(&pools, &request, &dialer, get(&path), BodyLimits::default()).await
                    {
                        failures.push(e.to_string());
                    }
                }
                failures
            })
        })
        .collect();
    let mut failures = Vec::new();
    for task in tasks {
        failures.extend(
            tokio::time::timeout(Duration::from_secs(600), task)
                .await
                .expect("a task's GETs within 10 minutes")
                .expect("task"),
        );
    }
    let elapsed = started.elapsed();
    let total = TENANTS * TASKS_PER_TENANT * gets;
    let log = nginx_logged(&nginx, total as usize).await;
    eprintln!(
        "connection waits: {total} GETs by {} tasks of {TENANTS} tenants, default limits: \
         {} failed, {} connections, {} dials, nginx logged {}, {elapsed:?}",
        TENANTS * TASKS_PER_TENANT,
        failures.len(),
        connections(&log).len(),
        dialer.dials(),
        log.len()
    );
    assert_eq!(
        failures,
        Vec::<String>::new(),
        "no GET fails, none for capacity"
    );
    assert_eq!(log.len() as u64, total, "each GET logged once");
    // nginx ends a connection after `keepalive_requests` (1,000) requests:
    // each end freed the client's charge for a waiter's dial.
    assert_eq!(
        connections(&log).len() as u64,
        dialer.dials(),
        "one connection per dial, nothing dialed in vain"
    );
}
