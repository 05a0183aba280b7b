//! An attempt's own timeout is not the cycle's deadline: against a loopback
//! server that never answers, 3 attempts of 150 ms with no backoff reach
//! the server 3 times (discovery, registration, heartbeat) for every
//! transport, including an external one that honours its deadline and
//! returns `TransportError::Timeout`. A lease mutation keeps its single
//! attempt.

#[path = "http_support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::client::BoxFuture;
use provider_pools_control_plane::transport::{
    BearerHttpTransport, BearerToken, HttpControlPlaneRequest, HttpResponse, HttpTransport,
    PooledHttpTransport, PooledTransportConfig, StdHttpTransport, TransportError,
};
use provider_pools_control_plane::v1::HttpClientConfig;
use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, LeaseKey, LeaseName, LeaseRequest, NodeId, Registration,
    ServiceGroup,
};
use support::scripted::config;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

/// A loopback server that reads each request and never answers; counts
/// the connections on which a request arrived.
async fn silent() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let arrivals = Arc::new(AtomicUsize::new(0));
    let counted = arrivals.clone();
    support::task(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counted = counted.clone();
            support::task(async move {
                let mut head = [0u8; 4096];
                if matches!(stream.read(&mut head).await, Ok(n) if n > 0) {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
                // Never answered; held for at most 30 s (the test's runtime
                // ends first).
                tokio::time::sleep(Duration::from_secs(30)).await;
                drop(stream);
            });
        }
    });
    (format!("http://{address}"), arrivals)
}

/// An external transport that honours its deadline: it waits until the
/// attempt's time is up, then returns `Timeout`. Counts its calls.
#[derive(Debug, Default)]
struct Honouring {
    calls: AtomicUsize,
}

impl HttpTransport for Honouring {
    fn send(
        &self,
        request: HttpControlPlaneRequest,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(request.timeout).await;
            Err(TransportError::Timeout)
        })
    }
}

fn three_of_150(endpoint: &str) -> HttpClientConfig {
    HttpClientConfig {
        endpoint: endpoint.to_owned(),
        ..config(3, 150, 0, 0)
    }
}

fn registration() -> Registration {
    Registration::new(
        ServiceGroup::new("billing").expect("service"),
        NodeId::new("node-a").expect("node"),
        "10.0.0.1:80",
        Duration::from_secs(30),
    )
    .expect("registration")
}

/// Runs discovery, registration, heartbeat and one acquire; answers the
/// arrivals after each, read by `count`.
async fn arrivals_per_call(
    transport: Arc<dyn HttpTransport>,
    endpoint: &str,
    count: impl Fn() -> usize,
) -> Vec<usize> {
    let client = support::client_over(three_of_150(endpoint), transport);
    let mut seen = Vec::new();
    let mut before = count();
    let service = ServiceGroup::new("billing").expect("service");
    let calls: Vec<BoxFuture<'_, Result<(), ControlPlaneError>>> = vec![
        Box::pin(async { client.discover(service.clone()).await.map(|_| ()) }),
        Box::pin(async { client.register(registration()).await }),
        Box::pin(async { client.heartbeat(registration().key().clone()).await }),
        Box::pin(async {
            let key = LeaseKey::Global(LeaseName::new("scheduler").expect("lease"));
            let request = LeaseRequest::new(
                key,
                NodeId::new("node-a").expect("node"),
                Duration::from_secs(30),
            )
            .expect("request");
            client.acquire(request).await.map(|_| ())
        }),
    ];
    for call in calls {
        let outcome = support::bounded("a call against a silent server", call).await;
        assert!(
            matches!(
                outcome,
                Err(ControlPlaneError::Timeout | ControlPlaneError::OutcomeUnknown { .. })
            ),
            "{outcome:?}"
        );
        // The last attempt's request has arrived before its timeout ended.
        let now = count();
        seen.push(now - before);
        before = now;
    }
    seen
}

const EXPECTED: [usize; 4] = [3, 3, 3, 1];

#[tokio::test]
async fn the_std_transport_retries_attempt_timeouts_within_the_budget() {
    let (endpoint, arrivals) = silent().await;
    let seen = arrivals_per_call(Arc::new(StdHttpTransport::new()), &endpoint, || {
        arrivals.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(seen, EXPECTED);
}

#[tokio::test]
async fn the_pooled_transport_retries_attempt_timeouts_within_the_budget() {
    let (endpoint, arrivals) = silent().await;
    let pooled = PooledHttpTransport::new(PooledTransportConfig::default()).expect("a client");
    let seen = arrivals_per_call(Arc::new(pooled), &endpoint, || {
        arrivals.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(seen, EXPECTED);
}

#[tokio::test]
async fn the_bearer_transport_retries_attempt_timeouts_within_the_budget() {
    let (endpoint, arrivals) = silent().await;
    let pooled = PooledHttpTransport::new(PooledTransportConfig::default()).expect("a client");
    let bearer = BearerHttpTransport::new(pooled, BearerToken::new("t0ken").expect("token"));
    let seen = arrivals_per_call(Arc::new(bearer), &endpoint, || {
        arrivals.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(seen, EXPECTED);
}

#[tokio::test]
async fn an_external_transport_returning_timeout_is_retried_within_the_budget() {
    let honouring = Arc::new(Honouring::default());
    let counted = honouring.clone();
    let seen = arrivals_per_call(honouring, "http://127.0.0.1:1", || {
        counted.calls.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(seen, EXPECTED);
}
