//! The reference server's own bounds, over real loopback sockets: bodies,
//! routes, connections and graceful shutdown.

#[path = "http_support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use provider_pools_control_plane::transport::{
    HttpMethod, HttpResponse, SharedHttpControlPlaneRequest,
};
use provider_pools_control_plane::v1::protocol::ErrorEnvelope;
use provider_pools_control_plane::v1::ServerConfig;
use provider_pools_control_plane::MemoryClient;
use support::server::{serve_with, CountingStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;

fn store() -> Arc<CountingStore> {
    CountingStore::new(Arc::new(MemoryClient::new()))
}

async fn send(base: &str, method: HttpMethod, path: &str, body: &'static [u8]) -> HttpResponse {
    let request = SharedHttpControlPlaneRequest::new(
        method,
        format!("{base}{path}"),
        Bytes::from_static(body),
        Instant::now() + support::WAIT,
    );
    support::transport()
        .send_shared(&request)
        .await
        .unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn code(response: &HttpResponse) -> String {
    serde_json::from_slice::<ErrorEnvelope>(&response.body)
        .expect("a V1 error body")
        .error
        .code
}

/// Writes `bytes` on a new connection and reads the answer to EOF.
async fn raw(base: &str, bytes: &[u8]) -> String {
    let addr = base.strip_prefix("http://").expect("http base");
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("write");
    let mut answer = Vec::new();
    support::bounded("the answer", stream.read_to_end(&mut answer))
        .await
        .expect("read the answer");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_refused_with_413_before_the_store_sees_it() {
    let store = store();
    let (served, _task) = serve_with(store.clone(), ServerConfig::default()).await;
    // Announced: refused from the head, the body never sent.
    let announced = raw(
        &served.base,
        b"POST /v1/leases/acquire HTTP/1.1\r\nHost: x\r\nContent-Length: 65537\r\n\r\n",
    )
    .await;
    assert!(announced.starts_with("HTTP/1.1 413"), "{announced}");
    assert!(announced.contains(r#""code":"too_large""#), "{announced}");
    // Not announced: refused once the 64 KiB have been read.
    let mut chunked = b"POST /v1/leases/acquire HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10001\r\n".to_vec();
    chunked.extend(std::iter::repeat_n(b' ', 65_537));
    let streamed = raw(&served.base, &chunked).await;
    assert!(streamed.starts_with("HTTP/1.1 413"), "{streamed}");
    assert_eq!(store.acquires(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_routes_and_malformed_bodies_are_refused_with_their_codes() {
    let (served, _task) = serve_with(store(), ServerConfig::default()).await;
    let base = &served.base;
    let cases: [(HttpMethod, &str, &'static [u8], u16, &str); 5] = [
        (
            HttpMethod::Get,
            "/v2/presence/billing",
            b"",
            404,
            "protocol",
        ),
        (
            HttpMethod::Post,
            "/v1/presence/billing",
            b"",
            405,
            "protocol",
        ),
        (HttpMethod::Get, "/v1/presence/a%20b", b"", 400, "invalid"),
        (
            HttpMethod::Post,
            "/v1/leases/acquire",
            b"{not json",
            400,
            "invalid",
        ),
        (
            HttpMethod::Post,
            "/v1/leases/acquire",
            br#"{"key":{"scope":"global","name":"x"},"holder":"a","ttl_ms":0}"#,
            400,
            "invalid",
        ),
    ];
    for (method, path, body, status, expected) in cases {
        let response = send(base, method, path, body).await;
        assert_eq!(response.status, status, "{path}");
        assert_eq!(code(&response), expected, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_beyond_the_bound_waits_for_a_slot() {
    let config = ServerConfig {
        max_connections: 1,
        ..ServerConfig::default()
    };
    let (served, _task) = serve_with(store(), config).await;
    let addr = served
        .base
        .strip_prefix("http://")
        .expect("http")
        .to_owned();
    // The first connection is answered and stays open, holding the slot.
    let mut first = TcpStream::connect(&addr).await.expect("connect");
    first
        .write_all(b"GET /v1/presence/billing HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let mut head = [0u8; 12];
    support::bounded("the first answer", first.read_exact(&mut head))
        .await
        .expect("read");
    assert_eq!(&head, b"HTTP/1.1 200");
    let base = served.base.clone();
    let mut second =
        support::task(
            async move { send(&base, HttpMethod::Get, "/v1/presence/billing", b"").await },
        );
    let waited = tokio::time::timeout(Duration::from_millis(300), &mut second).await;
    assert!(
        waited.is_err(),
        "the second connection was served beside the first"
    );
    drop(first);
    let response = support::bounded("the second answer", second)
        .await
        .expect("task");
    assert_eq!(response.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_the_request_in_flight_then_stops() {
    let gate = Arc::new(Notify::new());
    let store = CountingStore::gated(Arc::new(MemoryClient::new()), gate.clone());
    let (served, running) = serve_with(store.clone(), ServerConfig::default()).await;
    let base = served.base.clone();
    let in_flight =
        support::task(
            async move { send(&base, HttpMethod::Get, "/v1/presence/billing", b"").await },
        );
    support::bounded("the request to reach the store", store.entered()).await;
    served.server.shutdown();
    let addr = served
        .base
        .strip_prefix("http://")
        .expect("http")
        .to_owned();
    support::bounded("the listener to close", async {
        while TcpStream::connect(&addr).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    gate.notify_one();
    let response = support::bounded("the request in flight", in_flight)
        .await
        .expect("task");
    assert_eq!(response.status, 200);
    assert_eq!(&response.body[..], br#"{"instances":[]}"#);
    support::bounded("the server task to end", running)
        .await
        .expect("server task");
}
