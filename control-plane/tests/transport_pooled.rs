//! `PooledHttpTransport`, one reused reqwest client, against a real
//! loopback origin: connections kept alive and reused, statuses passed
//! through (redirects not followed), bounded bodies, typed failures, and
//! plain http off loopback refused before any dial.

mod support;

use std::time::Duration;

use provider_pools_control_plane::transport::{
    HttpControlPlaneRequest, HttpMethod, HttpTransport, PooledHttpTransport, PooledTransportConfig,
    TransportError,
};
use support::origin::Origin;
use support::{bounded, cases, request};

fn pooled() -> PooledHttpTransport {
    PooledHttpTransport::new(PooledTransportConfig::default()).expect("a client")
}

#[tokio::test]
async fn a_request_round_trips_with_its_json_headers() {
    let seen = cases::round_trip(&pooled()).await;
    assert_eq!(seen.header("accept"), Some("application/json"));
    assert_eq!(seen.header("authorization"), None);
}

#[tokio::test]
async fn two_requests_reuse_one_connection() {
    let accepted = cases::connections_for_two_requests(&pooled()).await;
    assert_eq!(
        accepted, 1,
        "the second request went out on the kept-alive connection"
    );
}

#[tokio::test]
async fn clones_share_one_connection_pool() {
    let origin = Origin::start().await;
    let first = pooled();
    let second = first.clone();
    for transport in [&first, &second] {
        let request = request(
            HttpMethod::Get,
            &origin.url("/v1/x"),
            b"",
            Duration::from_secs(5),
        );
        bounded("a request", transport.send_shared(&request))
            .await
            .expect("200");
    }
    assert_eq!(origin.accepted(), 1);
}

#[tokio::test]
async fn without_idle_connections_each_request_dials() {
    let config = PooledTransportConfig::default()
        .with_pool_max_idle_per_host(0)
        .expect("zero idle is allowed");
    let transport = PooledHttpTransport::new(config).expect("a client");
    assert_eq!(cases::connections_for_two_requests(&transport).await, 2);
}

#[tokio::test]
async fn statuses_pass_through_and_redirects_are_not_followed() {
    cases::statuses_pass_through(&pooled()).await;
}

#[tokio::test]
async fn a_response_over_the_bound_is_too_large() {
    let config = PooledTransportConfig::default()
        .with_max_response_bytes(40 * 1024)
        .expect("40 KiB is under the ceiling");
    let transport = PooledHttpTransport::new(config).expect("a client");
    cases::over_the_bound_is_too_large(&transport, 40 * 1024).await;
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_failure() {
    cases::refused_connect_is_connect(&pooled()).await;
}

#[tokio::test]
async fn a_held_answer_times_out_at_the_deadline() {
    cases::held_answer_times_out(&pooled()).await;
}

#[tokio::test]
async fn a_close_without_answer_is_an_io_failure() {
    cases::close_without_answer_is_io(&pooled()).await;
}

#[tokio::test]
async fn the_owned_method_sends_the_same_request() {
    let origin = Origin::start().await;
    let owned = HttpControlPlaneRequest {
        method: HttpMethod::Delete,
        url: origin.url("/v1/presence/billing/n1"),
        body: Vec::new(),
        timeout: Duration::from_secs(5),
    };
    let response = bounded("an owned request", pooled().send(owned))
        .await
        .expect("200");
    assert_eq!(response.status, 200);
    assert_eq!(origin.requests()[0].method, "DELETE");
}

#[tokio::test]
async fn plain_http_off_loopback_is_refused_before_any_dial() {
    // 192.0.2.0/24 is TEST-NET-1: never dialled, the check comes first.
    let request = request(
        HttpMethod::Post,
        "http://192.0.2.1:8080/v1/leases/acquire",
        cases::BODY,
        Duration::from_secs(5),
    );
    let error = bounded(
        "an off-loopback http request",
        pooled().send_shared(&request),
    )
    .await
    .expect_err("refused");
    assert!(
        matches!(error, TransportError::Connect(ref text) if text.contains("loopback")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_zero_connect_timeout_is_refused() {
    let config = PooledTransportConfig::default().with_connect_timeout(Duration::ZERO);
    let error = PooledHttpTransport::new(config).expect_err("zero");
    assert!(error.to_string().contains("connect_timeout"), "{error}");
}
