//! Shared set-up for the integration tests: a fresh registry per test, and
//! installations built from a few parameters.

#![allow(dead_code)]

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
        runtime: tokio::runtime::Handle::current(),
        generation: BrokerGeneration::new(),
        limits,
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

/// Polls `condition` until it holds, failing after [`WAIT`] with `what`.
///
/// For effects that travel through actor mailboxes (a drain notice, a stop),
/// which complete on their own but not within the caller's poll.
pub(crate) async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {WAIT:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
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
    provider_pools::AdmitRequest {
        plan,
        provider: receipt.provider.clone(),
        slot: receipt.slots[0],
        kind: OriginKind::Http,
        input: pools
            .stage_input(provider_pools::Bytes::from_static(input))
            .expect("input fits the metadata budget"),
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
