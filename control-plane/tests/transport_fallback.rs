//! An external transport that implements only the original owned `send`
//! still serves shared requests through the default `send_shared`.

mod support;

use std::sync::Mutex;
use std::time::Duration;

use provider_pools_control_plane::transport::{
    HttpControlPlaneRequest, HttpMethod, HttpResponse, HttpTransport, PooledHttpTransport,
    PooledTransportConfig, TransportError,
};
use provider_pools_control_plane::BoxFuture;
use support::origin::Origin;
use support::{bounded, cases, request};

/// Records the owned requests it is handed and answers 202.
#[derive(Debug, Default)]
struct Recording {
    seen: Mutex<Vec<HttpControlPlaneRequest>>,
}

impl HttpTransport for Recording {
    fn send(
        &self,
        request: HttpControlPlaneRequest,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        self.seen.lock().expect("seen").push(request);
        Box::pin(async {
            Ok(HttpResponse {
                status: 202,
                body: bytes::Bytes::from_static(b"{}"),
            })
        })
    }
}

/// Hands owned requests to another transport's owned method.
#[derive(Debug)]
struct OwnedOnly(PooledHttpTransport);

impl HttpTransport for OwnedOnly {
    fn send(
        &self,
        request: HttpControlPlaneRequest,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        self.0.send(request)
    }
}

#[tokio::test]
async fn an_owned_only_transport_receives_a_copy_of_the_shared_request() {
    let transport = Recording::default();
    let shared = request(
        HttpMethod::Put,
        "http://127.0.0.1:9/v1/leases/renew",
        cases::BODY,
        Duration::from_secs(2),
    );
    let response = transport.send_shared(&shared).await.expect("answered");
    assert_eq!(response.status, 202);
    let seen = transport.seen.lock().expect("seen");
    let owned = &seen[0];
    assert_eq!(owned.method, HttpMethod::Put);
    assert_eq!(owned.url, shared.url());
    assert_eq!(owned.body, cases::BODY);
    assert!(owned.timeout <= Duration::from_secs(2) && owned.timeout > Duration::from_secs(1));
}

#[tokio::test]
async fn an_owned_only_transport_reaches_a_real_origin_through_the_fallback() {
    let origin = Origin::start().await;
    let transport =
        OwnedOnly(PooledHttpTransport::new(PooledTransportConfig::default()).expect("client"));
    let shared = request(
        HttpMethod::Post,
        &origin.url("/v1/leases/acquire"),
        cases::BODY,
        Duration::from_secs(5),
    );
    let response = bounded("a fallback send", transport.send_shared(&shared))
        .await
        .expect("200");
    assert_eq!(response.status, 200);
    assert_eq!(origin.requests()[0].body, cases::BODY);
}
