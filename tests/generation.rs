//! One registry per broker generation, ever.

mod support;

use provider_pools::{
    BrokerGeneration, LimitField, Limits, LimitsError, PoolsConfig, ProviderPools, StartError,
};
use support::deadline;

fn config(generation: &BrokerGeneration, limits: Limits) -> PoolsConfig {
    PoolsConfig {
        limits,
        ..PoolsConfig::new(tokio::runtime::Handle::current(), generation.clone())
    }
}

#[tokio::test]
async fn a_second_registry_on_the_same_generation_is_refused() {
    let generation = BrokerGeneration::new();
    let _first = ProviderPools::start(config(&generation, Limits::DEFAULT))
        .await
        .expect("first registry");
    assert_eq!(
        ProviderPools::start(config(&generation, Limits::DEFAULT))
            .await
            .err(),
        Some(StartError::GenerationClaimed {
            generation: generation.id()
        })
    );
}

#[tokio::test]
async fn the_generation_stays_claimed_after_its_registry_retired() {
    let generation = BrokerGeneration::new();
    let first = ProviderPools::start(config(&generation, Limits::DEFAULT))
        .await
        .expect("first registry");
    first.retire().await;
    let report = first.shutdown(deadline()).await;
    assert!(report.is_clean(), "{report:?}");

    // A lowered ceiling cannot be bypassed by starting over with defaults.
    let retry = ProviderPools::start(config(&generation, Limits::CEILING)).await;
    assert!(matches!(retry, Err(StartError::GenerationClaimed { .. })));
}

#[tokio::test]
async fn invalid_limits_are_refused_without_claiming_the_generation() {
    let generation = BrokerGeneration::new();
    let bad = Limits {
        idle_connections: 300,
        ..Limits::DEFAULT
    };
    assert_eq!(
        ProviderPools::start(config(&generation, bad)).await.err(),
        Some(StartError::Limits(LimitsError::Relation {
            field: LimitField::IdleConnections,
            value: 300,
            bound_field: LimitField::Connections,
            bound: 256,
        }))
    );
    assert!(!generation.is_claimed());
    ProviderPools::start(config(&generation, Limits::DEFAULT))
        .await
        .expect("valid limits start on the unclaimed generation");
}
