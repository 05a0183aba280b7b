//! Shared set-up of the I/O benchmarks (`checkout.rs`, `http.rs`): the
//! runtime, a registry with one provider whose slot 0 is a loopback origin,
//! the admit → dispatch → start path, and running a fixed number of
//! operations over `n` concurrent tasks.

#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use provider_pools::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, Epoch, ExecutionPlan,
    InstallReceipt, Installation, LedgerId, Limits, OriginKind, OriginSlot, PolicyTable,
    PoolsConfig, ProviderConfig, ProviderId, ProviderPools, RunningRequest, ServiceName, SessionId,
    TenantId,
};
use tokio::time::Instant;

/// The runtime every benchmark runs on: two workers, like the machine.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A registry with provider `bench` installed on one origin at `target`,
/// and the policy that lets tenant `bench` call it.
pub(crate) struct Engine {
    pub(crate) pools: ProviderPools,
    pub(crate) receipt: InstallReceipt,
    pub(crate) policy: PolicyTable,
    pub(crate) tenant: TenantId,
}

impl Engine {
    pub(crate) async fn start(limits: Limits, target: &str) -> Self {
        Self::start_with(limits, target, &[]).await
    }

    /// [`Self::start`], the provider carrying public `settings`.
    pub(crate) async fn start_with(
        limits: Limits,
        target: &str,
        settings: &[(&str, &str)],
    ) -> Self {
        let config = PoolsConfig {
            limits,
            ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
        };
        let pools = ProviderPools::start(config).await.expect("registry starts");
        let provider = ProviderId::new("bench").expect("provider");
        let receipt =
            pools
                .install(Installation {
                    provider: provider.clone(),
                    authority: Authority::new("https://bench.example").expect("authority"),
                    expected: Epoch::ZERO,
                    credential: Credential::from_slice(b"bench").expect("credential"),
                    config: settings.iter().fold(
                        ProviderConfig::new(ServiceName::new("bench").expect("service"))
                            .with_origin(OriginSlot::new(0), OriginKind::Http, target),
                        |config, (key, value)| config.with_setting(*key, *value),
                    ),
                })
                .await
                .expect("install");
        let tenant = TenantId::new("bench").expect("tenant");
        let policy = PolicyTable::new();
        policy.allow(tenant.clone(), provider);
        Self {
            pools,
            receipt,
            policy,
            tenant,
        }
    }

    /// Admits, dispatches and starts one request of tenant `bench` for slot
    /// 0: what every guest call pays before its I/O.
    pub(crate) async fn running(&self) -> RunningRequest {
        let far = Instant::now() + Duration::from_secs(60);
        let plan = ExecutionPlan::seal(
            self.tenant.clone(),
            SessionId::new(1),
            LedgerId::new(1),
            far,
            far,
        );
        let input = self.pools.stage_input(&plan, Bytes::new()).expect("input");
        let ready = self
            .pools
            .admit(AdmitRequest {
                plan: plan.clone(),
                provider: self.receipt.provider.clone(),
                slot: self.receipt.slots[0],
                kind: OriginKind::Http,
                input,
            })
            .await
            .expect("admitted");
        let call = self
            .pools
            .dispatch(&self.policy, &plan, &self.receipt.provider)
            .expect("dispatch");
        ready.start(call).expect("start")
    }
}

/// Splits `total` operations over `tasks` tasks (the first ones take the
/// remainder).
pub(crate) fn share(total: u64, tasks: usize, index: usize) -> u64 {
    let tasks = tasks as u64;
    total / tasks + u64::from((index as u64) < total % tasks)
}

/// Runs `make(index)` as `tasks` concurrent tasks of the current runtime and
/// waits for all; returns their outputs in order. Panics if one panicked.
pub(crate) async fn run_tasks<F, Fut>(tasks: usize, mut make: F) -> Vec<Fut::Output>
where
    F: FnMut(usize) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    #[allow(clippy::disallowed_methods, reason = "a benchmark's own load tasks")]
    let handles: Vec<_> = (0..tasks).map(|i| tokio::spawn(make(i))).collect();
    let mut outputs = Vec::with_capacity(tasks);
    for handle in handles {
        outputs.push(handle.await.expect("benchmark task"));
    }
    outputs
}

/// Spawns `future` on the current runtime (a benchmark's origin or server).
#[allow(clippy::disallowed_methods, reason = "a benchmark's own server task")]
pub(crate) fn spawn<F>(future: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    drop(tokio::spawn(future));
}
