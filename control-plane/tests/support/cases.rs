//! The behaviours every built-in transport shows against a real origin;
//! each transport's test file runs them on its own transport.

use std::time::Duration;

use provider_pools_control_plane::transport::{HttpMethod, HttpTransport, TransportError};
use tokio::time::Instant;

use super::origin::{Answer, Origin, Recorded};
use super::{bounded, eventually, refused_url, request};

/// The JSON body every round trip sends.
pub(crate) const BODY: &[u8] = br#"{"lease":"leader","node":"n1","ttl_ms":5000}"#;

/// POSTs [`BODY`] and checks what the origin saw and what came back;
/// returns the recorded request for transport-specific checks.
pub(crate) async fn round_trip(transport: &dyn HttpTransport) -> Recorded {
    let origin = Origin::start().await;
    origin.script([Answer::status(200, r#"{"token":7}"#)]);
    let request = request(
        HttpMethod::Post,
        &origin.url("/v1/leases/acquire"),
        BODY,
        Duration::from_secs(5),
    );
    let response = bounded("a round trip", transport.send_shared(&request))
        .await
        .expect("200");
    assert_eq!(response.status, 200);
    assert_eq!(response.body.as_ref(), br#"{"token":7}"#);
    let seen = origin.requests();
    assert_eq!(seen.len(), 1, "exactly one request reached the origin");
    let seen = seen.into_iter().next().expect("one request");
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.target, "/v1/leases/acquire");
    assert_eq!(seen.body, BODY);
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(
        seen.header("content-length"),
        Some(BODY.len().to_string().as_str())
    );
    assert_eq!(
        seen.header("host"),
        Some(origin.address().to_string().as_str())
    );
    seen
}

/// Every status comes back as it was answered, with its body; a redirect
/// is not followed and nothing is retried.
pub(crate) async fn statuses_pass_through(transport: &dyn HttpTransport) {
    let origin = Origin::start().await;
    let statuses = [201, 204, 302, 404, 409, 429, 500, 503];
    origin.script(statuses.map(|status| Answer::Respond {
        status,
        headers: vec![("Location", "/elsewhere")],
        body: if status == 204 {
            Vec::new()
        } else {
            format!("{{\"s\":{status}}}").into_bytes()
        },
    }));
    for status in statuses {
        let request = request(
            HttpMethod::Get,
            &origin.url("/v1/x?q=1"),
            b"",
            Duration::from_secs(5),
        );
        let response = bounded("a status", transport.send_shared(&request))
            .await
            .unwrap_or_else(|error| panic!("status {status}: {error}"));
        assert_eq!(response.status, status);
        let expected = if status == 204 {
            String::new()
        } else {
            format!("{{\"s\":{status}}}")
        };
        assert_eq!(
            response.body.as_ref(),
            expected.as_bytes(),
            "status {status}"
        );
    }
    let seen = origin.requests();
    assert_eq!(
        seen.len(),
        statuses.len(),
        "one request per call: no redirect, no retry"
    );
    assert!(seen
        .iter()
        .all(|r| r.target == "/v1/x?q=1" && r.method == "GET"));
}

/// `transport` was built with a response bound of `limit`: a body of
/// `limit` bytes is read, one byte more is `TooLarge` however it is framed.
pub(crate) async fn over_the_bound_is_too_large(transport: &dyn HttpTransport, limit: usize) {
    let origin = Origin::start().await;
    origin.script([Answer::Declared(limit)]);
    let at_bound = request(
        HttpMethod::Get,
        &origin.url("/v1/big"),
        b"",
        Duration::from_secs(5),
    );
    let response = bounded("a body at the bound", transport.send_shared(&at_bound))
        .await
        .expect("exactly the bound is read");
    assert_eq!(response.body.len(), limit);
    for answer in [
        Answer::Declared(limit + 1),
        Answer::Chunked(limit + 1),
        Answer::UntilClose(limit + 1),
        Answer::Declared(64 * limit),
    ] {
        origin.script([answer.clone()]);
        let over = request(
            HttpMethod::Get,
            &origin.url("/v1/big"),
            b"",
            Duration::from_secs(5),
        );
        let error = bounded("a body over the bound", transport.send_shared(&over))
            .await
            .expect_err("over the bound");
        assert_eq!(error, TransportError::TooLarge { limit }, "{answer:?}");
    }
}

/// Nothing listens: `Connect`, and the request certainly never left.
pub(crate) async fn refused_connect_is_connect(transport: &dyn HttpTransport) {
    let request = request(
        HttpMethod::Post,
        &refused_url(),
        BODY,
        Duration::from_secs(5),
    );
    let error = bounded("a refused connect", transport.send_shared(&request))
        .await
        .expect_err("nothing listens");
    assert!(matches!(error, TransportError::Connect(_)), "{error:?}");
    assert!(error.before_send());
}

/// The origin holds its answer: `Timeout` at the deadline (not before, not
/// much after), and the transport lets go of the connection.
pub(crate) async fn held_answer_times_out(transport: &dyn HttpTransport) {
    let origin = Origin::start().await;
    origin.script([Answer::Hold]);
    let within = Duration::from_millis(300);
    let started = Instant::now();
    let request = request(
        HttpMethod::Post,
        &origin.url("/v1/leases/renew"),
        BODY,
        within,
    );
    let error = bounded("a held answer", transport.send_shared(&request))
        .await
        .expect_err("held past the deadline");
    let elapsed = started.elapsed();
    assert_eq!(error, TransportError::Timeout);
    assert!(
        elapsed >= within - Duration::from_millis(20),
        "returned early: {elapsed:?}"
    );
    assert!(
        elapsed < within + Duration::from_secs(3),
        "returned late: {elapsed:?}"
    );
    assert_eq!(origin.requests().len(), 1, "the request was sent");
    eventually(
        "the origin sees the client close the held connection",
        || origin.closed_by_client() >= 1,
    )
    .await;
}

/// The origin reads the request and closes without answering: `Io`, which
/// may have applied (not a connect failure).
pub(crate) async fn close_without_answer_is_io(transport: &dyn HttpTransport) {
    let origin = Origin::start().await;
    origin.script([Answer::Close]);
    let request = request(
        HttpMethod::Post,
        &origin.url("/v1/leases/release"),
        BODY,
        Duration::from_secs(5),
    );
    let error = bounded("a closed connection", transport.send_shared(&request))
        .await
        .expect_err("no answer");
    assert!(matches!(error, TransportError::Io(_)), "{error:?}");
    assert!(!error.before_send());
    assert_eq!(origin.requests().len(), 1, "the request reached the origin");
}

/// Two sequential requests; returns how many connections the origin
/// accepted for them.
pub(crate) async fn connections_for_two_requests(transport: &dyn HttpTransport) -> usize {
    let origin = Origin::start().await;
    for path in ["/v1/presence/heartbeat", "/v1/presence/discover"] {
        let request = request(
            HttpMethod::Post,
            &origin.url(path),
            BODY,
            Duration::from_secs(5),
        );
        let response = bounded("a sequential request", transport.send_shared(&request))
            .await
            .expect("200");
        assert_eq!(response.status, 200);
    }
    let seen = origin.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].target, "/v1/presence/discover");
    origin.accepted()
}
