//! Typed origin slots: the same slot reuses its configured client; a type
//! mismatch or a slot of a foreign installation is refused.

mod support;

use provider_pools::{Limits, LookupError, OriginKind, OriginSlot};
use support::{http_config, installation, provider, start, with_alpha};

#[tokio::test]
async fn the_same_slot_reuses_its_configured_client() {
    let (pools, p, receipt) = with_alpha(Limits::DEFAULT, 2).await;
    let slot0 = receipt.slot(OriginSlot::new(0)).expect("slot 0");
    let slot1 = receipt.slot(OriginSlot::new(1)).expect("slot 1");

    let first = pools.client(&p, &slot0, OriginKind::Http).expect("lookup");
    let again = pools.client(&p, &slot0, OriginKind::Http).expect("lookup");
    let other = pools.client(&p, &slot1, OriginKind::Http).expect("lookup");
    assert_eq!(first.client_id(), again.client_id());
    assert_ne!(first.client_id(), other.client_id());
    assert_ne!(
        first.client_id().get(),
        other.client_id().get(),
        "the raw instance numbers tell the clients apart too"
    );
    assert_eq!(first.target(), "http://127.0.0.1:8000");
    assert_eq!(pools.snapshot().clients, 2, "lookups create no client");
}

#[tokio::test]
async fn the_descriptor_lists_the_configured_origins_in_slot_order() {
    let (pools, p, _receipt) = with_alpha(Limits::DEFAULT, 2).await;
    let origins = pools.describe(&p).map(|d| d.origins);
    assert_eq!(
        origins,
        Some(vec![
            (OriginSlot::new(0), OriginKind::Http),
            (OriginSlot::new(1), OriginKind::Http)
        ])
    );
}

#[tokio::test]
async fn a_slot_looked_up_as_another_kind_is_refused() {
    let (pools, p, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let refused = pools.client(&p, &receipt.slots[0], OriginKind::S3).err();
    assert_eq!(
        refused,
        Some(LookupError::KindMismatch {
            provider: p.clone(),
            slot: OriginSlot::new(0),
            configured: OriginKind::Http,
            requested: OriginKind::S3,
        })
    );
}

#[tokio::test]
async fn a_slot_of_another_provider_is_foreign() {
    let pools = start(Limits::DEFAULT).await;
    let (a, b) = (provider("alpha"), provider("beta"));
    let of_a = pools
        .install(installation(&a, 0, b"k", http_config("alpha", 1)))
        .await
        .expect("install alpha");
    pools
        .install(installation(&b, 0, b"k", http_config("beta", 1)))
        .await
        .expect("install beta");
    assert_eq!(
        pools.client(&b, &of_a.slots[0], OriginKind::Http).err(),
        Some(LookupError::ForeignSlot {
            provider: b.clone(),
            slot: OriginSlot::new(0),
        })
    );
}

#[tokio::test]
async fn a_slot_of_another_registry_is_foreign() {
    // Same provider name, same configuration, another registry: the slot
    // belongs to the other installation and reaches nothing here.
    let (here, elsewhere) = (start(Limits::DEFAULT).await, start(Limits::DEFAULT).await);
    let p = provider("alpha");
    here.install(installation(&p, 0, b"k", http_config("alpha", 1)))
        .await
        .expect("install here");
    let foreign = elsewhere
        .install(installation(&p, 0, b"k", http_config("alpha", 1)))
        .await
        .expect("install elsewhere");
    assert!(matches!(
        here.client(&p, &foreign.slots[0], OriginKind::Http),
        Err(LookupError::ForeignSlot { .. })
    ));
}

#[tokio::test]
async fn looking_up_an_uninstalled_provider_creates_nothing() {
    let pools = start(Limits::DEFAULT).await;
    let (a, ghost) = (provider("alpha"), provider("ghost"));
    let receipt = pools
        .install(installation(&a, 0, b"k", http_config("alpha", 1)))
        .await
        .expect("install");
    assert_eq!(
        pools
            .client(&ghost, &receipt.slots[0], OriginKind::Http)
            .err(),
        Some(LookupError::UnknownProvider {
            provider: ghost.clone()
        })
    );
    assert!(pools.describe(&ghost).is_none());
    assert_eq!(pools.snapshot().configured_epochs, 1);
}

#[tokio::test]
async fn a_lease_reads_its_epochs_public_settings() {
    let pools = start(Limits::DEFAULT).await;
    let a = provider("alpha");
    let config = http_config("alpha", 1).with_setting("auth_header", "x-api-key");
    let receipt = pools
        .install(installation(&a, 0, b"k", config))
        .await
        .expect("install");
    let lease = pools
        .client(&a, &receipt.slots[0], OriginKind::Http)
        .expect("lease");
    assert_eq!(lease.setting("auth_header"), Some("x-api-key"));
    assert_eq!(lease.setting("absent"), None);
}
