//! Shared set-up for the integration tests: a fresh registry per test, and
//! installations built from a few parameters.

#![allow(dead_code)]

pub(crate) mod rng;

use std::future::Future;
use std::time::Duration;

use provider_pools::{
    Authority, BrokerGeneration, Credential, Epoch, Installation, Limits, OriginKind, OriginSlot,
    PoolsConfig, ProviderConfig, ProviderId, ProviderPools, ServiceName,
};

/// How long any bounded wait in these tests may take before it fails.
pub(crate) const WAIT: Duration = Duration::from_secs(5);

pub(crate) fn provider(name: &str) -> ProviderId {
    ProviderId::new(name).expect("valid provider id")
}

pub(crate) async fn start(limits: Limits) -> ProviderPools {
    let config = PoolsConfig {
        limits,
        ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
    };
    ProviderPools::start(config).await.expect("registry starts")
}

/// A configuration for `service` with `origins` HTTP origins on slots 0..n.
pub(crate) fn http_config(service: &str, origins: u32) -> ProviderConfig {
    (0..origins).fold(
        ProviderConfig::new(ServiceName::new(service).expect("valid service name")),
        |config, slot| {
            config.with_origin(
                OriginSlot::new(slot),
                OriginKind::Http,
                format!("http://127.0.0.1:{}", 8000 + slot),
            )
        },
    )
}

pub(crate) fn installation(
    provider: &ProviderId,
    expected: u64,
    credential: &[u8],
    config: ProviderConfig,
) -> Installation {
    Installation {
        provider: provider.clone(),
        authority: Authority::new(format!("https://{}.example", provider)).expect("authority"),
        expected: Epoch::new(expected),
        credential: Credential::from_slice(credential).expect("credential within bound"),
        config,
    }
}

/// The workspace's one bounded poll, for what the engine cannot report
/// itself (a task the test spawned, a peer, a socket).
#[allow(unused_imports, reason = "each test binary uses part of the support")]
pub(crate) use provider_pools_test_peers::eventually;

/// Returns once the engine's actors have handled everything sent to them,
/// and what that sent in turn (`ProviderPools::wait_quiescent`); fails the test
/// after [`WAIT`]. Answers the rounds it took (1: idle already).
pub(crate) async fn quiescent(pools: &ProviderPools) -> u32 {
    pools
        .wait_quiescent(deadline())
        .await
        .expect("the engine's actors quiesce")
}

/// Returns once every task and actor is idle, on a paused clock: the clock
/// advances only when nothing else can run.
pub(crate) async fn quiesce() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

/// Runs `future` with a bound, failing with `what` if it does not finish.
pub(crate) async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {WAIT:?}: {what}"))
}

pub(crate) fn deadline() -> tokio::time::Instant {
    tokio::time::Instant::now() + WAIT
}

/// A registry with provider `alpha` created (epoch 1) on `origins` HTTP
/// origins, credential `k`.
pub(crate) async fn with_alpha(
    limits: Limits,
    origins: u32,
) -> (ProviderPools, ProviderId, provider_pools::InstallReceipt) {
    let pools = start(limits).await;
    let alpha = provider("alpha");
    let receipt = pools
        .install(installation(&alpha, 0, b"k", http_config("alpha", origins)))
        .await
        .expect("alpha installs");
    (pools, alpha, receipt)
}

/// A registry with provider `mem` created (epoch 1) on one HTTP origin,
/// credential `k`: the setting of the tests that bring a dialer of their
/// own.
pub(crate) async fn with_mem(limits: Limits) -> (ProviderPools, provider_pools::InstallReceipt) {
    let pools = start(limits).await;
    let receipt = pools
        .install(installation(
            &provider("mem"),
            0,
            b"k",
            http_config("mem", 1),
        ))
        .await
        .expect("mem installs");
    (pools, receipt)
}

/// A plan for `tenant` whose Store and I/O deadlines are far away.
pub(crate) fn plan(tenant: &str, session: u64) -> provider_pools::ExecutionPlan {
    let far = tokio::time::Instant::now() + Duration::from_secs(3_600);
    plan_until(tenant, session, far, far)
}

/// A plan for `tenant` with the given Store and I/O deadlines.
pub(crate) fn plan_until(
    tenant: &str,
    session: u64,
    store: tokio::time::Instant,
    io: tokio::time::Instant,
) -> provider_pools::ExecutionPlan {
    provider_pools::ExecutionPlan::seal(
        provider_pools::TenantId::new(tenant).expect("valid tenant id"),
        provider_pools::SessionId::new(session),
        provider_pools::LedgerId::new(1),
        store,
        io,
    )
}

/// An admission request for slot 0 of `receipt`'s provider, with `input`.
pub(crate) fn request(
    pools: &ProviderPools,
    plan: provider_pools::ExecutionPlan,
    receipt: &provider_pools::InstallReceipt,
    input: &'static [u8],
) -> provider_pools::AdmitRequest {
    let input = pools
        .stage_input(&plan, provider_pools::Bytes::from_static(input))
        .expect("input fits the metadata budget");
    provider_pools::AdmitRequest {
        plan,
        provider: receipt.provider.clone(),
        slot: receipt.slots[0],
        kind: OriginKind::Http,
        input,
    }
}

