//! Keep-alive and connection lifetimes on HTTP/1.1: a parked connection
//! retires (its socket closed by the pools) at `idle_timeout_ms` from its
//! last park, and earlier than an origin's `Keep-Alive: timeout=N`; a connection past
//! `max_connection_requests` or `max_connection_age_ms` is not reused; a
//! replayable request a reused connection loses before any byte of an
//! answer is delivered once more on a dialed connection, and only once,
//! while an unmarked one fails as maybe sent; against lighttpd with a
//! short keep-alive idle, callers pausing about that long fail no
//! replayable GET and lighttpd logs each call once, and connections that
//! retire before lighttpd's idle limit fail no call at all.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use provider_pools_actors::{Limits, ProviderPools};
use provider_pools_adapters::http_origin::{
    call, BodyLimits, HttpDialer, HttpError, HttpRequest, Sent, IDLE_TIMEOUT_SETTING,
    MAX_AGE_SETTING, MAX_REQUESTS_SETTING,
};
use provider_pools_test_peers::Lighttpd;
use support::origin::Origin;
use support::{bounded, get, install, quiescent, running, start, task};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::time::Instant;

fn replayable(path: &str) -> HttpRequest {
    HttpRequest {
        replayable: true,
        ..get(path)
    }
}

/// One call of session `session`, its response dropped.
async fn ok(
    pools: &ProviderPools,
    receipt: &provider_pools_actors::InstallReceipt,
    dialer: &HttpDialer,
    session: u64,
    request: HttpRequest,
) {
    let running = running(pools, receipt, session).await;
    let response = call(pools, &running, dialer, request, BodyLimits::default())
        .await
        .expect("200");
    assert_eq!(response.status, 200);
}

/// An origin, and pools whose provider has `idle_timeout_ms` of
/// `idle_timeout`, after one call: its connection dialed and parked.
async fn one_parked(
    idle_timeout: &str,
) -> (
    Origin,
    ProviderPools,
    provider_pools_actors::InstallReceipt,
    HttpDialer,
) {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(
        &pools,
        &origin.target,
        &[(IDLE_TIMEOUT_SETTING, idle_timeout)],
        b"k",
    )
    .await;
    let dialer = HttpDialer::new(pools.clone());
    ok(&pools, &receipt, &dialer, 1, get("/ok")).await;
    assert_eq!(pools.snapshot().connections.idle, 1, "parked");
    (origin, pools, receipt, dialer)
}

#[tokio::test]
async fn a_parked_connection_is_closed_by_the_pools_at_its_idle_timeout() {
    let (mut origin, pools, _receipt, _dialer) = one_parked("200").await;
    let parked = Instant::now();

    origin.client_closed().await;
    assert!(
        parked.elapsed() >= Duration::from_millis(200),
        "closed at its idle timeout, not before: {:?}",
        parked.elapsed()
    );
    support::eventually("the retired connection leaves the stash", || {
        pools.snapshot().connections.idle == 0
    })
    .await;
}

#[tokio::test]
async fn a_connection_parked_again_before_its_idle_deadline_closes_at_the_later_one() {
    let (mut origin, pools, receipt, dialer) = one_parked("300").await;
    let first_park = Instant::now();
    // Reused and parked again well inside the first idle spell: the
    // driver's timer stays armed at the first idle deadline, fires there,
    // and finds the second one in force.
    tokio::time::sleep(Duration::from_millis(150)).await;
    ok(&pools, &receipt, &dialer, 2, get("/ok")).await;
    let second_park = Instant::now();
    assert_eq!(dialer.dials(), 1, "the parked connection was reused");

    origin.client_closed().await;
    assert!(
        second_park.elapsed() >= Duration::from_millis(300),
        "closed at the first idle deadline, {:?} after the first park and {:?} after the second",
        first_park.elapsed(),
        second_park.elapsed()
    );
}

#[tokio::test]
async fn an_origins_keep_alive_hint_retires_a_parked_connection_before_the_origin_would() {
    let mut origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    // `Keep-Alive: timeout=2`: the origin would close after 2 s idle; the
    // pools close it 1 s earlier, well before their own 4 s.
    ok(&pools, &receipt, &dialer, 1, get("/keep-alive-2")).await;
    let parked = Instant::now();
    origin.client_closed().await;
    let idle = parked.elapsed();
    assert!(
        idle >= Duration::from_millis(900) && idle < Duration::from_secs(2),
        "retired after {idle:?}"
    );
}

