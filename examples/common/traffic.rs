//! Traffic shared by the node demo and the soak (`examples/node.rs`,
//! `examples/soak/`): a loopback HTTP origin, one call through the HTTP or
//! the blob adapter, and a credential rotation.
//!
//! Not an example by itself: each example includes it with `#[path]`.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use provider_pools::node::NodeConfig;
use provider_pools::{
    AdmitRequest, Bytes, Credential, Epoch, ExecutionPlan, InstallReceipt, LedgerId, OriginKind,
    PolicyTable, ProviderId, ProviderPools, SessionId, TenantId,
};
use provider_pools_adapters::blob::{self, BlobKey, BlobLimits};
use provider_pools_adapters::http_origin::{
    self, BodyLimits, HttpDialer, HttpRequest, RequestTarget,
};
use tokio::time::Instant;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A loopback origin: `GET /forecast` answers after its think time (none if
/// zero), keeping connections alive.
pub(crate) struct Origin {
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    /// The think time in microseconds, read by every request.
    think: Arc<AtomicU64>,
}

impl Origin {
    /// Changes the think time of the requests that arrive from now on.
    #[allow(
        dead_code,
        reason = "the soak's priming uses it; the node demo does not"
    )]
    pub(crate) fn set_think(&self, think: Duration) {
        self.think
            .store(think.as_micros() as u64, Ordering::Relaxed);
    }
}

/// Starts an [`Origin`] on a free loopback port, answering after `think`.
pub(crate) async fn start_origin(think: Duration) -> Result<Origin, BoxError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let think = Arc::new(AtomicU64::new(think.as_micros() as u64));
    let shared = Arc::clone(&think);
    #[allow(clippy::disallowed_methods, reason = "the examples' own origin server")]
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let think = Arc::clone(&shared);
            #[allow(clippy::disallowed_methods, reason = "the examples' own origin server")]
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_req: Request<Incoming>| {
                    let think = Duration::from_micros(think.load(Ordering::Relaxed));
                    async move {
                        if !think.is_zero() {
                            tokio::time::sleep(think).await;
                        }
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(
                            b"{\"forecast\":\"sunny\"}",
                        ))))
                    }
                });
                let io = hyper_util::rt::TokioIo::new(socket);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok(Origin { url, think })
}

/// One registry's traffic: an HTTP provider (`weather`) and a blob provider
/// (`files`), every tenant allowed both.
pub(crate) struct Traffic {
    pub(crate) pools: ProviderPools,
    policy: PolicyTable,
    weather: InstallReceipt,
    files: InstallReceipt,
    dialer: HttpDialer,
    sessions: AtomicU64,
}

impl Traffic {
    /// The providers `weather` and `files` from a started node's receipts.
    pub(crate) fn new<'a>(
        pools: &ProviderPools,
        receipts: &std::collections::BTreeMap<ProviderId, InstallReceipt>,
        tenants: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, BoxError> {
        let weather_id = ProviderId::new("weather")?;
        let files_id = ProviderId::new("files")?;
        let policy = PolicyTable::new();
        for tenant in tenants {
            policy.allow(TenantId::new(tenant)?, weather_id.clone());
            policy.allow(TenantId::new(tenant)?, files_id.clone());
        }
        let weather = receipts
            .get(&weather_id)
            .ok_or("weather not installed")?
            .clone();
        let files = receipts
            .get(&files_id)
            .ok_or("files not installed")?
            .clone();
        Ok(Self {
            dialer: HttpDialer::new(pools.clone()),
            pools: pools.clone(),
            policy,
            weather,
            files,
            sessions: AtomicU64::new(0),
        })
    }

    fn plan(&self, tenant: &str) -> Result<ExecutionPlan, BoxError> {
        let deadline = Instant::now() + Duration::from_secs(2);
        let session = self.sessions.fetch_add(1, Ordering::Relaxed);
        Ok(ExecutionPlan::seal(
            TenantId::new(tenant)?,
            SessionId::new(session),
            LedgerId::new(1),
            deadline,
            deadline,
        ))
    }

    /// One call: admission, a fresh dispatch, then a buffered HTTP GET (even
    /// rounds) or a blob put and get (odd rounds). Answers the admission wait
    /// in microseconds, or the failing step's error code.
    pub(crate) async fn call(&self, tenant: &str, round: u64) -> Result<u64, &'static str> {
        let use_http = round.is_multiple_of(2);
        let receipt = if use_http { &self.weather } else { &self.files };
        let plan = self.plan(tenant).map_err(|_| "plan")?;
        let input = self
            .pools
            .stage_input(&plan, Bytes::from_static(b"demo"))
            .map_err(|e| e.code())?;
        let asked = Instant::now();
        let ready = self
            .pools
            .admit(AdmitRequest {
                plan: plan.clone(),
                provider: receipt.provider.clone(),
                slot: receipt.slots[0],
                kind: if use_http {
                    OriginKind::Http
                } else {
                    OriginKind::Blob
                },
                input,
            })
            .await
            .map_err(|e| e.code())?;
        let waited = asked.elapsed().as_micros() as u64;
        let call = self
            .pools
            .dispatch(&self.policy, &plan, &receipt.provider)
            .map_err(|e| e.code())?;
        let running = ready.start(call).map_err(|e| e.code())?;
        if use_http {
            let request = HttpRequest {
                method: hyper::Method::GET,
                target: RequestTarget::parse("/forecast?city=demo").map_err(|_| "target")?,
                headers: Default::default(),
                body: Bytes::new(),
                replayable: false,
            };
            http_origin::call(
                &self.pools,
                &running,
                &self.dialer,
                request,
                BodyLimits::default(),
            )
            .await
            .map_err(|e| e.code())?;
        } else {
            let key = BlobKey::parse(&format!("{tenant}/{}", round % 4)).map_err(|_| "key")?;
            let body = Bytes::from(format!("{tenant} round {round}"));
            blob::put(&self.pools, &running, &key, body, BlobLimits::default())
                .await
                .map_err(|e| e.code())?;
            let mut reader = blob::get(&self.pools, &running, &key, BlobLimits::default())
                .await
                .map_err(|e| e.code())?;
            while let Some(chunk) = reader.next_chunk().await {
                chunk.map_err(|e| e.code())?;
            }
        }
        Ok(waited)
    }
}

/// Replaces `provider`'s installation with the node file's, expecting the
/// current epoch (requests on the old epoch finish on it); `credential`
/// replaces the file's credential when given. Answers the new epoch.
pub(crate) async fn rotate(
    pools: &ProviderPools,
    config: &NodeConfig,
    provider: &ProviderId,
    credential: Option<&[u8]>,
) -> Result<Epoch, BoxError> {
    let current = pools.describe(provider).map_or(Epoch::ZERO, |d| d.epoch);
    let mut installation = config
        .installations()?
        .into_iter()
        .find(|i| &i.provider == provider)
        .ok_or("provider not in the node file")?;
    installation.expected = current;
    if let Some(bytes) = credential {
        installation.credential = Credential::from_slice(bytes)?;
    }
    Ok(pools.install(installation).await?.epoch)
}
