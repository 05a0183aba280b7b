//! The HTTP adapter in tower: the buffered adapter as a
//! tower service under a tower-http layer, and the admission layer around
//! hyper-util's pooled client, each against a real loopback hyper server.
//!
//! - The service runs one buffered call on an owned connection, its
//!   response body holding the running request until dropped.
//! - The layer admits every call of the inner client fairly per tenant:
//!   the server never sees more at once than the running ceiling, a
//!   lighter tenant gets its turns under a flood, and the running request
//!   is held until the response body is dropped.
//! - A request without a plan is refused before anything is charged; an
//!   inner call without an answer by the plan's deadline is `Timeout`.

mod support;

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use provider_pools_actors::{Limits, OriginKind};
use provider_pools_adapters::http_origin::{AdmissionLayer, BodyLimits, HttpService, ServiceError};
use support::origin::Origin;
use support::{bounded, eventually, install, plan, plan_until, start, task, AllowAll};
use tower::ServiceExt;
use tower_layer::Layer;

/// A loopback server that counts the requests it serves at once: `/slow`
/// answers after 50 ms, `/never` never answers; it records the order in
/// which tenants (`?tenant=`) were answered.
struct Counting {
    url: String,
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    answered: Arc<Mutex<Vec<String>>>,
}

impl Counting {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let answered = Arc::new(Mutex::new(Vec::new()));
        let shared = (Arc::clone(&now), Arc::clone(&most), Arc::clone(&answered));
        task(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (now, most, answered) = (
                    Arc::clone(&shared.0),
                    Arc::clone(&shared.1),
                    Arc::clone(&shared.2),
                );
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        let (now, most, answered) =
                            (Arc::clone(&now), Arc::clone(&most), Arc::clone(&answered));
                        async move {
                            let at = now.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(at, Ordering::SeqCst);
                            if request.uri().path() == "/never" {
                                std::future::pending::<()>().await;
                            }
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            let tenant = request
                                .uri()
                                .query()
                                .unwrap_or("")
                                .trim_start_matches("tenant=")
                                .to_owned();
                            answered.lock().expect("log").push(tenant);
                            now.fetch_sub(1, Ordering::SeqCst);
                            Ok::<_, Infallible>(hyper::Response::new(Full::new(
                                Bytes::from_static(b"done"),
                            )))
                        }
                    },
                );
                task(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            url,
            now,
            most,
            answered,
        }
    }
}

type Layered = provider_pools_adapters::http_origin::Admitted<
    Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>,
>;

/// Pools with provider `web` at `server`, and hyper-util's pooled client
/// behind the admission layer for it.
async fn layered_client(
    server: &Counting,
    limits: Limits,
) -> (provider_pools_actors::ProviderPools, Layered) {
    let pools = start(limits).await;
    let receipt = install(&pools, &server.url, &[], b"k").await;
    let layer = AdmissionLayer::new(
        &pools,
        &receipt.provider,
        receipt.slots[0],
        OriginKind::Http,
        Arc::new(AllowAll),
    );
    let client = layer.layer(Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>());
    (pools, client)
}

/// An origin, pools with provider `web` at it, and the tower service
/// bound to it.
async fn served() -> (Origin, provider_pools_actors::ProviderPools, HttpService) {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let service = HttpService::new(
        &pools,
        &receipt.provider,
        receipt.slots[0],
        Arc::new(AllowAll),
        BodyLimits::default(),
    );
    (origin, pools, service)
}

#[tokio::test]
async fn the_tower_service_runs_a_buffered_call_on_an_owned_connection_under_a_tower_http_layer() {
    let (origin, pools, service) = served().await;
    let layered = tower_http::set_header::SetRequestHeaderLayer::overriding(
        http::header::HeaderName::from_static("x-layer"),
        http::HeaderValue::from_static("on"),
    )
    .layer(service);
    let mut request = http::Request::get("/ok")
        .body(Empty::<Bytes>::new())
        .expect("request");
    request.extensions_mut().insert(plan("t", 1));
    let response = bounded("the call", layered.oneshot(request))
        .await
        .expect("answered");
    assert_eq!(response.status(), http::StatusCode::OK);
    assert_eq!(
        pools.snapshot().running_requests,
        1,
        "the body holds the running request"
    );
    let body = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    assert_eq!(body, Bytes::from_static(b"hello"));
    assert_eq!(
        pools.snapshot().running_requests,
        0,
        "released with the body"
    );
    let seen = origin.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].headers.get("x-layer").map(|v| v.as_bytes()),
        Some(&b"on"[..])
    );
    assert_eq!(
        pools.snapshot().connections.idle,
        1,
        "the owned connection went back to the pool"
    );
}

