//! The limiters under test: the engine, a FIFO semaphore and mea's
//! fair-share limiter.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mea::admission::{FairShare, OwnedFairSharePermit};
use provider_pools::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, Epoch, ExecutionPlan,
    Installation, LedgerId, Limits, OriginKind, OriginSlot, PolicyTable, PoolsConfig,
    ProviderConfig, ProviderId, ProviderPools, RunningRequest, ServiceName, SessionId, TenantId,
    TypedSlot,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::settings::Settings;
use crate::BoxError;

/// Who decides the order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Pools,
    Fifo,
    /// mea 0.6's `admission::FairShare`, keyed by tenant: a freed permit
    /// goes to the waiting key that holds the fewest.
    MeaFairShare,
}

impl Kind {
    /// Every limiter, in the order the harness runs and reports them.
    pub(crate) const ALL: [Kind; 3] = [Kind::Pools, Kind::Fifo, Kind::MeaFairShare];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Pools => "provider-pools",
            Kind::Fifo => "FIFO semaphore",
            Kind::MeaFairShare => "mea FairShare",
        }
    }
}

/// The engine's side of one run.
pub(crate) struct Engine {
    pools: ProviderPools,
    policy: PolicyTable,
    provider: ProviderId,
    slot: TypedSlot,
    sessions: AtomicU64,
}

pub(crate) enum Limiter {
    Pools(Engine),
    Fifo(Arc<Semaphore>),
    MeaFairShare(Arc<FairShare<TenantId>>),
}

/// What a granted submitter holds while it works.
pub(crate) enum Held {
    // Held only to be dropped: that is the release.
    Pools(#[allow(dead_code)] RunningRequest),
    Fifo(#[allow(dead_code)] OwnedSemaphorePermit),
    MeaFairShare(#[allow(dead_code)] OwnedFairSharePermit<TenantId>),
}

impl Limiter {
    pub(crate) async fn start(
        kind: Kind,
        settings: &Settings,
        tenants: &[TenantId],
    ) -> Result<Self, BoxError> {
        match kind {
            Kind::Fifo => {
                return Ok(Limiter::Fifo(Arc::new(Semaphore::new(
                    settings.running as usize,
                ))))
            }
            Kind::MeaFairShare => {
                return Ok(Limiter::MeaFairShare(Arc::new(FairShare::new(
                    settings.running as usize,
                ))))
            }
            Kind::Pools => {}
        }
        let limits = Limits {
            pending_requests: Limits::CEILING.pending_requests,
            requests_per_tenant: Limits::CEILING.requests_per_tenant,
            requests_per_provider: Limits::CEILING.requests_per_provider,
            running_requests: settings.running,
            running_per_tenant: settings.running,
            running_per_provider: settings.running,
            queue_age: Limits::CEILING.queue_age,
            ..Limits::DEFAULT
        };
        let pools = ProviderPools::start(PoolsConfig {
            limits,
            ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
        })
        .await?;
        let provider = ProviderId::new("origin")?;
        let receipt = pools
            .install(Installation {
                provider: provider.clone(),
                authority: Authority::new("http://127.0.0.1")?,
                expected: Epoch::ZERO,
                credential: Credential::from_slice(b"fairness")?,
                config: ProviderConfig::new(ServiceName::new("origin")?).with_origin(
                    OriginSlot::new(0),
                    OriginKind::Http,
                    "http://127.0.0.1:1",
                ),
            })
            .await?;
        let policy = PolicyTable::new();
        for tenant in tenants {
            policy.allow(tenant.clone(), provider.clone());
        }
        Ok(Limiter::Pools(Engine {
            pools,
            policy,
            provider,
            slot: receipt.slots[0],
            sessions: AtomicU64::new(0),
        }))
    }

    /// Waits for a running slot; returns it with the admission wait.
    pub(crate) async fn acquire(
        &self,
        tenant: &TenantId,
    ) -> Result<(Held, Duration), &'static str> {
        match self {
            Limiter::Fifo(semaphore) => {
                let asked = Instant::now();
                let permit = Arc::clone(semaphore)
                    .acquire_owned()
                    .await
                    .map_err(|_| "closed")?;
                Ok((Held::Fifo(permit), asked.elapsed()))
            }
            Limiter::MeaFairShare(limiter) => {
                let asked = Instant::now();
                let permit = Arc::clone(limiter).acquire_owned(tenant.clone()).await;
                Ok((Held::MeaFairShare(permit), asked.elapsed()))
            }
            Limiter::Pools(engine) => {
                let far = Instant::now() + Duration::from_secs(3_600);
                let plan = ExecutionPlan::seal(
                    tenant.clone(),
                    SessionId::new(engine.sessions.fetch_add(1, Ordering::Relaxed)),
                    LedgerId::new(1),
                    far,
                    far,
                );
                let input = engine
                    .pools
                    .stage_input(&plan, Bytes::from_static(b"work"))
                    .map_err(|e| e.code())?;
                let asked = Instant::now();
                let ready = engine
                    .pools
                    .admit(AdmitRequest {
                        plan: plan.clone(),
                        provider: engine.provider.clone(),
                        slot: engine.slot,
                        kind: OriginKind::Http,
                        input,
                    })
                    .await
                    .map_err(|e| e.code())?;
                let waited = asked.elapsed();
                let call = engine
                    .pools
                    .dispatch(&engine.policy, &plan, &engine.provider)
                    .map_err(|e| e.code())?;
                let running = ready.start(call).map_err(|e| e.code())?;
                Ok((Held::Pools(running), waited))
            }
        }
    }

    /// Shuts the registry down; true when its report is clean.
    pub(crate) async fn stop(self) -> bool {
        match self {
            Limiter::Fifo(_) | Limiter::MeaFairShare(_) => true,
            Limiter::Pools(engine) => engine
                .pools
                .shutdown(Instant::now() + Duration::from_secs(10))
                .await
                .is_clean(),
        }
    }
}
