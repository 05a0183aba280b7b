//! Lease mutations over HTTP: exactly one attempt whatever the retry
//! configuration; an answer lost after the server applied the mutation is
//! an unknown outcome, never replayed, and settled by reading back.

#[path = "http_support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::client::acquire_guarded;
use provider_pools_control_plane::transport::TransportError;
use provider_pools_control_plane::v1::{HttpClientConfig, HttpControlPlaneClient};
use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, FencingToken, LeaseGrant, LeaseKey, LeaseName, LeaseRequest,
    MemoryClient, NodeId, SkewMargin,
};
use support::scripted::{config, Reply, ScriptedTransport};
use support::server::{serve, CountingStore, LosingTransport};

/// Five attempts configured: lease mutations must still make one.
fn five_attempts(endpoint: &str) -> HttpClientConfig {
    HttpClientConfig {
        endpoint: endpoint.to_owned(),
        ..config(5, 1_000, 10, 10)
    }
}

fn node(name: &str) -> NodeId {
    NodeId::new(name).expect("valid node")
}

fn key(name: &str) -> LeaseKey {
    LeaseKey::Global(LeaseName::new(name).expect("valid lease"))
}

fn request(name: &str, holder: &str) -> LeaseRequest {
    LeaseRequest::new(key(name), node(holder), Duration::from_secs(30)).expect("request")
}

fn grant() -> LeaseGrant {
    LeaseGrant {
        key: key("scheduler"),
        holder: node("node-a"),
        token: FencingToken(3),
        ttl: Duration::from_secs(30),
    }
}

fn scripted(reply: Reply) -> (Arc<ScriptedTransport>, Arc<HttpControlPlaneClient>) {
    let transport = ScriptedTransport::new([reply, Reply::Status(200, "{}")]);
    let client = support::client_over(five_attempts("http://127.0.0.1:1"), transport.clone());
    (transport, client)
}