#[tokio::test]
async fn a_request_without_a_plan_is_refused_before_anything_is_charged() {
    let (origin, pools, service) = served().await;
    let before = pools.snapshot();
    let request = http::Request::get("/ok")
        .body(Empty::<Bytes>::new())
        .expect("request");
    let refused = service.oneshot(request).await.expect_err("no plan");
    assert_eq!(refused.code(), "missing_plan");
    assert_eq!(origin.accepted(), 0, "nothing dialled");
    assert_eq!(
        pools.snapshot(),
        before,
        "nothing charged, admitted or held"
    );
}

#[tokio::test]
async fn the_admission_layer_admits_a_clients_calls_fairly_and_holds_each_until_its_body_is_dropped(
) {
    let server = Counting::start().await;
    let limits = Limits {
        running_per_provider: 2,
        ..Limits::DEFAULT
    };
    let (pools, client) = layered_client(&server, limits).await;

    let call = |tenant: &'static str, session: u64| {
        let client = client.clone();
        let url = format!("{}/slow?tenant={tenant}", server.url);
        task(async move {
            let mut request = http::Request::get(url)
                .body(Empty::<Bytes>::new())
                .expect("request");
            request.extensions_mut().insert(plan(tenant, session));
            let response = client.oneshot(request).await.expect("answered");
            response
                .into_body()
                .collect()
                .await
                .expect("a body")
                .to_bytes()
        })
    };
    // A floods with six calls; b asks twice, just after.
    let mut calls: Vec<_> = (0..6).map(|s| call("a", s)).collect();
    tokio::time::sleep(Duration::from_millis(5)).await;
    calls.extend((0..2).map(|s| call("b", 100 + s)));
    for done in calls {
        assert_eq!(
            bounded("a call", done).await.expect("joined"),
            Bytes::from_static(b"done")
        );
    }
    assert!(
        server.most.load(Ordering::SeqCst) <= 2,
        "the server saw {} at once",
        server.most.load(Ordering::SeqCst)
    );
    let order = server.answered.lock().expect("log").clone();
    let last_b = order.iter().rposition(|t| t == "b").expect("b answered");
    assert!(
        last_b < 6,
        "b's two calls get turns among a's six: {order:?}"
    );
    eventually("every running request released", || {
        pools.snapshot().running_requests == 0
    })
    .await;

    // A response whose body is not yet read keeps its running request.
    let mut request = http::Request::get(format!("{}/slow?tenant=c", server.url))
        .body(Empty::<Bytes>::new())
        .expect("request");
    request.extensions_mut().insert(plan("c", 1));
    let held = bounded("the call", client.clone().oneshot(request))
        .await
        .expect("answered");
    assert_eq!(pools.snapshot().running_requests, 1);
    drop(held);
    assert_eq!(
        pools.snapshot().running_requests,
        0,
        "dropping the response releases it"
    );
    assert_eq!(server.now.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_inner_call_without_an_answer_by_the_plans_deadline_times_out_and_releases() {
    let server = Counting::start().await;
    let (pools, client) = layered_client(&server, Limits::DEFAULT).await;
    let mut request = http::Request::get(format!("{}/never", server.url))
        .body(Empty::<Bytes>::new())
        .expect("request");
    let deadline = tokio::time::Instant::now() + Duration::from_millis(200);
    request
        .extensions_mut()
        .insert(plan_until("t", 1, deadline));
    let refused = bounded("the call", client.oneshot(request))
        .await
        .expect_err("no answer");
    assert!(matches!(refused, ServiceError::Timeout), "{refused:?}");
    assert_eq!(pools.snapshot().running_requests, 0);
}
