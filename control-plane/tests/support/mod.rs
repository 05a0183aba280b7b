//! Test support for the transport tests: the scripted origin, a test CA,
//! bounded waits, and the checks every transport must pass.

#![allow(dead_code, reason = "each test binary uses part of the support")]

pub(crate) mod cases;
pub(crate) mod origin;
pub(crate) mod tls;

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use provider_pools_control_plane::transport::{HttpMethod, SharedHttpControlPlaneRequest};
use tokio::time::Instant;

/// The bound on any wait for real I/O in these tests.
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// Runs `future` with a bound, failing with `what` if it does not finish.
pub(crate) async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {WAIT:?}: {what}"))
}

/// The workspace's one bounded poll.
#[allow(unused_imports, reason = "each test binary uses part of the support")]
pub(crate) use provider_pools_test_peers::eventually;

/// Runs `future` as a task of the test's runtime.
#[allow(clippy::disallowed_methods, reason = "tests own their tasks")]
pub(crate) fn task<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(future)
}

/// A request to `url` with `body`, due `within` from now.
pub(crate) fn request(
    method: HttpMethod,
    url: &str,
    body: &'static [u8],
    within: Duration,
) -> SharedHttpControlPlaneRequest {
    SharedHttpControlPlaneRequest::new(
        method,
        url,
        Bytes::from_static(body),
        Instant::now() + within,
    )
}

/// A loopback URL on which nothing listens: a port bound, then released.
pub(crate) fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    drop(listener);
    format!("http://{address}/v1/leases/acquire")
}
