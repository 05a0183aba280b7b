//! Dials and backoff (paused clock, real refused loopback connections): at
//! most one dial per client in flight, exponential backoff after failures,
//! fixed immediate errors during backoff, and nothing ever retried.

mod support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use provider_pools::{ConnectError, DialErrorKind, Limits, ProviderPools, RunningRequest};
use support::{installation, provider, running, start, tcp_config, TcpDialer};
use tokio::task::JoinSet;

/// A loopback address nothing listens on: connections are refused at once.
async fn refusing_target() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let target = listener.local_addr().expect("addr").to_string();
    drop(listener);
    target
}

async fn refusing_pools(limits: Limits) -> (ProviderPools, provider_pools::InstallReceipt) {
    let pools = start(limits).await;
    let target = refusing_target().await;
    let receipt = pools
        .install(installation(
            &provider("down"),
            0,
            b"k",
            tcp_config("down", &[target]),
        ))
        .await
        .expect("install");
    (pools, receipt)
}

/// Every request asks for a connection at once; returns the error codes.
async fn storm(
    pools: &ProviderPools,
    requests: &[RunningRequest],
    dialer: &Arc<TcpDialer>,
) -> Vec<&'static str> {
    let mut tasks = JoinSet::new();
    for request in requests {
        let (pools, request, dialer) = (pools.clone(), request.clone(), Arc::clone(dialer));
        tasks.spawn(async move {
            pools
                .reserve_connection(&request, dialer.as_ref())
                .await
                .map(|_| ())
                .map_err(|e| e.code())
        });
    }
    let mut codes = Vec::new();
    while let Some(result) = tasks.join_next().await {
        match result.expect("task") {
            Ok(()) => panic!("a refused origin yielded a connection"),
            Err(code) => codes.push(code),
        }
    }
    codes
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_storm_dials_once_per_backoff_window() {
    const REQUESTS: usize = 1_000;
    let limits = Limits {
        pending_requests: 1_024,
        running_requests: 1_024,
        requests_per_tenant: 1_024,
        requests_per_provider: 1_024,
        running_per_tenant: 1_024,
        running_per_provider: 1_024,
        ..Limits::DEFAULT
    };
    let (pools, receipt) = refusing_pools(limits).await;
    let mut requests = Vec::with_capacity(REQUESTS);
    for session in 0..REQUESTS {
        // One tenant each: a tenant's callers on one client count against
        // its connection share, and this storm is about the client.
        let tenant = format!("t{session}");
        requests.push(running(&pools, &receipt, &tenant, session as u64).await);
    }
    let dialer = Arc::new(TcpDialer::default());

    let codes = storm(&pools, &requests, &dialer).await;
    assert_eq!(codes.len(), REQUESTS);
    assert!(codes.iter().all(|c| *c == "unavailable"), "{codes:?}");
    assert_eq!(
        dialer.dials.load(Ordering::SeqCst),
        1,
        "one dial for the whole storm"
    );

    // Within the 100 ms window nothing dials.
    tokio::time::advance(Duration::from_millis(50)).await;
    let codes = storm(&pools, &requests, &dialer).await;
    assert!(codes.iter().all(|c| *c == "unavailable"));
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 1);

    // After the window: exactly one more dial, then a 200 ms window.
    tokio::time::advance(Duration::from_millis(51)).await;
    let codes = storm(&pools, &requests, &dialer).await;
    assert!(codes.iter().all(|c| *c == "unavailable"));
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 2);
    tokio::time::advance(Duration::from_millis(150)).await;
    storm(&pools, &requests, &dialer).await;
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 2, "the window doubled");
    tokio::time::advance(Duration::from_millis(51)).await;
    storm(&pools, &requests, &dialer).await;
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn callers_during_backoff_learn_the_last_error_and_the_time_left() {
    let (pools, receipt) = refusing_pools(Limits::DEFAULT).await;
    let request = running(&pools, &receipt, "t", 1).await;
    let dialer = TcpDialer::default();
    let first = pools.reserve_connection(&request, &dialer).await.err();
    assert!(
        matches!(&first, Some(ConnectError::Dial(e)) if e.kind == DialErrorKind::Refused),
        "{first:?}"
    );
    tokio::time::advance(Duration::from_millis(30)).await;
    assert_eq!(
        pools.reserve_connection(&request, &dialer).await.err(),
        Some(ConnectError::Unavailable {
            kind: DialErrorKind::Refused,
            retry_after: Duration::from_millis(70),
        })
    );
}

