//! Snapshots: aggregate counts of what is owned, and clean shutdown reports.

mod support;

use provider_pools::{ControlState, Limits, OriginKind};
use support::{bounded, deadline, http_config, installation, provider, start, with_alpha};

#[tokio::test]
async fn a_fresh_registry_owns_nothing_and_is_not_yet_clean() {
    let pools = start(Limits::DEFAULT).await;
    let snapshot = pools.snapshot();
    assert!(snapshot.owns_nothing());
    assert_eq!(snapshot.control, ControlState::Running);
    assert!(
        !snapshot.is_clean(),
        "clean needs completed control ownership"
    );
}

#[tokio::test]
async fn installation_counts_epochs_clients_and_metadata() {
    let pools = start(Limits::DEFAULT).await;
    pools
        .install(installation(
            &provider("alpha"),
            0,
            b"0123456789",
            http_config("alpha", 3),
        ))
        .await
        .expect("alpha");
    pools
        .install(installation(
            &provider("beta"),
            0,
            b"0123456789",
            http_config("beta", 2),
        ))
        .await
        .expect("beta");
    let snapshot = pools.snapshot();
    assert_eq!(
        (
            snapshot.configured_epochs,
            snapshot.retained_epochs,
            snapshot.clients
        ),
        (2, 2, 5)
    );
    assert!(snapshot.metadata_bytes > 0);
}

#[tokio::test(start_paused = true)]
async fn credential_bytes_are_accounted_as_metadata() {
    // Two epochs that differ only in credential length differ in accounted
    // metadata by exactly that length.
    let pools = start(Limits::DEFAULT).await;
    let p = provider("alpha");
    pools
        .install(installation(&p, 0, &[1u8; 100], http_config("alpha", 1)))
        .await
        .expect("create");
    let one_epoch = pools.snapshot().metadata_bytes;
    let lease_slots = pools.describe(&p).expect("installed");
    assert_eq!(lease_slots.origins.len(), 1);
    pools
        .install(installation(&p, 1, &[2u8; 1_100], http_config("alpha", 1)))
        .await
        .expect("rotate");
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().retained_epochs,
        1,
        "the unleased old epoch is released"
    );
    assert_eq!(pools.snapshot().metadata_bytes, one_epoch + 1_000);
}

#[tokio::test]
async fn a_metadata_budget_too_small_for_the_epoch_refuses_it() {
    let limits = Limits {
        metadata_bytes: 1_024,
        metadata_per_tenant: 1_024,
        private_config_bytes: 1_024,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let refused = pools
        .install(installation(
            &provider("alpha"),
            0,
            &[0u8; 1_000],
            http_config("alpha", 1),
        ))
        .await;
    assert!(
        matches!(&refused, Err(provider_pools::InstallError::Capacity(e)) if e.resource == "metadata_bytes"),
        "got {refused:?}"
    );
    assert!(
        pools.snapshot().owns_nothing(),
        "a refused install keeps nothing"
    );
}

#[tokio::test]
async fn shutdown_after_every_lease_is_dropped_is_clean() {
    let (pools, p, receipt) = with_alpha(Limits::DEFAULT, 2).await;
    let lease = pools
        .client(&p, &receipt.slots[0], OriginKind::Http)
        .expect("lease");
    drop(lease);
    let report = bounded("shutdown", pools.shutdown(deadline())).await;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.control, ControlState::Completed);
}

#[tokio::test]
async fn shutdown_reports_what_a_held_lease_still_retains() {
    let (pools, p, receipt) = with_alpha(Limits::DEFAULT, 2).await;
    let lease = pools
        .client(&p, &receipt.slots[0], OriginKind::Http)
        .expect("lease");

    let soon = tokio::time::Instant::now() + std::time::Duration::from_millis(50);
    let report = pools.shutdown(soon).await;
    assert!(!report.is_clean());
    assert_eq!(report.control, ControlState::Retiring);
    assert_eq!(
        (
            report.configured_epochs,
            report.retained_epochs,
            report.clients
        ),
        (0, 1, 2),
        "the leased epoch is retired but still owned"
    );
    assert!(
        pools
            .client(&p, &receipt.slots[0], OriginKind::Http)
            .is_err(),
        "admission is closed"
    );
    assert_eq!(
        lease.slot(),
        receipt.slots[0].slot(),
        "accepted work keeps its client"
    );

    drop(lease);
    let report = bounded("second shutdown", pools.shutdown(deadline())).await;
    assert!(report.is_clean(), "{report:?}");
}
