//! `StdHttpTransport`, the one-shot std-only profile, against a real
//! loopback origin: one connection per request with `Connection: close`,
//! statuses passed through, bounded bodies, typed failures, https refused.

mod support;

use std::time::Duration;

use provider_pools_control_plane::transport::{
    Endpoint, HttpControlPlaneRequest, HttpMethod, HttpTransport, StdHttpTransport, TransportError,
};
use provider_pools_control_plane::ErrorCode;
use support::origin::{Answer, Origin};
use support::{bounded, cases, request};

#[tokio::test]
async fn a_request_round_trips_on_its_own_closed_connection() {
    let seen = cases::round_trip(&StdHttpTransport::new()).await;
    assert_eq!(seen.header("connection"), Some("close"));
    assert_eq!(seen.header("accept"), Some("application/json"));
}

#[tokio::test]
async fn each_request_gets_a_new_connection() {
    let accepted = cases::connections_for_two_requests(&StdHttpTransport::new()).await;
    assert_eq!(accepted, 2);
}

#[tokio::test]
async fn statuses_pass_through_unchanged() {
    cases::statuses_pass_through(&StdHttpTransport::new()).await;
}

#[tokio::test]
async fn a_response_over_the_bound_is_too_large() {
    let transport = StdHttpTransport::new()
        .with_max_response_bytes(40 * 1024)
        .expect("40 KiB is under the ceiling");
    cases::over_the_bound_is_too_large(&transport, 40 * 1024).await;
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_failure() {
    cases::refused_connect_is_connect(&StdHttpTransport::new()).await;
}

#[tokio::test]
async fn a_held_answer_times_out_at_the_deadline() {
    cases::held_answer_times_out(&StdHttpTransport::new()).await;
}

#[tokio::test]
async fn a_close_without_answer_is_an_io_failure() {
    cases::close_without_answer_is_io(&StdHttpTransport::new()).await;
}

#[tokio::test]
async fn the_owned_method_sends_the_same_request() {
    let origin = Origin::start().await;
    origin.script([Answer::status(409, r#"{"code":"lease_held"}"#)]);
    let owned = HttpControlPlaneRequest {
        method: HttpMethod::Put,
        url: origin.url("/v1/leases/renew"),
        body: cases::BODY.to_vec(),
        timeout: Duration::from_secs(5),
    };
    let response = bounded("an owned request", StdHttpTransport::new().send(owned))
        .await
        .expect("an answer");
    assert_eq!(response.status, 409);
    let seen = origin.requests();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].body.as_slice()),
        ("PUT", cases::BODY)
    );
}

#[tokio::test]
async fn a_chunked_answer_is_decoded() {
    let origin = Origin::start().await;
    origin.script([Answer::Chunked(40_000)]);
    let request = request(
        HttpMethod::Get,
        &origin.url("/v1/x"),
        b"",
        Duration::from_secs(5),
    );
    let response = bounded(
        "a chunked answer",
        StdHttpTransport::new().send_shared(&request),
    )
    .await
    .expect("decoded");
    assert_eq!(response.body.len(), 40_000);
    assert!(response.body.iter().all(|&b| b == b'x'));
}

#[tokio::test]
async fn https_is_refused_before_connecting() {
    let origin = Origin::start().await;
    let url = origin.url("/v1/x").replace("http://", "https://");
    let request = request(HttpMethod::Get, &url, b"", Duration::from_secs(5));
    let error = bounded(
        "an https request",
        StdHttpTransport::new().send_shared(&request),
    )
    .await
    .expect_err("plain http only");
    assert!(
        matches!(error, TransportError::Connect(ref text) if text.contains("plain http")),
        "{error:?}"
    );
    assert_eq!(origin.accepted(), 0, "nothing was dialled");

    let transport = StdHttpTransport::new();
    let https = Endpoint::parse("https://cp.example.com").expect("endpoint");
    let refused = transport
        .check_endpoint(&https)
        .expect_err("https endpoint");
    assert_eq!(refused.code(), ErrorCode::Invalid);
    transport
        .check_endpoint(&Endpoint::parse("http://127.0.0.1:1").expect("endpoint"))
        .expect("loopback http");
}

#[tokio::test]
async fn a_deadline_already_passed_never_dials() {
    let origin = Origin::start().await;
    let request = request(HttpMethod::Get, &origin.url("/v1/x"), b"", Duration::ZERO);
    let error = bounded(
        "an expired request",
        StdHttpTransport::new().send_shared(&request),
    )
    .await
    .expect_err("expired");
    assert_eq!(error, TransportError::Timeout);
    assert_eq!(origin.accepted(), 0);
}
