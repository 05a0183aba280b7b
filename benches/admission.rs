//! One admission, end to end, against a bare semaphore.
//!
//! - `admission/admit_start_drop`: stage input, `admit` (one hop to the
//!   scheduler and its answer), `dispatch`, `start`, drop (the release hop).
//! - `admission/semaphore_baseline`: `Semaphore::acquire` + drop — what a
//!   hand-rolled limiter pays, with no tenant, queue or accounting.
//!
//! Both run on a 2-worker runtime from a lone caller, the worst case for the
//! actor hop (a cross-thread wake-up per message).
//!
//! Run with `cargo bench --locked --bench admission`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use provider_pools::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, Epoch, ExecutionPlan,
    Installation, LedgerId, OriginKind, OriginSlot, PolicyTable, PoolsConfig, ProviderConfig,
    ProviderId, ProviderPools, ServiceName, SessionId, TenantId,
};
use tokio::sync::Semaphore;
use tokio::time::Instant;

struct Fixture {
    pools: ProviderPools,
    provider: ProviderId,
    slot: provider_pools::TypedSlot,
    policy: PolicyTable,
    tenant: TenantId,
}

async fn fixture(runtime: tokio::runtime::Handle) -> Fixture {
    let pools = ProviderPools::start(PoolsConfig::new(runtime, BrokerGeneration::new()))
        .await
        .expect("registry starts");
    let provider = ProviderId::new("bench").expect("provider");
    let receipt =
        pools
            .install(Installation {
                provider: provider.clone(),
                authority: Authority::new("http://127.0.0.1").expect("authority"),
                expected: Epoch::ZERO,
                credential: Credential::from_slice(b"bench").expect("credential"),
                config: ProviderConfig::new(ServiceName::new("bench").expect("service"))
                    .with_origin(OriginSlot::new(0), OriginKind::Http, "http://127.0.0.1:1"),
            })
            .await
            .expect("install");
    let tenant = TenantId::new("bench").expect("tenant");
    let policy = PolicyTable::new();
    policy.allow(tenant.clone(), provider.clone());
    Fixture {
        pools,
        provider,
        slot: receipt.slots[0],
        policy,
        tenant,
    }
}

async fn one_admission(f: &Fixture) {
    let far = Instant::now() + Duration::from_secs(60);
    let plan = ExecutionPlan::seal(
        f.tenant.clone(),
        SessionId::new(1),
        LedgerId::new(1),
        far,
        far,
    );
    let input = f
        .pools
        .stage_input(Bytes::from_static(b"bench"))
        .expect("input");
    let ready = f
        .pools
        .admit(AdmitRequest {
            plan: plan.clone(),
            provider: f.provider.clone(),
            slot: f.slot,
            kind: OriginKind::Http,
            input,
        })
        .await
        .expect("admitted");
    let call = f
        .pools
        .dispatch(&f.policy, &plan, &f.provider)
        .expect("dispatch");
    drop(ready.start(call).expect("start"));
}

fn admission(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let fixture = runtime.block_on(fixture(runtime.handle().clone()));
    let semaphore = Semaphore::new(64);

    let mut group = c.benchmark_group("admission");
    group.bench_function("admit_start_drop", |b| {
        b.to_async(&runtime).iter(|| one_admission(&fixture))
    });
    group.bench_function("semaphore_baseline", |b| {
        b.to_async(&runtime)
            .iter(|| async { drop(semaphore.acquire().await.expect("open semaphore")) })
    });
    group.finish();
}

criterion_group!(benches, admission);
criterion_main!(benches);
