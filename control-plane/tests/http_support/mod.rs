//! Support of the HTTP tests: the pooled transport, a scripted transport
//! for paused-clock tests, and a reference server on a free loopback port.
//!
//! The end-to-end tests reach the server only through [`transport`]: to run
//! them over another transport (the pooled one), change that function.

#![allow(dead_code, unreachable_pub)]

pub mod scripted;
#[cfg(feature = "server")]
pub mod server;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::transport::HttpTransport;
use provider_pools_control_plane::v1::{HttpClientConfig, HttpControlPlaneClient};
use provider_pools_control_plane::{PooledHttpTransport, PooledTransportConfig};

/// Longest a test waits for real I/O.
pub const WAIT: Duration = Duration::from_secs(10);

/// The transport of every end-to-end test.
pub fn transport() -> Arc<dyn HttpTransport> {
    Arc::new(PooledHttpTransport::new(PooledTransportConfig::default()).expect("pooled transport"))
}

/// Spawns a task the test owns.
#[allow(clippy::disallowed_methods, reason = "tests own their tasks")]
pub fn task<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(future)
}

/// A client of `config` over `transport`, its worker spawned.
pub fn client_over(
    config: HttpClientConfig,
    transport: Arc<dyn HttpTransport>,
) -> Arc<HttpControlPlaneClient> {
    let (client, worker) = HttpControlPlaneClient::new(config, transport).expect("valid config");
    task(worker.run());
    Arc::new(client)
}

/// Awaits `future` at most [`WAIT`], panicking with `what` after.
pub async fn bounded<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {WAIT:?}"))
}
