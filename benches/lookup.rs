//! The lookup path: leasing a configured client against the hand-rolled
//! alternative a runtime author would otherwise write.
//!
//! - `lease/pools_client`: `ProviderPools::client` + drop — directory read,
//!   slot and kind checks, one lease on the epoch's lease word.
//! - `lease/semaphore_baseline`: `Arc<Semaphore>::try_acquire_owned` + drop,
//!   a bare counted permit with no identity, epoch or accounting.
//! - `charge/budget`: `Budget::try_reserve(1)` + drop, the shared counter
//!   several owners charge; against the same semaphore baseline.
//!
//! Run with `cargo bench --locked --bench lookup`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use provider_pools::testing::Budget;
use provider_pools::{
    Authority, BrokerGeneration, Credential, Epoch, Installation, OriginKind, OriginSlot,
    PoolsConfig, ProviderConfig, ProviderId, ProviderPools, ServiceName,
};
use tokio::sync::Semaphore;

fn installed_pools(
    runtime: &tokio::runtime::Runtime,
) -> (ProviderPools, ProviderId, provider_pools::TypedSlot) {
    runtime.block_on(async {
        let config = PoolsConfig::new(runtime.handle().clone(), BrokerGeneration::new());
        let pools = ProviderPools::start(config).await.expect("registry starts");
        let provider = ProviderId::new("bench").expect("provider id");
        let config = (0..8).fold(
            ProviderConfig::new(ServiceName::new("bench").expect("service")),
            |config, slot| {
                config.with_origin(
                    OriginSlot::new(slot),
                    OriginKind::Http,
                    "http://127.0.0.1:1",
                )
            },
        );
        let receipt = pools
            .install(Installation {
                provider: provider.clone(),
                authority: Authority::new("http://127.0.0.1").expect("authority"),
                expected: Epoch::ZERO,
                credential: Credential::from_slice(b"bench").expect("credential"),
                config,
            })
            .await
            .expect("install");
        let slot = receipt.slot(OriginSlot::new(5)).expect("slot 5");
        (pools, provider, slot)
    })
}

fn lease(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (pools, provider, slot) = installed_pools(&runtime);
    let semaphore = Arc::new(Semaphore::new(1_024));

    let mut group = c.benchmark_group("lease");
    group.bench_function("pools_client", |b| {
        b.iter(|| drop(black_box(pools.client(&provider, &slot, OriginKind::Http))))
    });
    group.bench_function("semaphore_baseline", |b| {
        b.iter(|| drop(black_box(Arc::clone(&semaphore).try_acquire_owned())))
    });
    group.finish();

    let budget = Budget::new("bench", 1_024);
    let mut group = c.benchmark_group("charge");
    group.bench_function("budget", |b| {
        b.iter(|| drop(black_box(budget.try_reserve(1))))
    });
    group.bench_function("semaphore_baseline", |b| {
        b.iter(|| drop(black_box(Arc::clone(&semaphore).try_acquire_owned())))
    });
    group.finish();
}

criterion_group!(benches, lease);
criterion_main!(benches);
