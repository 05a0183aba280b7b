//! `ProviderPools::prepay`: bytes charged to the node's accounted metadata
//! before what they pay for exists, returned only when dropped.

mod support;

use provider_pools::{AdmitError, Limits};
use support::{bounded, deadline, start};

#[tokio::test]
async fn a_prepayment_is_counted_until_each_part_is_dropped() {
    let pools = start(Limits::DEFAULT).await;
    let before = pools.snapshot().metadata_bytes;
    let mut whole = pools.prepay(1_000).expect("room for 1000 bytes");
    assert_eq!(whole.amount(), 1_000);
    assert_eq!(pools.snapshot().metadata_bytes, before + 1_000);

    let kept = whole.split(300).expect("300 of 1000");
    assert!(whole.split(701).is_none(), "no more than what is held");
    assert_eq!((whole.amount(), kept.amount()), (700, 300));
    assert_eq!(
        pools.snapshot().metadata_bytes,
        before + 1_000,
        "splitting moves bytes, it refunds nothing"
    );
    drop(whole);
    assert_eq!(pools.snapshot().metadata_bytes, before + 300);
    drop(kept);
    assert_eq!(pools.snapshot().metadata_bytes, before);

    let report = bounded("shutdown", pools.shutdown(deadline())).await;
    assert!(report.is_clean() && report.owns_nothing(), "{report:?}");
}

#[tokio::test]
async fn a_prepayment_over_the_metadata_budget_is_refused_at_once() {
    let limits = Limits {
        metadata_bytes: 4_096,
        metadata_per_tenant: 4_096,
        private_config_bytes: 1_024,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let held = pools.prepay(4_000).expect("room for 4000 bytes");
    assert_eq!(
        pools.prepay(97).map(|_| ()),
        Err(AdmitError::Capacity {
            resource: "metadata_bytes",
            used: 4_000,
            limit: 4_096,
        })
    );
    assert_eq!(
        pools.snapshot().metadata_bytes,
        4_000,
        "a refusal reserves nothing"
    );
    let rest = pools.prepay(96).expect("exactly the rest fits");
    drop((held, rest));
    assert_eq!(pools.snapshot().metadata_bytes, 0);
    bounded("shutdown", pools.shutdown(deadline())).await;
}

#[tokio::test]
async fn a_held_prepayment_keeps_shutdown_unclean_and_none_is_taken_after_it() {
    let pools = start(Limits::DEFAULT).await;
    let held = pools.prepay(64).expect("room");
    let soon = tokio::time::Instant::now() + std::time::Duration::from_millis(200);
    let report = pools.shutdown(soon).await;
    assert_eq!(report.metadata_bytes, 64, "the prepayment is still owned");
    assert!(!report.is_clean());
    assert_eq!(pools.prepay(1).map(|_| ()), Err(AdmitError::Closed));
    drop(held);
    let report = bounded("second shutdown", pools.shutdown(deadline())).await;
    assert!(report.is_clean() && report.owns_nothing(), "{report:?}");
}
