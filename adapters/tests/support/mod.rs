//! Shared set-up for the adapters' tests: a fresh registry per test,
//! installing a provider whose slot 0 is one origin (the http tests'
//! provider `web` at a loopback origin; the s3, vault, nats and secret
//! support modules name their own), running requests, bounded waits, and a
//! relay in front of real peers. Kept small: the root crate's
//! `tests/support` is the full version.

#![allow(dead_code)]

pub(crate) mod capture;

#[cfg(feature = "http")]
pub(crate) mod h2_origin;
#[cfg(any(feature = "s3", feature = "vault"))]
pub(crate) mod idle;
#[cfg(feature = "nats")]
pub(crate) mod nats;
#[cfg(feature = "http")]
pub(crate) mod origin;
#[cfg(any(feature = "s3", feature = "vault", feature = "nats"))]
pub(crate) mod relay;
#[cfg(feature = "vault")]
pub(crate) mod sockets;
pub(crate) mod test_ca;
#[cfg(feature = "vault")]
pub(crate) mod vault;

use std::future::Future;
use std::time::Duration;

use provider_pools_actors::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, Denied, DispatchAuthority, Epoch,
    ExecutionPlan, InstallReceipt, Installation, LedgerId, Limits, OriginKind, OriginSlot,
    PoolReady, PoolsConfig, ProviderConfig, ProviderId, ProviderPools, RunningRequest, ServiceName,
    SessionId, TenantId,
};

/// How long any bounded wait in these tests may take before it fails.
pub(crate) const WAIT: Duration = Duration::from_secs(5);

pub(crate) async fn start(limits: Limits) -> ProviderPools {
    let config = PoolsConfig {
        limits,
        ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
    };
    ProviderPools::start(config).await.expect("registry starts")
}

/// The configuration of a provider of service `service`: slot 0 an origin
/// of `kind` at `target`, public `settings`.
pub(crate) fn provider_config(
    service: &str,
    kind: OriginKind,
    target: &str,
    settings: &[(&str, &str)],
) -> ProviderConfig {
    settings.iter().fold(
        ProviderConfig::new(ServiceName::new(service).expect("service name")).with_origin(
            OriginSlot::new(0),
            kind,
            target,
        ),
        |config, (key, value)| config.with_setting(*key, *value),
    )
}

/// Installs provider `provider` under `authority` with `config` and
/// `credential` over epoch `expected` (0 for a first install).
pub(crate) async fn install_provider(
    pools: &ProviderPools,
    provider: &str,
    authority: &str,
    config: ProviderConfig,
    credential: &[u8],
    expected: u64,
) -> InstallReceipt {
    pools
        .install(Installation {
            authority: Authority::new(authority).expect("authority"),
            provider: ProviderId::new(provider).expect("provider id"),
            expected: Epoch::new(expected),
            credential: Credential::from_slice(credential).expect("credential within bound"),
            config,
        })
        .await
        .expect("install")
}

/// Provider `web`'s configuration: slot 0 at `target`, public `settings`.
pub(crate) fn config(target: &str, settings: &[(&str, &str)]) -> ProviderConfig {
    provider_config("web", OriginKind::Http, target, settings)
}

/// Installs provider `web` (epoch 1) with [`config`] and `credential`.
pub(crate) async fn install(
    pools: &ProviderPools,
    target: &str,
    settings: &[(&str, &str)],
    credential: &[u8],
) -> InstallReceipt {
    let config = config(target, settings);
    install_provider(pools, "web", "https://web.example", config, credential, 0).await
}

#[derive(Debug)]
pub(crate) struct AllowAll;

impl DispatchAuthority for AllowAll {
    fn authorize(&self, _: &ExecutionPlan, _: &ProviderId) -> Result<(), Denied> {
        Ok(())
    }
}

/// Admits, dispatches and starts a request of tenant `t` for slot 0.
pub(crate) async fn running(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    session: u64,
) -> RunningRequest {
    running_as(pools, receipt, "t", session, OriginKind::Http).await
}

/// The plan of tenant `tenant`'s session `session`, with deadlines an
/// hour away.
pub(crate) fn plan(tenant: &str, session: u64) -> ExecutionPlan {
    plan_until(
        tenant,
        session,
        tokio::time::Instant::now() + Duration::from_secs(3_600),
    )
}

/// The plan of tenant `tenant`'s session `session`, with both deadlines at
/// `deadline`.
pub(crate) fn plan_until(
    tenant: &str,
    session: u64,
    deadline: tokio::time::Instant,
) -> ExecutionPlan {
    ExecutionPlan::seal(
        TenantId::new(tenant).expect("tenant"),
        SessionId::new(session),
        LedgerId::new(1),
        deadline,
        deadline,
    )
}

