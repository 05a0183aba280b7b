//! A [`ReferenceServer`] on a free loopback port, a store that counts the
//! mutations it applies, and a transport that loses an answer after the
//! server applied its request.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use provider_pools_control_plane::transport::{
    HttpControlPlaneRequest, HttpResponse, HttpTransport, SharedHttpControlPlaneRequest,
    TransportError,
};
use provider_pools_control_plane::v1::{ReferenceServer, ServerConfig};
use provider_pools_control_plane::{
    BoxFuture, CallResult, ControlPlane, LeaseGrant, LeaseKey, LeaseRequest, LeaseState,
    PresenceKey, Registration, ServiceGroup,
};
use tokio::sync::Notify;

/// A running server and its base URL.
pub struct Served {
    pub server: ReferenceServer,
    pub base: String,
}

/// Serves V1 over `store` on `127.0.0.1:0`; the task is spawned.
pub async fn serve(store: Arc<dyn ControlPlane>) -> Served {
    serve_with(store, ServerConfig::default()).await.0
}

/// Serves V1 over `store` with `config`; returns the spawned task too.
pub async fn serve_with(
    store: Arc<dyn ControlPlane>,
    config: ServerConfig,
) -> (Served, tokio::task::JoinHandle<()>) {
    let addr = "127.0.0.1:0".parse().expect("address");
    let (server, task) = ReferenceServer::bind(addr, store, config)
        .await
        .expect("bind a free loopback port");
    let running = super::task(task);
    let base = format!("http://{}", server.local_addr());
    (Served { server, base }, running)
}

/// A store that counts the lease acquisitions that reach it and can hold
/// discoveries at a gate.
#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn ControlPlane>,
    acquires: AtomicUsize,
    gate: Option<Arc<Notify>>,
    entered: Arc<Notify>,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn ControlPlane>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            acquires: AtomicUsize::new(0),
            gate: None,
            entered: Arc::new(Notify::new()),
        })
    }

    /// A store whose discoveries wait for `gate` after signalling
    /// [`entered`](Self::entered).
    pub fn gated(inner: Arc<dyn ControlPlane>, gate: Arc<Notify>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            acquires: AtomicUsize::new(0),
            gate: Some(gate),
            entered: Arc::new(Notify::new()),
        })
    }

    /// Resolves once a discovery reached the store.
    pub async fn entered(&self) {
        self.entered.notified().await;
    }

    /// Acquisitions the store received.
    pub fn acquires(&self) -> usize {
        self.acquires.load(Ordering::SeqCst)
    }
}

impl ControlPlane for CountingStore {
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>> {
        self.inner.register(registration)
    }

    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.inner.heartbeat(key)
    }

    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.inner.deregister(key)
    }

    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        Box::pin(async move {
            self.entered.notify_one();
            if let Some(gate) = &self.gate {
                gate.notified().await;
            }
            self.inner.discover(service).await
        })
    }

    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.acquires.fetch_add(1, Ordering::SeqCst);
        self.inner.acquire(request)
    }

    fn renew(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.inner.renew(grant)
    }

    fn release(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        self.inner.release(grant)
    }

    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        self.inner.read_lease(key)
    }
}

/// Wraps a real transport; when armed, lets the next request reach the
/// server and discards the answer after it arrived, reporting the broken
/// connection a client sees when a response is lost.
pub struct LosingTransport {
    inner: Arc<dyn HttpTransport>,
    armed: AtomicBool,
    lost: Mutex<Vec<HttpResponse>>,
}

impl LosingTransport {
    pub fn new(inner: Arc<dyn HttpTransport>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            armed: AtomicBool::new(false),
            lost: Mutex::new(Vec::new()),
        })
    }

    /// Loses the next answer.
    pub fn lose_next_answer(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// The answers lost so far, as the server sent them.
    pub fn lost(&self) -> Vec<HttpResponse> {
        self.lost.lock().expect("lost").clone()
    }
}

impl fmt::Debug for LosingTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LosingTransport").finish_non_exhaustive()
    }
}

impl HttpTransport for LosingTransport {
    fn send(
        &self,
        request: HttpControlPlaneRequest,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        self.inner.send(request)
    }

    fn send_shared<'a>(
        &'a self,
        request: &'a SharedHttpControlPlaneRequest,
    ) -> BoxFuture<'a, Result<HttpResponse, TransportError>> {
        Box::pin(async move {
            let answer = self.inner.send_shared(request).await?;
            if self.armed.swap(false, Ordering::SeqCst) {
                self.lost.lock().expect("lost").push(answer);
                return Err(TransportError::Io(
                    "connection reset after the request was sent".into(),
                ));
            }
            Ok(answer)
        })
    }
}
