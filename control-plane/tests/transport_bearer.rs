//! `BearerHttpTransport`: the pooled transport's reused client plus
//! `Authorization: Bearer`, seen by the origin and never shown in `Debug`
//! or errors.

mod support;

use std::time::Duration;

use provider_pools_control_plane::transport::{
    BearerHttpTransport, BearerToken, HttpMethod, HttpTransport, PooledHttpTransport,
    PooledTransportConfig,
};
use support::origin::Origin;
use support::{bounded, cases, refused_url, request};

const TOKEN: &str = "cp-token.7Hq2-xZ_9~a+b/c=";

fn bearer_with(config: PooledTransportConfig) -> BearerHttpTransport {
    let pooled = PooledHttpTransport::new(config).expect("a client");
    BearerHttpTransport::new(pooled, BearerToken::new(TOKEN).expect("a token"))
}

fn bearer() -> BearerHttpTransport {
    bearer_with(PooledTransportConfig::default())
}

#[tokio::test]
async fn the_origin_sees_the_bearer_token() {
    let seen = cases::round_trip(&bearer()).await;
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
}

#[test]
fn debug_never_shows_the_token() {
    let transport = bearer();
    let text = format!("{transport:?}");
    assert!(!text.contains(TOKEN) && !text.contains("7Hq2"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
    let token = BearerToken::new(TOKEN).expect("a token");
    assert_eq!(format!("{token:?}"), "BearerToken(<redacted>)");
}

#[tokio::test]
async fn errors_never_show_the_token() {
    let transport = bearer();
    let request = request(
        HttpMethod::Post,
        &refused_url(),
        cases::BODY,
        Duration::from_secs(5),
    );
    let error = bounded("a refused connect", transport.send_shared(&request))
        .await
        .expect_err("nothing listens");
    assert!(!error.to_string().contains("7Hq2"), "{error}");
    assert!(!format!("{error:?}").contains("7Hq2"), "{error:?}");
}

#[tokio::test]
async fn the_bearer_transport_shares_the_pooled_client_and_its_connections() {
    let origin = Origin::start().await;
    let pooled = PooledHttpTransport::new(PooledTransportConfig::default()).expect("a client");
    let bearer = BearerHttpTransport::new(pooled.clone(), BearerToken::new(TOKEN).expect("token"));
    let plain = request(
        HttpMethod::Get,
        &origin.url("/v1/x"),
        b"",
        Duration::from_secs(5),
    );
    bounded("unauthenticated", pooled.send_shared(&plain))
        .await
        .expect("200");
    bounded("authenticated", bearer.send_shared(&plain))
        .await
        .expect("200");
    assert_eq!(origin.accepted(), 1, "one connection for both");
    let seen = origin.requests();
    assert_eq!(seen[0].header("authorization"), None);
    assert_eq!(
        seen[1].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
}

#[tokio::test]
async fn two_requests_reuse_one_connection() {
    assert_eq!(cases::connections_for_two_requests(&bearer()).await, 1);
}

#[tokio::test]
async fn statuses_pass_through_and_redirects_are_not_followed() {
    cases::statuses_pass_through(&bearer()).await;
}

#[tokio::test]
async fn a_response_over_the_bound_is_too_large() {
    let transport = bearer_with(
        PooledTransportConfig::default()
            .with_max_response_bytes(40 * 1024)
            .expect("40 KiB is under the ceiling"),
    );
    cases::over_the_bound_is_too_large(&transport, 40 * 1024).await;
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_failure() {
    cases::refused_connect_is_connect(&bearer()).await;
}

#[tokio::test]
async fn a_held_answer_times_out_at_the_deadline() {
    cases::held_answer_times_out(&bearer()).await;
}