#[tokio::test]
async fn a_connection_carries_at_most_max_connection_requests() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[(MAX_REQUESTS_SETTING, "2")], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    for session in 1..=5 {
        ok(&pools, &receipt, &dialer, session, get("/ok")).await;
    }
    assert_eq!(origin.hits("/ok"), 5);
    assert_eq!(origin.accepted(), 3, "two requests per connection");
}

#[tokio::test]
async fn a_connection_past_max_connection_age_is_not_reused() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[(MAX_AGE_SETTING, "300")], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    ok(&pools, &receipt, &dialer, 1, get("/ok")).await;
    ok(&pools, &receipt, &dialer, 2, get("/ok")).await;
    assert_eq!(origin.accepted(), 1, "reused while young");
    // The caller pauses past the connection's age.
    tokio::time::sleep(Duration::from_millis(350)).await;
    ok(&pools, &receipt, &dialer, 3, get("/ok")).await;
    assert_eq!(origin.accepted(), 2, "dialed again past its age");
}

/// A raw HTTP/1.1 origin that answers the first request on its first
/// connection (keep-alive) and, on every later request of any
/// connection, reads it and closes without a byte of an answer — an
/// origin whose keep-alive close crossed the request. Counts the
/// connections it accepted and the requests it read.
async fn closing_origin() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let target = format!("http://{}", listener.local_addr().expect("addr"));
    let accepted = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let (count, read) = (Arc::clone(&accepted), Arc::clone(&requests));
    task(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let first_connection = count.fetch_add(1, Ordering::SeqCst) == 0;
            let read = Arc::clone(&read);
            task(async move {
                let mut answered = !first_connection;
                loop {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    read.fetch_add(1, Ordering::SeqCst);
                    if answered {
                        return;
                    }
                    answered = true;
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";
                    if socket.write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (target, accepted, requests)
}

/// An origin whose second connection answers like its first: the
/// connection a replay dials is served.
async fn closing_then_serving_origin() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let target = format!("http://{}", listener.local_addr().expect("addr"));
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    task(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            task(async move {
                let mut answered = false;
                loop {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    if answered {
                        // The reused connection: closed under the request.
                        return;
                    }
                    answered = true;
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";
                    if socket.write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (target, accepted)
}

#[tokio::test]
async fn a_replayable_request_a_reused_connection_lost_is_delivered_once_more_on_a_dialed_one() {
    let (target, accepted) = closing_then_serving_origin().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    ok(&pools, &receipt, &dialer, 1, get("/")).await;
    assert_eq!(pools.snapshot().connections.idle, 1);

    ok(&pools, &receipt, &dialer, 2, replayable("/")).await;
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "the replay dialed");
}

#[tokio::test]
async fn an_unmarked_request_a_reused_connection_lost_fails_as_maybe_sent() {
    let (target, accepted) = closing_then_serving_origin().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    ok(&pools, &receipt, &dialer, 1, get("/")).await;

    let request = running(&pools, &receipt, 2).await;
    let lost = call(&pools, &request, &dialer, get("/"), BodyLimits::default())
        .await
        .expect_err("lost under the request");
    assert!(
        matches!(
            lost,
            HttpError::Protocol {
                sent: Sent::Maybe,
                ..
            }
        ),
        "{lost:?}"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "nothing dialed again");
}

#[tokio::test]
async fn a_replay_is_delivered_once_only() {
    let (target, accepted, requests) = closing_origin().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    ok(&pools, &receipt, &dialer, 1, get("/")).await;

    let request = running(&pools, &receipt, 2).await;
    let lost = call(
        &pools,
        &request,
        &dialer,
        replayable("/"),
        BodyLimits::default(),
    )
    .await
    .expect_err("the dialed connection lost it too");
    assert_eq!(lost.was_sent(), Sent::Maybe, "{lost:?}");
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "one replay, one dial");
    assert_eq!(
        requests.load(Ordering::SeqCst),
        3,
        "the first call, twice the second"
    );
}

/// `tasks` callers each making `calls` GETs of `/ok?c=TASK-N` through one
/// client, pausing `pause` (plus up to 40 ms, varying by task and call)
/// before each; returns the failures.
async fn paced_calls(
    pools: &ProviderPools,
    receipt: &provider_pools_actors::InstallReceipt,
    dialer: &HttpDialer,
    (tasks, calls, pause): (u64, u64, Duration),
    marked: bool,
) -> Vec<HttpError> {
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (pools, receipt, dialer) = (pools.clone(), receipt.clone(), dialer.clone());
        handles.push(task(async move {
            let mut failures = Vec::new();
            for n in 0..calls {
                let jitter = Duration::from_millis((t * 7 + n * 13) % 40);
                tokio::time::sleep(pause + jitter).await;
                let request = support::running(&pools, &receipt, t * 1_000 + n).await;
                let get = HttpRequest {
                    replayable: marked,
                    ..get(&format!("/ok?c={t}-{n}"))
                };
                match call(&pools, &request, &dialer, get, BodyLimits::default()).await {
                    Ok(response) => assert_eq!(response.body.bytes().as_ref(), b"hello\n"),
                    Err(e) => failures.push(e),
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for handle in handles {
        failures.extend(handle.await.expect("a caller"));
    }
    failures
}

/// lighttpd with a 1 s keep-alive idle, and a client of it whose
/// connections stay parked 10 s: longer than lighttpd keeps them.
async fn racing_lighttpd() -> (
    provider_pools_test_peers::LighttpdPeer,
    ProviderPools,
    provider_pools_actors::InstallReceipt,
    HttpDialer,
) {
    let lighttpd = Lighttpd::new()
        .keep_alive_idle(Duration::from_secs(1))
        .start();
    let pools = start(Limits::DEFAULT).await;
    let settings = [(IDLE_TIMEOUT_SETTING, "10000")];
    let receipt = install(&pools, &lighttpd.origin(), &settings, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    (lighttpd, pools, receipt, dialer)
}

/// How many times each query lighttpd logged.
fn logged_queries(log: Vec<provider_pools_test_peers::LighttpdEntry>) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for entry in log {
        *seen.entry(entry.query).or_insert(0) += 1;
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayable_gets_pausing_as_long_as_lighttpds_keep_alive_idle_never_fail() {
    let (lighttpd, pools, receipt, dialer) = racing_lighttpd().await;
    let (tasks, calls) = (8, 8);
    let shape = (tasks, calls, Duration::from_millis(1_000));

    let failures = paced_calls(&pools, &receipt, &dialer, shape, true).await;
    assert!(failures.is_empty(), "failed: {failures:?}");
    let total = (tasks * calls) as usize;
    let seen = logged_queries(lighttpd.wait_for_log(total, support::WAIT));
    assert_eq!(seen.len(), total, "every call logged: {seen:?}");
    assert!(seen.values().all(|&n| n == 1), "each call once: {seen:?}");
}

/// The campaign behind RELIABILITY.md's lighttpd figures: `TASKS` callers
/// (default 32) each making `CALLS` GETs (default 40), pausing 1 to 3 s
/// before each; `MARKED=0` sends them unmarked. Prints the failures and
/// how many calls lighttpd logged more than once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a campaign of minutes: run by hand for RELIABILITY.md"]
async fn lighttpd_keep_alive_campaign() {
    let number = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    let (tasks, calls, marked) = (
        number("TASKS", 32),
        number("CALLS", 40),
        number("MARKED", 1) == 1,
    );
    let (lighttpd, pools, receipt, dialer) = racing_lighttpd().await;
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (pools, receipt, dialer) = (pools.clone(), receipt.clone(), dialer.clone());
        handles.push(task(async move {
            let mut failures = Vec::new();
            for n in 0..calls {
                let pause = 1_000 + (t * 7_919 + n * 104_729) % 2_000;
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let request = support::running(&pools, &receipt, t * 1_000 + n).await;
                let get = HttpRequest {
                    replayable: marked,
                    ..get(&format!("/ok?c={t}-{n}"))
                };
                if let Err(e) = call(&pools, &request, &dialer, get, BodyLimits::default()).await {
                    failures.push(e.to_string());
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for handle in handles {
        failures.extend(handle.await.expect("a caller"));
    }
    let total = (tasks * calls) as usize;
    let seen = logged_queries(lighttpd.wait_for_log(total - failures.len(), support::WAIT));
    let twice = seen.values().filter(|&&n| n > 1).count();
    eprintln!(
        "lighttpd campaign: {total} GETs ({}), {} failed, {twice} logged more than once, {} dials: {failures:?}",
        if marked { "replayable" } else { "unmarked" },
        failures.len(),
        dialer.dials(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_retiring_before_lighttpds_keep_alive_idle_fail_no_unmarked_get() {
    let lighttpd = Lighttpd::new()
        .keep_alive_idle(Duration::from_secs(1))
        .start();
    let pools = start(Limits::DEFAULT).await;
    // Retired at 500 ms idle, before lighttpd's 1 s.
    let settings = [(IDLE_TIMEOUT_SETTING, "500")];
    let receipt = install(&pools, &lighttpd.origin(), &settings, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    // One caller: each pause outlasts the connection's idle timeout.
    let (tasks, calls) = (1, 6);

    let failures = paced_calls(
        &pools,
        &receipt,
        &dialer,
        (tasks, calls, Duration::from_millis(980)),
        false,
    )
    .await;
    assert!(failures.is_empty(), "failed: {failures:?}");
    let log = lighttpd.wait_for_log((tasks * calls) as usize, support::WAIT);
    assert!(
        log.iter().all(|entry| entry.request == 0),
        "no connection was reused past its idle timeout: {log:?}"
    );
    assert_eq!(dialer.dials(), tasks * calls);
    quiescent(&pools).await;
}

#[tokio::test]
async fn a_bad_connection_setting_is_refused_by_name_before_any_dial() {
    for (setting, value) in [
        (IDLE_TIMEOUT_SETTING, "3600001"),
        (MAX_AGE_SETTING, "0"),
        (MAX_REQUESTS_SETTING, "1000001"),
    ] {
        let pools = start(Limits::DEFAULT).await;
        let receipt = install(&pools, "http://127.0.0.1:9", &[(setting, value)], b"k").await;
        let dialer = HttpDialer::new(pools.clone());
        let request = running(&pools, &receipt, 1).await;
        let refused = bounded(
            "a refused call",
            call(&pools, &request, &dialer, get("/"), BodyLimits::default()),
        )
        .await
        .expect_err("out of range");
        assert!(
            matches!(refused, HttpError::Setting { setting: named, .. } if named == setting),
            "{setting}: {refused:?}"
        );
        assert_eq!(dialer.dials(), 0);
    }
}

/// Parks a connection of a provider whose `idle_timeout_ms` is
/// `idle_timeout`, then, 50 ms on, reuses it for a `/hang` stream with
/// `left` to its deadline that nobody reads, and waits for the origin to
/// see the socket closed. Returns by how much the close followed the
/// request's deadline (negative: how much it came before).
async fn close_of_a_reused_connection(idle_timeout: &str, left: Duration) -> (Duration, bool) {
    let (mut origin, pools, receipt, dialer) = one_parked(idle_timeout).await;
    // Well inside the shortest idle timeout used here: the driver runs,
    // so it sleeps until the idle deadline before the next checkout.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let deadline = Instant::now() + left;
    let request = support::running_until(&pools, &receipt, "t", 2, deadline).await;
    let stream = provider_pools_adapters::http_origin::call_streaming(
        &pools,
        &request,
        &dialer,
        get("/hang"),
        BodyLimits::default(),
    )
    .await
    .expect("200");
    assert_eq!(dialer.dials(), 1, "the parked connection was reused");
    // Nobody reads: only the driver can close the socket.
    origin.client_closed().await;
    let now = Instant::now();
    drop(stream);
    if now >= deadline {
        (now - deadline, true)
    } else {
        (deadline - now, false)
    }
}

#[tokio::test]
async fn a_reused_connection_stays_open_past_its_idle_deadline_until_its_requests_deadline() {
    // Parked for 200 ms at most; then used by a request with 1.2 s left.
    let (by, after) = close_of_a_reused_connection("200", Duration::from_millis(1_200)).await;
    assert!(after, "closed {by:?} before the request's deadline");
}

#[tokio::test]
async fn a_reused_connection_closes_at_its_requests_deadline_before_its_idle_deadline() {
    // Parked for up to 30 s; then used by a request with 300 ms left.
    let (by, after) = close_of_a_reused_connection("30000", Duration::from_millis(300)).await;
    assert!(after, "closed {by:?} before the request's deadline");
    assert!(
        by < Duration::from_millis(1_500),
        "closed at the request's deadline, not the idle one: {by:?} after it"
    );
}
