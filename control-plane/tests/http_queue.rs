//! The HTTP client's request queue under tokio's paused clock: a call
//! dropped before dispatch never runs and leaves no waker behind, a full
//! queue refuses at once, and a stopped worker answers `Offline`.

#[path = "http_support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

use provider_pools_control_plane::v1::{HttpClientConfig, HttpControlPlaneClient};
use provider_pools_control_plane::{ControlPlane, ControlPlaneError, ServiceGroup};
use support::scripted::{config, Reply, ScriptedTransport, NONE_FOUND};
use tokio::sync::Notify;

fn client(
    config: HttpClientConfig,
    transport: &Arc<ScriptedTransport>,
) -> Arc<HttpControlPlaneClient> {
    support::client_over(config, transport.clone())
}

fn service(name: &str) -> ServiceGroup {
    ServiceGroup::new(name).expect("valid service")
}

/// A waker that counts its wakes; its `Arc` count shows who holds it.
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn a_future_dropped_before_dispatch_never_runs_and_keeps_no_waker() {
    let gate = Arc::new(Notify::new());
    let transport = ScriptedTransport::new([
        Reply::Gate(gate.clone(), 200, NONE_FOUND),
        Reply::Status(200, NONE_FOUND),
    ]);
    let client = client(config(1, 30_000, 0, 0), &transport);
    let held = client.discover(service("held"));
    let mut dropped = client.discover(service("dropped"));
    let waker = Arc::new(CountingWaker(AtomicUsize::new(0)));
    let polled = dropped
        .as_mut()
        .poll(&mut Context::from_waker(&Waker::from(waker.clone())));
    assert!(polled.is_pending());
    assert_eq!(
        Arc::strong_count(&waker),
        2,
        "the answer slot holds the waker"
    );
    drop(dropped);
    assert_eq!(
        Arc::strong_count(&waker),
        1,
        "nothing queued keeps the waker"
    );
    let after = client.discover(service("after"));
    gate.notify_one();
    let (held, after) = tokio::join!(held, after);
    held.expect("held call answered");
    after.expect("later call answered");
    assert_eq!(
        transport.calls_to("/dropped"),
        0,
        "the dropped call never ran"
    );
    assert_eq!(transport.seen().len(), 2);
    assert_eq!(waker.0.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_refuses_at_once() {
    let gate = Arc::new(Notify::new());
    let transport = ScriptedTransport::new([
        Reply::Gate(gate.clone(), 200, NONE_FOUND),
        Reply::Status(200, NONE_FOUND),
        Reply::Status(200, NONE_FOUND),
    ]);
    let config = HttpClientConfig {
        queue_capacity: 2,
        ..config(1, 30_000, 0, 0)
    };
    let client = client(config, &transport);
    let running = client.discover(service("running"));
    for _ in 0..100 {
        if !transport.seen().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(transport.seen().len(), 1, "the first call holds the worker");
    let queued = [
        client.discover(service("one")),
        client.discover(service("two")),
    ];
    let refused = client.discover(service("refused")).await;
    assert!(
        matches!(
            refused,
            Err(ControlPlaneError::LimitExceeded {
                limit: "request queue"
            })
        ),
        "{refused:?}"
    );
    gate.notify_one();
    running.await.expect("running call answered");
    for call in queued {
        call.await.expect("queued call answered");
    }
    assert_eq!(transport.calls_to("/refused"), 0);
}

#[tokio::test(start_paused = true)]
async fn calls_answer_offline_once_the_worker_is_gone() {
    let transport = ScriptedTransport::new([]);
    let (client, worker) =
        HttpControlPlaneClient::new(config(3, 1_000, 10, 10), transport.clone()).expect("config");
    let queued = client.discover(service("queued"));
    drop(worker);
    let error = queued.await.expect_err("worker gone");
    assert!(matches!(error, ControlPlaneError::Offline), "{error:?}");
    let error = client
        .discover(service("later"))
        .await
        .expect_err("worker gone");
    assert!(matches!(error, ControlPlaneError::Offline), "{error:?}");
    assert!(transport.seen().is_empty());
}
