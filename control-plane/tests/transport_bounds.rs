//! Size bounds of the transports: every setter refuses a value above its
//! documented ceiling, and no transport allocates a length the peer only
//! announced. A counting global allocator records every byte allocated
//! while a response that announces 60 MiB (and sends 2 bytes) is read under
//! a 64 MiB bound: well under 1 MiB when buffers grow as bytes arrive.

mod support;

use std::alloc::System;
use std::time::Duration;

use provider_pools_control_plane::transport::{
    HttpMethod, HttpTransport, PooledHttpTransport, PooledTransportConfig, StdHttpTransport,
    MAX_POOL_MAX_IDLE_PER_HOST, MAX_RESPONSE_BYTES_CEILING,
};
use provider_pools_control_plane::ErrorCode;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};
use support::{bounded, request, task};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ANNOUNCED: usize = 60 * 1024 * 1024;

/// A loopback origin that announces [`ANNOUNCED`] bytes, sends two and
/// closes; answers its URL.
async fn liar() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    task(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head).await;
            let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {ANNOUNCED}\r\n\r\n{{}}");
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    });
    format!("http://{address}/v1/discover")
}

/// The bytes allocated (by every thread) while `transport` reads the liar.
async fn largest_allocation_reading_a_liar(transport: &dyn HttpTransport) -> usize {
    let url = liar().await;
    let request = request(HttpMethod::Get, &url, b"", Duration::from_secs(5));
    let region = Region::new(GLOBAL);
    let outcome = bounded("a short body", transport.send_shared(&request)).await;
    let largest = region.change().bytes_allocated;
    assert!(
        outcome.is_err(),
        "a body cut short is an error: {outcome:?}"
    );
    largest
}

#[tokio::test]
async fn the_std_transport_never_allocates_an_announced_length() {
    let transport = StdHttpTransport::new()
        .with_max_response_bytes(MAX_RESPONSE_BYTES_CEILING)
        .expect("the ceiling itself is allowed");
    let largest = largest_allocation_reading_a_liar(&transport).await;
    assert!(largest < 1024 * 1024, "allocated {largest} bytes reading 2");
}

#[tokio::test]
async fn the_pooled_transport_never_allocates_an_announced_length() {
    let config = PooledTransportConfig::default()
        .with_max_response_bytes(MAX_RESPONSE_BYTES_CEILING)
        .expect("the ceiling itself is allowed");
    let transport = PooledHttpTransport::new(config).expect("a client");
    let largest = largest_allocation_reading_a_liar(&transport).await;
    assert!(largest < 1024 * 1024, "allocated {largest} bytes reading 2");
}

#[test]
fn response_bounds_above_their_ceiling_are_refused() {
    for bytes in [0, MAX_RESPONSE_BYTES_CEILING + 1, usize::MAX] {
        let std = StdHttpTransport::new().with_max_response_bytes(bytes);
        let error = std.expect_err("refused");
        assert_eq!(error.code(), ErrorCode::Invalid);
        assert!(error.to_string().contains("max_response_bytes"), "{error}");
        let pooled = PooledTransportConfig::default().with_max_response_bytes(bytes);
        let error = pooled.expect_err("refused");
        assert_eq!(error.code(), ErrorCode::Invalid);
        assert!(error.to_string().contains("max_response_bytes"), "{error}");
    }
}

#[test]
fn idle_connection_counts_above_their_ceiling_are_refused() {
    let config = PooledTransportConfig::default();
    assert!(config
        .clone()
        .with_pool_max_idle_per_host(MAX_POOL_MAX_IDLE_PER_HOST)
        .is_ok());
    let error = config
        .with_pool_max_idle_per_host(MAX_POOL_MAX_IDLE_PER_HOST + 1)
        .expect_err("refused");
    assert!(
        error.to_string().contains("pool_max_idle_per_host"),
        "{error}"
    );
}