fn is_unknown(result: Result<impl std::fmt::Debug, ControlPlaneError>, operation: &str) {
    match result {
        Err(ControlPlaneError::OutcomeUnknown { operation: op }) if op == operation => {}
        other => panic!("{operation}: expected an unknown outcome, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_transient_status_gets_one_attempt_and_an_unknown_outcome() {
    let (transport, client) = scripted(Reply::Status(503, ""));
    is_unknown(
        client.acquire(request("scheduler", "node-a")).await,
        "acquire",
    );
    assert_eq!(transport.seen().len(), 1);
    let (transport, client) = scripted(Reply::Status(503, ""));
    is_unknown(client.renew(grant()).await, "renew");
    assert_eq!(transport.seen().len(), 1);
    let (transport, client) = scripted(Reply::Status(503, ""));
    is_unknown(client.release(grant()).await, "release");
    assert_eq!(transport.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_or_a_failure_after_sending_is_an_unknown_outcome() {
    for reply in [
        Reply::Hang,
        Reply::Fail(TransportError::Io("reset".into())),
        Reply::Fail(TransportError::Timeout),
        Reply::Stuck(Duration::from_millis(1_001), 200, "{}"),
    ] {
        let (transport, client) = scripted(reply);
        is_unknown(client.release(grant()).await, "release");
        assert_eq!(transport.seen().len(), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn a_refused_connection_did_not_apply_and_is_not_retried() {
    let (transport, client) = scripted(Reply::Fail(TransportError::Connect("refused".into())));
    let error = client
        .acquire(request("scheduler", "node-a"))
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ControlPlaneError::Transport(_)),
        "{error:?}"
    );
    assert_eq!(transport.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_lease_refusal_is_its_typed_error() {
    let (transport, client) = scripted(Reply::Status(
        409,
        r#"{"error":{"code":"lease_held","message":"held","holder":"node-b","token":9}}"#,
    ));
    let error = client
        .acquire(request("scheduler", "node-a"))
        .await
        .expect_err("held");
    assert!(
        matches!(&error, ControlPlaneError::LeaseHeld { holder, token } if holder.as_str() == "node-b" && *token == FencingToken(9)),
        "{error:?}"
    );
    assert_eq!(transport.seen().len(), 1);
}

/// A reference server over a counting in-memory store, and a client whose
/// transport can lose an answer after the server applied its request.
async fn lossy() -> (
    Arc<CountingStore>,
    support::server::Served,
    Arc<LosingTransport>,
    Arc<HttpControlPlaneClient>,
) {
    let store = CountingStore::new(Arc::new(MemoryClient::new()));
    let served = serve(store.clone()).await;
    let transport = LosingTransport::new(support::transport());
    let client = support::client_over(five_attempts(&served.base), transport.clone());
    (store, served, transport, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_acquire_answer_is_unknown_and_never_replayed() {
    let (store, _served, transport, client) = lossy().await;
    transport.lose_next_answer();
    let result = support::bounded(
        "the acquire",
        client.acquire(request("scheduler", "node-a")),
    )
    .await;
    is_unknown(result, "acquire");
    let lost = transport.lost();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].status, 200, "the server applied the acquire");
    assert_eq!(store.acquires(), 1, "the acquire reached the store once");
    let state = support::bounded("the read-back", client.read_lease(key("scheduler")))
        .await
        .expect("read")
        .expect("acquired");
    assert!(
        state.is_held_by(&node("node-a"), FencingToken(1)),
        "{state:?}"
    );
    assert_eq!(store.acquires(), 1, "reading back replays nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_guarded_settles_a_lost_answer_into_a_guard_with_the_right_token() {
    let (store, _served, transport, client) = lossy().await;
    // Token 1 goes to node-a, which releases it: node-b's acquisition is 2.
    let first = client
        .acquire(request("scheduler", "node-a"))
        .await
        .expect("acquired");
    client.release(first).await.expect("released");
    transport.lose_next_answer();
    let guard = support::bounded(
        "the guarded acquire",
        acquire_guarded(
            &*client,
            request("scheduler", "node-b"),
            SkewMargin::default(),
        ),
    )
    .await
    .expect("settled by reading back");
    assert_eq!(transport.lost().len(), 1, "node-b's answer was lost");
    assert_eq!(guard.token(), FencingToken(2));
    assert_eq!(guard.grant().holder, node("node-b"));
    assert!(guard.check().is_ok(), "fresh guard is safe");
    assert_eq!(store.acquires(), 2, "one acquire each, none replayed");
}

const ANOTHER_KEY: &str =
    r#"{"key":{"scope":"global","name":"other"},"holder":"node-a","token":3,"ttl_ms":30000}"#;
const ANOTHER_HOLDER: &str =
    r#"{"key":{"scope":"global","name":"scheduler"},"holder":"node-b","token":3,"ttl_ms":30000}"#;
const TOKEN_ZERO: &str =
    r#"{"key":{"scope":"global","name":"scheduler"},"holder":"node-a","token":0,"ttl_ms":30000}"#;
const LONGER_TTL: &str = r#"{"key":{"scope":"global","name":"scheduler"},"holder":"node-a","token":3,"ttl_ms":86400000}"#;
const TOKEN_THREE: &str =
    r#"{"key":{"scope":"global","name":"scheduler"},"holder":"node-a","token":3,"ttl_ms":30000}"#;
const TOKEN_TWO: &str =
    r#"{"key":{"scope":"global","name":"scheduler"},"holder":"node-a","token":2,"ttl_ms":30000}"#;

fn is_protocol<T: std::fmt::Debug>(result: Result<T, ControlPlaneError>, what: &str) {
    match result {
        Err(ControlPlaneError::Protocol(_)) => {}
        other => panic!("{what}: expected a protocol error, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_grant_that_does_not_answer_the_request_is_a_protocol_error() {
    for (body, what) in [
        (ANOTHER_KEY, "another key"),
        (ANOTHER_HOLDER, "another holder"),
        (TOKEN_ZERO, "token 0"),
        (LONGER_TTL, "a longer ttl"),
    ] {
        let (_, client) = scripted(Reply::Status(200, body));
        is_protocol(client.acquire(request("scheduler", "node-a")).await, what);
        let (_, client) = scripted(Reply::Status(200, body));
        let guarded = acquire_guarded(
            client.as_ref(),
            request("scheduler", "node-a"),
            SkewMargin(Duration::from_secs(1)),
        )
        .await;
        is_protocol(guarded, what);
    }
}

#[tokio::test(start_paused = true)]
async fn a_fencing_token_below_the_last_seen_is_a_protocol_error() {
    let transport = ScriptedTransport::new([
        Reply::Status(200, TOKEN_THREE),
        Reply::Status(200, TOKEN_TWO),
        Reply::Status(200, TOKEN_TWO),
    ]);
    let client = support::client_over(five_attempts("http://127.0.0.1:1"), transport);
    let first = client.acquire(request("scheduler", "node-a")).await;
    assert_eq!(first.expect("token 3").token, FencingToken(3));
    is_protocol(
        client.acquire(request("scheduler", "node-a")).await,
        "a regression",
    );
    is_protocol(client.renew(grant()).await, "a renewal changing its token");
}

const TWICE: &str = r#"{"instances":[{"service":"billing","node":"n1","address":"a:1","ttl_ms":1000},{"service":"billing","node":"n1","address":"a:2","ttl_ms":1000}]}"#;
const FOREIGN: &str =
    r#"{"instances":[{"service":"other","node":"n1","address":"a:1","ttl_ms":1000}]}"#;

#[tokio::test(start_paused = true)]
async fn a_discovery_answer_with_duplicate_nodes_or_another_service_is_refused() {
    let service = provider_pools_control_plane::ServiceGroup::new("billing").expect("service");
    for body in [TWICE, FOREIGN] {
        let (_, client) = scripted(Reply::Status(200, body));
        is_protocol(client.discover(service.clone()).await, body);
    }
}