/// The backoff window is half-open: at the instant it ends, the next caller
/// dials again (and is not refused with no time left).
#[tokio::test(start_paused = true)]
async fn the_next_dial_is_allowed_at_the_instant_the_backoff_ends() {
    let (pools, receipt) = refusing_pools(Limits::DEFAULT).await;
    let request = running(&pools, &receipt, "t", 1).await;
    let dialer = TcpDialer::default();
    let first = pools.reserve_connection(&request, &dialer).await.err();
    assert!(matches!(first, Some(ConnectError::Dial(_))), "{first:?}");
    // `dial_backoff_initial` (100 ms) from the failure, to the instant.
    tokio::time::advance(Duration::from_millis(100)).await;
    let second = pools.reserve_connection(&request, &dialer).await.err();
    assert!(
        matches!(&second, Some(ConnectError::Dial(e)) if e.kind == DialErrorKind::Refused),
        "a second dial at the end of the window, refused by the origin: {second:?}"
    );
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_to_its_cap_and_a_success_resets_it() {
    let limits = Limits {
        dial_backoff_initial: Duration::from_millis(100),
        dial_backoff_max: Duration::from_millis(400),
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let target = listener.local_addr().expect("addr").to_string();
    drop(listener);
    let receipt = pools
        .install(installation(
            &provider("flaky"),
            0,
            b"k",
            tcp_config("flaky", std::slice::from_ref(&target)),
        ))
        .await
        .expect("install");
    let request = running(&pools, &receipt, "t", 1).await;
    let dialer = TcpDialer::default();

    let mut windows = Vec::new();
    for _ in 0..4 {
        assert!(matches!(
            pools.reserve_connection(&request, &dialer).await,
            Err(ConnectError::Dial(_))
        ));
        match pools.reserve_connection(&request, &dialer).await.err() {
            Some(ConnectError::Unavailable { retry_after, .. }) => {
                windows.push(retry_after);
                tokio::time::advance(retry_after).await;
            }
            other => panic!("expected backoff, got {other:?}"),
        }
    }
    let ms = Duration::from_millis;
    assert_eq!(windows, vec![ms(100), ms(200), ms(400), ms(400)]);

    // The origin comes back: one successful dial resets the backoff.
    let listener = tokio::net::TcpListener::bind(&target)
        .await
        .expect("rebind");
    let conn = pools
        .reserve_connection(&request, &dialer)
        .await
        .expect("origin is back");
    drop(conn);
    drop(listener);
    assert!(matches!(
        pools.reserve_connection(&request, &dialer).await,
        Err(ConnectError::Dial(_))
    ));
    match pools.reserve_connection(&request, &dialer).await.err() {
        Some(ConnectError::Unavailable { retry_after, .. }) => assert_eq!(retry_after, ms(100)),
        other => panic!("expected a fresh 100 ms backoff, got {other:?}"),
    }
}

/// A dialer that never finishes.
#[derive(Clone)]
struct Hanging;

impl provider_pools::Dialer for Hanging {
    type Conn = ();

    async fn dial(
        &self,
        _: provider_pools::DialTarget<'_>,
    ) -> Result<(), provider_pools::DialError> {
        std::future::pending().await
    }
}

/// A dial belongs to the client: its requester leaving cancels nothing; a
/// dial that never connects fails at its own deadline (the queue age in
/// force when it started) as a real timeout, returns its charges and
/// backs the client off.
#[tokio::test(start_paused = true)]
async fn a_hanging_dial_fails_at_its_own_deadline_and_backs_off() {
    let (pools, receipt) = refusing_pools(Limits::DEFAULT).await;
    let request = running(&pools, &receipt, "t", 1).await;
    let started = tokio::time::Instant::now();
    let dial = {
        let (pools, request) = (pools.clone(), request.clone());
        support::task(async move {
            pools
                .reserve_connection(&request, &Hanging)
                .await
                .map(|_| ())
        })
    };
    support::eventually("the dial is in flight", || {
        pools.snapshot().connections.connecting == 1
    })
    .await;
    dial.abort();
    let _ = dial.await;
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        pools.snapshot().connections.connecting,
        1,
        "the requester leaving does not cancel the dial"
    );
    // Its own deadline: the queue age in force when it started.
    tokio::time::sleep_until(started + Limits::DEFAULT.queue_age).await;
    support::eventually("the dial's charge is returned", || {
        pools.snapshot().connections.connecting == 0
    })
    .await;
    // The first request's own deadline has passed by now; a later one
    // meets the backoff.
    let later = running(&pools, &receipt, "t", 2).await;
    assert!(matches!(
        pools.reserve_connection(&later, &Hanging).await,
        Err(ConnectError::Unavailable {
            kind: DialErrorKind::Timeout,
            ..
        })
    ));
}

/// A dialer that runs out of its own room the first time, then connects.
#[derive(Default, Clone)]
struct SaturatedOnce {
    dials: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl provider_pools::Dialer for SaturatedOnce {
    type Conn = ();

    async fn dial(
        &self,
        _: provider_pools::DialTarget<'_>,
    ) -> Result<(), provider_pools::DialError> {
        if self.dials.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(provider_pools::DialError::new(
                DialErrorKind::Saturated,
                "no worker slot",
            ))
        } else {
            Ok(())
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_saturated_adapter_answers_busy_without_backoff() {
    let (pools, receipt) = refusing_pools(Limits::DEFAULT).await;
    let request = running(&pools, &receipt, "t", 1).await;
    let dialer = SaturatedOnce::default();
    let first = pools.reserve_connection(&request, &dialer).await.err();
    assert_eq!(
        first.as_ref().map(ConnectError::code),
        Some("busy"),
        "{first:?}"
    );
    // No backoff: the very next call dials again, at the same instant.
    let conn = pools
        .reserve_connection(&request, &dialer)
        .await
        .expect("no backoff after saturation");
    assert_eq!(dialer.dials.load(Ordering::SeqCst), 2);
    drop(conn);
}
