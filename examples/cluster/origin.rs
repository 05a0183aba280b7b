//! The provider every node of the cluster example (and of the cluster
//! tests) calls: a loopback HTTP origin that counts the requests it is
//! serving, in total and per tenant, at every instant.
//!
//! It is the one place that sees every node at once, so its counts are
//! the cluster's: `max_in_flight` is the highest number of requests it
//! served at the same time, read exactly (raised on every arrival).
//! A request is `GET /work?tenant=NAME`; it answers after the think time.
//! The instants of the first [`MAX_ARRIVALS`] arrivals are kept, so a
//! test can count the requests that arrived in any window.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use provider_pools::Bytes;
use tokio::time::Instant;

/// Most arrival instants kept (a long example run keeps its first ones).
pub(crate) const MAX_ARRIVALS: usize = 100_000;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the origin serves right now and has served.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    in_flight: AtomicU32,
    max_in_flight: AtomicU32,
    served: AtomicU64,
    tenants: Mutex<BTreeMap<String, u32>>,
    arrivals: Mutex<Vec<Instant>>,
}

impl Counts {
    /// Requests being served now.
    pub(crate) fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// The most requests served at once so far.
    pub(crate) fn max_in_flight(&self) -> u32 {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    /// Requests answered so far.
    pub(crate) fn served(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }

    /// Each tenant's requests being served now.
    pub(crate) fn tenants(&self) -> BTreeMap<String, u32> {
        self.tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The instant of every arrival so far, in order (the first
    /// [`MAX_ARRIVALS`]).
    #[allow(dead_code, reason = "the rate test reads it, the example not")]
    pub(crate) fn arrivals(&self) -> Vec<Instant> {
        self.arrivals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn arrive(&self, tenant: &str) {
        let mut arrivals = self.arrivals.lock().unwrap_or_else(PoisonError::into_inner);
        if arrivals.len() < MAX_ARRIVALS {
            arrivals.push(Instant::now());
        }
        drop(arrivals);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
        *tenants.entry(tenant.to_owned()).or_default() += 1;
    }

    fn leave(&self, tenant: &str) {
        let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = tenants.get_mut(tenant) {
            *count -= 1;
            if *count == 0 {
                tenants.remove(tenant);
            }
        }
        drop(tenants);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.served.fetch_add(1, Ordering::SeqCst);
    }
}

/// A running origin.
pub(crate) struct Origin {
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    pub(crate) counts: Arc<Counts>,
}

/// Starts an origin on a free loopback port, answering after `think`.
pub(crate) async fn start(think: Duration) -> Result<Origin, BoxError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let counts = Arc::new(Counts::default());
    let shared = Arc::clone(&counts);
    #[allow(clippy::disallowed_methods, reason = "the example's own origin server")]
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let counts = Arc::clone(&shared);
            #[allow(clippy::disallowed_methods, reason = "the example's own origin server")]
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let counts = Arc::clone(&counts);
                    async move {
                        let tenant = tenant_of(request.uri().query().unwrap_or(""));
                        counts.arrive(&tenant);
                        tokio::time::sleep(think).await;
                        counts.leave(&tenant);
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                    }
                });
                let io = hyper_util::rt::TokioIo::new(socket);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok(Origin { url, counts })
}

fn tenant_of(query: &str) -> String {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("tenant="))
        .unwrap_or("unknown")
        .to_owned()
}