/// Admits, dispatches and starts a request of `tenant` for slot 0, an
/// origin of `kind`.
pub(crate) async fn running_as(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &str,
    session: u64,
    kind: OriginKind,
) -> RunningRequest {
    running_plan(pools, receipt, plan(tenant, session), kind, Bytes::new()).await
}

/// Admits `plan`'s request for slot 0, an origin of `kind`, with `input`
/// staged (capacity only: no permission yet).
pub(crate) async fn admitted(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    plan: ExecutionPlan,
    kind: OriginKind,
    input: Bytes,
) -> PoolReady {
    let input = pools.stage_input(&plan, input).expect("input staged");
    let request = AdmitRequest {
        plan,
        provider: receipt.provider.clone(),
        slot: receipt.slots[0],
        kind,
        input,
    };
    bounded("admission", pools.admit(request))
        .await
        .expect("capacity is free")
}

/// Admits, dispatches and starts tenant `tenant`'s session `session` for
/// slot 0, an HTTP origin, with both deadlines at `deadline` and no input.
pub(crate) async fn running_until(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &str,
    session: u64,
    deadline: tokio::time::Instant,
) -> RunningRequest {
    let plan = plan_until(tenant, session, deadline);
    running_plan(pools, receipt, plan, OriginKind::Http, Bytes::new()).await
}

/// Admits, dispatches ([`AllowAll`]) and starts `plan`'s request for slot
/// 0, an origin of `kind`, with `input` staged.
pub(crate) async fn running_plan(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    plan: ExecutionPlan,
    kind: OriginKind,
    input: Bytes,
) -> RunningRequest {
    let ready = admitted(pools, receipt, plan, kind, input).await;
    let call = pools
        .dispatch(&AllowAll, ready.plan(), ready.provider())
        .expect("dispatch");
    ready.start(call).expect("start")
}

/// Runs `future` with a bound, failing with `what` if it does not finish.
pub(crate) async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {WAIT:?}: {what}"))
}

/// The workspace's one bounded poll, for what the engine cannot report
/// itself (a peer, a driver job, a socket).
#[allow(unused_imports, reason = "each test binary uses part of the support")]
pub(crate) use provider_pools_test_peers::eventually;

/// Returns once the engine's actors have handled everything sent to them,
/// and what that sent in turn (`ProviderPools::wait_quiescent`); fails the test
/// after [`WAIT`]. Not for what a driver job or a peer still has to do.
pub(crate) async fn quiescent(pools: &ProviderPools) {
    pools
        .wait_quiescent(deadline())
        .await
        .expect("the engine's actors quiesce");
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

/// Returns once the runtime's I/O driver has taken in every socket event
/// of this process that happened before the call: a byte sent now on a
/// fresh loopback pair is readable through tokio only after the driver's
/// turn that reported it, and epoll reports ready sockets in the order
/// they became ready. After it, every socket an origin closed before the
/// call reads as closed (a driver not yet run may still hold it parked).
pub(crate) async fn io_turn() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (ping, accepted) = tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
    let (mut ping, (mut pong, _)) = (ping.expect("connect"), accepted.expect("accept"));
    bounded("the probe byte", async {
        ping.write_all(b"!").await.expect("probe written");
        let mut byte = [0u8; 1];
        pong.read_exact(&mut byte).await.expect("probe read");
    })
    .await;
}

/// A deadline [`WAIT`] from now.
pub(crate) fn deadline() -> tokio::time::Instant {
    tokio::time::Instant::now() + WAIT
}

/// A GET of the origin-form `path`, with no headers and no body.
#[cfg(feature = "http")]
pub(crate) fn get(path: &str) -> provider_pools_adapters::http_origin::HttpRequest {
    provider_pools_adapters::http_origin::HttpRequest {
        method: http::Method::GET,
        target: provider_pools_adapters::http_origin::RequestTarget::parse(path)
            .expect("origin-form target"),
        headers: http::HeaderMap::new(),
        body: Bytes::new(),
        replayable: false,
    }
}

/// Waits until `nginx` logged `count` requests and returns its log.
pub(crate) async fn nginx_logged(
    nginx: &provider_pools_test_peers::NginxPeer,
    count: usize,
) -> Vec<provider_pools_test_peers::AccessEntry> {
    eventually(&format!("nginx logged {count} requests"), || {
        nginx.access_log().len() >= count
    })
    .await;
    nginx.access_log()
}
