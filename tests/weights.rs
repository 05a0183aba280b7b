//! Tenant weights on the public API (`ProviderPools::set_tenant_weight`):
//! a weight from 1 to `MAX_TENANT_WEIGHT` is read back; one outside is
//! refused, changing nothing; weight 1 is the default and sets it back.
//! The order of grants a weight gives is the queue's to test (its unit
//! and property tests); here only what the handle promises.

mod support;

use provider_pools::{Limits, ProviderPools, TenantId, WeightError};
use support::start;

fn tenant(name: &str) -> TenantId {
    TenantId::new(name).expect("a valid tenant")
}

#[tokio::test(start_paused = true)]
async fn a_weight_in_range_is_read_back_and_one_sets_it_back() {
    let pools = start(Limits::DEFAULT).await;
    let paid = tenant("paid");
    assert_eq!(pools.tenant_weight(&paid), 1, "the default");
    pools
        .set_tenant_weight(&paid, ProviderPools::MAX_TENANT_WEIGHT)
        .expect("the highest weight");
    assert_eq!(pools.tenant_weight(&paid), ProviderPools::MAX_TENANT_WEIGHT);
    assert_eq!(pools.tenant_weight(&tenant("other")), 1, "others untouched");
    pools.set_tenant_weight(&paid, 1).expect("weight 1");
    assert_eq!(pools.tenant_weight(&paid), 1);
}

#[tokio::test(start_paused = true)]
async fn a_weight_out_of_range_is_refused_and_changes_nothing() {
    let pools = start(Limits::DEFAULT).await;
    let paid = tenant("paid");
    pools.set_tenant_weight(&paid, 3).expect("weight 3");
    let most = ProviderPools::MAX_TENANT_WEIGHT;
    for weight in [0, most + 1] {
        assert_eq!(
            pools.set_tenant_weight(&paid, weight),
            Err(WeightError::OutOfRange { weight, most })
        );
        assert_eq!(pools.tenant_weight(&paid), 3);
    }
}