/// Admits `request`, expecting an immediate grant.
pub(crate) async fn admitted(
    pools: &ProviderPools,
    request: provider_pools::AdmitRequest,
) -> provider_pools::PoolReady {
    bounded("admission", pools.admit(request))
        .await
        .expect("capacity is free")
}

/// Runs `future` as a task of the test's runtime.
#[allow(clippy::disallowed_methods, reason = "tests own their tasks")]
pub(crate) fn task<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(future)
}

/// A dispatch authority that allows every call.
#[derive(Debug, Default)]
pub(crate) struct AllowAll;

impl provider_pools::DispatchAuthority for AllowAll {
    fn authorize(
        &self,
        _: &provider_pools::ExecutionPlan,
        _: &ProviderId,
    ) -> Result<(), provider_pools::Denied> {
        Ok(())
    }
}

pub(crate) fn allow_all() -> AllowAll {
    AllowAll
}

/// Admits, dispatches and starts a request for slot 0 of `receipt`.
pub(crate) async fn running(
    pools: &ProviderPools,
    receipt: &provider_pools::InstallReceipt,
    tenant: &str,
    session: u64,
) -> provider_pools::RunningRequest {
    let ready = admitted(pools, request(pools, plan(tenant, session), receipt, b"")).await;
    let call = pools
        .dispatch(&AllowAll, ready.plan(), ready.provider())
        .expect("dispatch");
    ready.start(call).expect("start")
}

/// [`running`], with both deadlines at `deadline`.
pub(crate) async fn running_until(
    pools: &ProviderPools,
    receipt: &provider_pools::InstallReceipt,
    tenant: &str,
    session: u64,
    deadline: tokio::time::Instant,
) -> provider_pools::RunningRequest {
    let plan = plan_until(tenant, session, deadline, deadline);
    let ready = admitted(pools, request(pools, plan, receipt, b"")).await;
    let call = pools
        .dispatch(&AllowAll, ready.plan(), ready.provider())
        .expect("dispatch");
    ready.start(call).expect("start")
}

/// A provider whose origins are the given TCP targets (slots 0..n).
pub(crate) fn tcp_config(service: &str, targets: &[String]) -> ProviderConfig {
    targets.iter().enumerate().fold(
        ProviderConfig::new(ServiceName::new(service).expect("valid service name")),
        |config, (slot, target)| {
            config.with_origin(
                OriginSlot::new(slot as u32),
                OriginKind::Http,
                target.clone(),
            )
        },
    )
}

/// Dials real TCP connections to the slot's target, counting dials.
#[derive(Debug, Default, Clone)]
pub(crate) struct TcpDialer {
    pub(crate) dials: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl provider_pools::Dialer for TcpDialer {
    type Conn = tokio::net::TcpStream;

    async fn dial(
        &self,
        target: provider_pools::DialTarget<'_>,
    ) -> Result<Self::Conn, provider_pools::DialError> {
        use provider_pools::{DialError, DialErrorKind};
        self.dials.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::net::TcpStream::connect(target.target)
            .await
            .map_err(|e| {
                let kind = match e.kind() {
                    std::io::ErrorKind::ConnectionRefused => DialErrorKind::Refused,
                    std::io::ErrorKind::TimedOut => DialErrorKind::Timeout,
                    _ => DialErrorKind::Other,
                };
                DialError::new(kind, e.to_string())
            })
    }
}

/// Admits, dispatches and starts a request for slot `slot` of `receipt`.
pub(crate) async fn running_on(
    pools: &ProviderPools,
    receipt: &provider_pools::InstallReceipt,
    slot: usize,
    tenant: &str,
    session: u64,
) -> provider_pools::RunningRequest {
    let mut admit = request(pools, plan(tenant, session), receipt, b"");
    admit.slot = receipt.slots[slot];
    let ready = admitted(pools, admit).await;
    let call = pools
        .dispatch(&AllowAll, ready.plan(), ready.provider())
        .expect("dispatch");
    ready.start(call).expect("start")
}

/// Holds blocking jobs until opened — or until the test fails, so a failed
/// assertion never leaves a blocking job that keeps the runtime alive.
#[derive(Debug, Default)]
pub(crate) struct Gate(std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    /// A closure-side handle that blocks in [`GateWait::wait`] until open.
    pub(crate) fn waiter(&self) -> GateWait {
        GateWait(std::sync::Arc::clone(&self.0))
    }

    /// Opens the gate for every waiter.
    pub(crate) fn open(self) {
        drop(self);
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        let (open, changed) = &*self.0;
        *open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        changed.notify_all();
    }
}

#[derive(Debug)]
pub(crate) struct GateWait(std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

impl GateWait {
    /// Blocks this thread until the gate opens.
    pub(crate) fn wait(self) {
        let (open, changed) = &*self.0;
        let guard = open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _open = changed
            .wait_while(guard, |open| !*open)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}

/// An in-memory connection that counts its destruction.
pub(crate) struct Counted(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Dials [`Counted`] connections at once; `destroyed` counts those gone.
#[derive(Clone, Default)]
pub(crate) struct CountedDialer {
    pub(crate) destroyed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl provider_pools::Dialer for CountedDialer {
    type Conn = Counted;

    async fn dial(
        &self,
        _: provider_pools::DialTarget<'_>,
    ) -> Result<Counted, provider_pools::DialError> {
        Ok(Counted(std::sync::Arc::clone(&self.destroyed)))
    }
}
