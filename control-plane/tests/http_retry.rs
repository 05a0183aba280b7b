//! The HTTP client's retry schedule, budget (queue wait included), status
//! matrix and overdue answers, under tokio's paused clock with a scripted
//! transport that records when each attempt reached it.

#[path = "http_support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::transport::TransportError;
use provider_pools_control_plane::v1::{HttpClientConfig, HttpControlPlaneClient};
use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, NodeId, PresenceKey, Registration, ServiceGroup,
};
use support::scripted::{config, Reply, ScriptedTransport, NONE_FOUND};
use tokio::time::Instant;

fn client(
    config: HttpClientConfig,
    transport: &Arc<ScriptedTransport>,
) -> Arc<HttpControlPlaneClient> {
    support::client_over(config, transport.clone())
}

fn service(name: &str) -> ServiceGroup {
    ServiceGroup::new(name).expect("valid service")
}

fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).expect("short")
}

/// Waits between consecutive calls, in whole milliseconds (the paused
/// clock moves by timer ticks of 1 ms).
fn waits(transport: &ScriptedTransport) -> Vec<u64> {
    let seen = transport.seen();
    seen.windows(2)
        .map(|pair| ms(pair[1].at - pair[0].at))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn each_wait_lies_within_equal_jitter_of_the_doubling_ceiling() {
    let ceilings = [100u64, 200, 400, 800, 1_000];
    let rounds = 30;
    let mut script = Vec::new();
    for _ in 0..rounds {
        script.extend((0..ceilings.len()).map(|_| Reply::Status(503, "")));
        script.push(Reply::Status(200, NONE_FOUND));
    }
    let transport = ScriptedTransport::new(script);
    let client = client(config(6, 1_000, 100, 1_000), &transport);
    let mut below_ceiling = 0;
    for round in 0..rounds {
        let before = transport.seen().len();
        client
            .discover(service("billing"))
            .await
            .expect("sixth attempt succeeds");
        let seen = transport.seen();
        assert_eq!(seen.len() - before, 6, "round {round}");
        for (retry, pair) in seen[before..].windows(2).enumerate() {
            let (wait, ceiling) = (ms(pair[1].at - pair[0].at), ceilings[retry]);
            assert!(
                (ceiling.div_ceil(2)..=ceiling).contains(&wait),
                "round {round}, retry {}: waited {wait} ms, ceiling {ceiling} ms",
                retry + 1
            );
            below_ceiling += usize::from(wait < ceiling);
        }
    }
    assert!(below_ceiling > 0, "the waits are jittered, not the ceiling");
}

#[tokio::test(start_paused = true)]
async fn the_first_wait_is_capped_by_the_maximum_backoff() {
    let transport =
        ScriptedTransport::new([Reply::Status(503, ""), Reply::Status(200, NONE_FOUND)]);
    let client = client(config(3, 1_000, 5_000, 300), &transport);
    client.discover(service("billing")).await.expect("retried");
    let waits = waits(&transport);
    assert_eq!(waits.len(), 1);
    assert!((150..=300).contains(&waits[0]), "{waits:?}");
}

#[tokio::test(start_paused = true)]
async fn at_most_sixteen_attempts_even_when_a_hundred_are_configured() {
    let transport = ScriptedTransport::new((0..100).map(|_| Reply::Status(503, "")));
    let client = client(config(100, 1_000, 0, 0), &transport);
    let error = client
        .discover(service("billing"))
        .await
        .expect_err("always 503");
    assert!(
        matches!(error, ControlPlaneError::Status { status: 503 }),
        "{error:?}"
    );
    assert_eq!(transport.seen().len(), 16);
}

#[tokio::test(start_paused = true)]
async fn zero_attempts_mean_one() {
    let transport =
        ScriptedTransport::new([Reply::Status(503, ""), Reply::Status(200, NONE_FOUND)]);
    let client = client(config(0, 1_000, 10, 10), &transport);
    let error = client
        .discover(service("billing"))
        .await
        .expect_err("one attempt");
    assert!(
        matches!(error, ControlPlaneError::Status { status: 503 }),
        "{error:?}"
    );
    assert_eq!(transport.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_zero_backoff_stays_zero() {
    let transport = ScriptedTransport::new([
        Reply::Status(503, ""),
        Reply::Status(502, ""),
        Reply::Status(500, ""),
        Reply::Status(200, NONE_FOUND),
    ]);
    let client = client(config(4, 1_000, 0, 0), &transport);
    let started = Instant::now();
    client
        .discover(service("billing"))
        .await
        .expect("fourth succeeds");
    let seen = transport.seen();
    assert_eq!(seen.len(), 4);
    assert!(seen.iter().all(|call| call.at == started), "{seen:?}");
}

#[tokio::test(start_paused = true)]
async fn the_budget_is_capped_at_120_s_from_the_provider_call_including_queue_wait() {
    // 16 × 30 s + 15 × 30 s would be 930 s: the cap is 120 s. The first
    // call holds the worker for 50 s; the second's budget runs meanwhile.
    let mut script = vec![Reply::Stuck(Duration::from_secs(50), 200, NONE_FOUND)];
    script.extend((0..16).map(|_| Reply::Hang));
    let transport = ScriptedTransport::new(script);
    let client = client(config(16, 30_000, 30_000, 30_000), &transport);
    let provider_call = Instant::now();
    let first = client.discover(service("first"));
    let second = client.discover(service("second"));
    let (first, (second, ended)) = tokio::join!(first, async {
        let result = second.await;
        (result, Instant::now())
    });
    assert!(
        matches!(first, Err(ControlPlaneError::Timeout)),
        "{first:?}"
    );
    assert!(
        matches!(second, Err(ControlPlaneError::Timeout)),
        "{second:?}"
    );
    assert_eq!(ended - provider_call, Duration::from_secs(120));
    let attempts: Vec<_> = transport
        .seen()
        .into_iter()
        .filter(|call| call.url.ends_with("/second"))
        .collect();
    assert_eq!(attempts[0].at - provider_call, Duration::from_secs(50));
    assert_eq!(
        attempts.len(),
        2,
        "a 50 s wait leaves room for two attempts"
    );
    for attempt in &attempts {
        assert!(attempt.deadline - provider_call <= Duration::from_secs(120));
    }
}

#[tokio::test(start_paused = true)]
async fn expired_queued_work_never_reaches_the_transport() {
    let transport = ScriptedTransport::new([
        Reply::Stuck(Duration::from_secs(2), 200, NONE_FOUND),
        Reply::Status(200, NONE_FOUND),
    ]);
    // A budget of 1 s: the second call expires while the first holds the
    // worker for 2 s.
    let client = client(config(1, 1_000, 0, 0), &transport);
    let (first, second) = tokio::join!(
        client.discover(service("first")),
        client.discover(service("second"))
    );
    assert!(
        matches!(first, Err(ControlPlaneError::Timeout)),
        "{first:?}"
    );
    assert!(
        matches!(second, Err(ControlPlaneError::Timeout)),
        "{second:?}"
    );
    assert_eq!(transport.calls_to("/second"), 0);
    assert_eq!(transport.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_overdue_success_is_a_timeout_and_ends_the_call() {
    let transport = ScriptedTransport::new([
        Reply::Stuck(Duration::from_millis(1_001), 200, NONE_FOUND),
        Reply::Status(200, NONE_FOUND),
    ]);
    let client = client(config(5, 1_000, 10, 10), &transport);
    let error = client
        .discover(service("billing"))
        .await
        .expect_err("overdue");
    assert!(matches!(error, ControlPlaneError::Timeout), "{error:?}");
    assert_eq!(
        transport.seen().len(),
        1,
        "no attempt after an overdue answer"
    );
}

#[tokio::test(start_paused = true)]
async fn each_transient_status_is_retried() {
    for status in [408, 429, 500, 502, 503, 504] {
        let transport =
            ScriptedTransport::new([Reply::Status(status, ""), Reply::Status(200, NONE_FOUND)]);
        let client = client(config(3, 1_000, 10, 10), &transport);
        client
            .discover(service("billing"))
            .await
            .unwrap_or_else(|error| panic!("{status} then 200: {error:?}"));
        assert_eq!(transport.seen().len(), 2, "{status} is retried");
    }
}

#[tokio::test(start_paused = true)]
async fn other_statuses_return_at_once() {
    for status in [
        301, 400, 401, 403, 404, 405, 409, 410, 413, 422, 501, 505, 507,
    ] {
        let transport =
            ScriptedTransport::new([Reply::Status(status, ""), Reply::Status(200, NONE_FOUND)]);
        let client = client(config(3, 1_000, 10, 10), &transport);
        let error = client
            .discover(service("billing"))
            .await
            .expect_err("refused");
        assert!(
            matches!(error, ControlPlaneError::Status { status: s } if s == status),
            "{status}: {error:?}"
        );
        assert_eq!(transport.seen().len(), 1, "{status} is not retried");
    }
}

#[tokio::test(start_paused = true)]
async fn a_typed_refusal_returns_its_error_at_once() {
    let transport = ScriptedTransport::new([
        Reply::Status(
            404,
            r#"{"error":{"code":"not_registered","message":"service instance is not registered"}}"#,
        ),
        Reply::Status(200, "{}"),
    ]);
    let client = client(config(3, 1_000, 10, 10), &transport);
    let key = PresenceKey {
        service: service("billing"),
        node: NodeId::new("node-a").expect("node"),
    };
    let error = client.heartbeat(key).await.expect_err("refused");
    assert!(
        matches!(error, ControlPlaneError::NotRegistered),
        "{error:?}"
    );
    assert_eq!(transport.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn transport_failures_and_timeouts_are_retried() {
    let failures = [
        Reply::Fail(TransportError::Connect("refused".into())),
        Reply::Fail(TransportError::Io("reset".into())),
        Reply::Fail(TransportError::Timeout),
        Reply::Fail(TransportError::Malformed("garbage".into())),
        Reply::Hang,
    ];
    for failure in failures {
        let transport = ScriptedTransport::new([failure, Reply::Status(200, NONE_FOUND)]);
        let client = client(config(3, 1_000, 10, 10), &transport);
        client
            .discover(service("billing"))
            .await
            .expect("second attempt");
        assert_eq!(transport.seen().len(), 2);
    }
}

#[tokio::test(start_paused = true)]
async fn every_attempt_sends_the_same_body_allocation() {
    let transport = ScriptedTransport::new([
        Reply::Status(503, ""),
        Reply::Status(503, ""),
        Reply::Status(200, "{}"),
    ]);
    let client = client(config(3, 1_000, 10, 10), &transport);
    let registration = Registration::new(
        service("billing"),
        NodeId::new("node-a").expect("node"),
        "10.0.0.7:8443",
        Duration::from_secs(10),
    )
    .expect("registration");
    client.register(registration).await.expect("third attempt");
    let seen = transport.seen();
    assert_eq!(seen.len(), 3);
    assert!(seen[0].body_len > 0);
    assert!(
        seen.iter()
            .all(|call| call.body_ptr == seen[0].body_ptr && call.body_len == seen[0].body_len),
        "one encoded body for every attempt: {seen:?}"
    );
}
