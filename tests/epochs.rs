//! Installation and immutable epochs: expected epochs, atomic publish,
//! rejected replacements, room for rotation, retained epochs.

mod support;

use provider_pools::Exhausted;
use provider_pools::{Epoch, InstallError, Limits, LookupError, OriginKind, OriginSlot};
use support::{http_config, installation, provider, start, with_alpha};

#[tokio::test]
async fn creation_expects_epoch_zero() {
    let pools = start(Limits::DEFAULT).await;
    let p = provider("alpha");

    let refused = pools
        .install(installation(&p, 1, b"k", http_config("alpha", 1)))
        .await;
    assert_eq!(
        refused,
        Err(InstallError::EpochMismatch {
            provider: p.clone(),
            expected: Epoch::new(1),
            installed: Epoch::ZERO,
        })
    );
    assert!(
        pools.describe(&p).is_none(),
        "a refused creation publishes nothing"
    );

    let receipt = pools
        .install(installation(&p, 0, b"k", http_config("alpha", 1)))
        .await
        .expect("creation with epoch zero");
    assert_eq!(receipt.epoch, Epoch::new(1));
    assert_eq!(pools.describe(&p).map(|d| d.epoch), Some(Epoch::new(1)));
}

#[tokio::test]
async fn replacement_must_name_the_installed_epoch_and_advances_it() {
    let pools = start(Limits::DEFAULT).await;
    let p = provider("alpha");
    pools
        .install(installation(&p, 0, b"k1", http_config("alpha", 1)))
        .await
        .expect("create");

    for stale in [0, 2] {
        let refused = pools
            .install(installation(&p, stale, b"k2", http_config("alpha", 1)))
            .await;
        assert_eq!(
            refused,
            Err(InstallError::EpochMismatch {
                provider: p.clone(),
                expected: Epoch::new(stale),
                installed: Epoch::new(1),
            }),
            "expected epoch {stale} must be refused"
        );
    }

    let receipt = pools
        .install(installation(&p, 1, b"k2", http_config("alpha", 1)))
        .await
        .expect("replacement naming epoch 1");
    assert_eq!(receipt.epoch, Epoch::new(2));
    assert_eq!(pools.describe(&p).map(|d| d.epoch), Some(Epoch::new(2)));
}

#[tokio::test]
async fn rejected_replacement_leaves_the_old_epoch_usable() {
    let limits = Limits {
        private_config_bytes: 16,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let p = provider("alpha");
    let receipt = pools
        .install(installation(&p, 0, b"short", http_config("alpha", 2)))
        .await
        .expect("create");
    let before = pools.describe(&p).expect("installed");
    let snapshot_before = pools.snapshot();

    let too_large = pools
        .install(installation(&p, 1, &[7u8; 17], http_config("alpha", 2)))
        .await;
    assert_eq!(
        too_large,
        Err(InstallError::PrivateConfigTooLarge { len: 17, limit: 16 })
    );
    let duplicate_slot = http_config("alpha", 1).with_origin(
        OriginSlot::new(0),
        OriginKind::Http,
        "http://127.0.0.1:9",
    );
    assert!(matches!(
        pools
            .install(installation(&p, 1, b"k2", duplicate_slot))
            .await,
        Err(InstallError::Config(_))
    ));

    assert_eq!(
        pools.describe(&p),
        Some(before),
        "old epoch still published"
    );
    assert_eq!(
        pools.snapshot(),
        snapshot_before,
        "nothing leaked or refunded"
    );
    let slot = receipt.slot(OriginSlot::new(1)).expect("slot 1");
    let lease = pools
        .client(&p, &slot, OriginKind::Http)
        .expect("old epoch still serves lookups");
    assert_eq!(lease.epoch(), Epoch::new(1));
}

#[tokio::test]
async fn rotation_needs_room_for_both_epochs() {
    // Room for one retained configuration only: the replacement cannot be
    // retained beside the epoch it replaces.
    let limits = Limits {
        retained_configurations: 1,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let p = provider("alpha");
    let receipt = pools
        .install(installation(&p, 0, b"k1", http_config("alpha", 1)))
        .await
        .expect("create");

    let refused = pools
        .install(installation(&p, 1, b"k2", http_config("alpha", 1)))
        .await;
    assert_eq!(
        refused,
        Err(InstallError::Capacity(Exhausted {
            resource: "retained_configurations",
            used: 1,
            limit: 1,
            requested: 1,
        }))
    );
    let lease = pools
        .client(&p, &receipt.slots[0], OriginKind::Http)
        .expect("old epoch intact");
    assert_eq!(lease.epoch(), Epoch::new(1));
    assert_eq!(pools.snapshot().retained_epochs, 1);
}

#[tokio::test]
async fn rotation_counts_clients_of_every_retained_epoch_of_the_provider() {
    // Five clients now and five more for the replacement exceed eight clients
    // per provider: rotation creates no extra allowance.
    let pools = start(Limits::DEFAULT).await;
    let p = provider("alpha");
    pools
        .install(installation(&p, 0, b"k1", http_config("alpha", 5)))
        .await
        .expect("create");
    let refused = pools
        .install(installation(&p, 1, b"k2", http_config("alpha", 5)))
        .await;
    assert_eq!(
        refused,
        Err(InstallError::Capacity(Exhausted {
            resource: "clients_per_provider",
            used: 5,
            limit: 8,
            requested: 5,
        }))
    );
    assert_eq!(pools.describe(&p).map(|d| d.epoch), Some(Epoch::new(1)));
    assert_eq!(pools.snapshot().clients, 5);
}

#[tokio::test(start_paused = true)]
async fn a_retired_epoch_stays_retained_until_its_last_lease_is_gone() {
    let pools = start(Limits::DEFAULT).await;
    let p = provider("alpha");
    let first = pools
        .install(installation(&p, 0, b"k1", http_config("alpha", 2)))
        .await
        .expect("create");
    let old_lease = pools
        .client(&p, &first.slots[0], OriginKind::Http)
        .expect("lease on epoch 1");

    let second = pools
        .install(installation(&p, 1, b"k2", http_config("alpha", 2)))
        .await
        .expect("rotate");
    let new_lease = pools
        .client(&p, &second.slots[0], OriginKind::Http)
        .expect("lease on epoch 2");
    assert_eq!(
        (old_lease.epoch(), new_lease.epoch()),
        (Epoch::new(1), Epoch::new(2))
    );
    assert_ne!(old_lease.client_id(), new_lease.client_id());

    let registry = pools.registry_cell();
    let snapshot = pools.snapshot();
    assert_eq!(
        (
            snapshot.configured_epochs,
            snapshot.retained_epochs,
            snapshot.clients
        ),
        (1, 2, 4),
        "the retired epoch keeps its reservations while leased"
    );
    let epoch_actors = |pools: &provider_pools::ProviderPools| {
        let controls = pools.control_cells().map(|cell| cell.get_id());
        registry
            .get_children()
            .iter()
            .filter(|child| !controls.contains(&child.get_id()))
            .count()
    };
    assert_eq!(epoch_actors(&pools), 2, "one epoch actor per epoch");

    drop(old_lease);
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().retained_epochs,
        1,
        "the drained epoch is released"
    );
    let snapshot = pools.snapshot();
    assert_eq!((snapshot.configured_epochs, snapshot.clients), (1, 2));
    assert_eq!(epoch_actors(&pools), 1, "the drained epoch actor stops");
    drop(new_lease);
}

#[tokio::test]
async fn digest_excludes_credentials() {
    let pools = start(Limits::DEFAULT).await;
    let p = provider("alpha");
    let first = pools
        .install(installation(
            &p,
            0,
            b"credential-one",
            http_config("alpha", 2),
        ))
        .await
        .expect("create");
    let same_config = pools
        .install(installation(
            &p,
            1,
            b"credential-two-differs",
            http_config("alpha", 2),
        ))
        .await
        .expect("rotate credential only");
    assert_eq!(first.digest, same_config.digest);

    let other_config = pools
        .install(installation(
            &p,
            2,
            b"credential-two-differs",
            http_config("alpha", 3),
        ))
        .await
        .expect("change configuration");
    assert_ne!(same_config.digest, other_config.digest);
}

#[tokio::test]
async fn a_service_name_belongs_to_one_provider() {
    let pools = start(Limits::DEFAULT).await;
    let (a, b) = (provider("alpha"), provider("beta"));
    pools
        .install(installation(&a, 0, b"k", http_config("shared", 1)))
        .await
        .expect("alpha takes the name");
    let refused = pools
        .install(installation(&b, 0, b"k", http_config("shared", 1)))
        .await;
    assert!(
        matches!(&refused, Err(InstallError::ServiceTaken { owner, .. }) if *owner == a),
        "got {refused:?}"
    );
    assert!(pools.describe(&b).is_none());
}

#[tokio::test]
async fn lookups_after_rotation_resolve_against_the_new_epoch() {
    let (pools, p, first) = with_alpha(Limits::DEFAULT, 3).await;
    pools
        .install(installation(&p, 1, b"k", http_config("alpha", 1)))
        .await
        .expect("rotate to one origin");
    assert_eq!(
        pools
            .client(&p, &first.slots[0], OriginKind::Http)
            .map(|l| l.epoch()),
        Ok(Epoch::new(2)),
        "slots survive a rotation of the same installation"
    );
    assert_eq!(
        pools.client(&p, &first.slots[2], OriginKind::Http).err(),
        Some(LookupError::UnknownSlot {
            provider: p.clone(),
            slot: OriginSlot::new(2),
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_lookups_never_go_back_an_epoch() {
    // Readers lease continuously while the provider rotates: publish is
    // atomic, so no reader is ever handed an epoch older than one it saw.
    const ROTATIONS: u64 = 40;
    // Room for every epoch at once, so that no rotation waits for a drain.
    let pools = start(Limits {
        retained_configurations: 64,
        clients_per_provider: 64,
        ..Limits::DEFAULT
    })
    .await;
    let p = provider("alpha");
    let receipt = pools
        .install(installation(&p, 0, b"k0", http_config("alpha", 1)))
        .await
        .expect("create");
    let slot = receipt.slots[0];
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Rotations start once every reader holds its first lease.
    let started = std::sync::Arc::new(tokio::sync::Barrier::new(5));

    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (pools, p, stop, started) = (pools.clone(), p.clone(), stop.clone(), started.clone());
        readers.spawn(async move {
            let mut last = Epoch::ZERO;
            let first = pools
                .client(&p, &slot, OriginKind::Http)
                .expect("epoch 1 is published");
            started.wait().await;
            drop(first);
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                let lease = pools
                    .client(&p, &slot, OriginKind::Http)
                    .expect("a current epoch is always published");
                assert!(lease.epoch() >= last, "{:?} after {last:?}", lease.epoch());
                last = lease.epoch();
                tokio::task::yield_now().await;
            }
        });
    }

    started.wait().await;
    for installed in 1..=ROTATIONS {
        pools
            .install(installation(&p, installed, b"k", http_config("alpha", 1)))
            .await
            .expect("rotate");
    }
    stop.store(true, std::sync::atomic::Ordering::Release);
    while let Some(reader) = readers.join_next().await {
        reader.expect("reader task");
    }
    assert_eq!(
        pools.describe(&p).map(|d| d.epoch),
        Some(Epoch::new(ROTATIONS + 1))
    );
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().retained_epochs,
        1,
        "every superseded epoch drains"
    );
}

#[tokio::test(start_paused = true)]
async fn adapter_state_is_built_per_epoch_from_its_credential_and_dropped_with_it() {
    // What an adapter builds from the credential (an SDK client, say).
    struct Built {
        credential: Vec<u8>,
        dropped: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }
    impl Drop for Built {
        fn drop(&mut self) {
            self.dropped
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let build = |dropped: &std::sync::Arc<std::sync::atomic::AtomicBool>| {
        let dropped = dropped.clone();
        move |lease: &provider_pools::ClientLease| {
            Ok::<_, ()>(Built {
                credential: lease.credential_for_adapter().expose_to_adapter().to_vec(),
                dropped,
            })
        }
    };
    let pools = start(Limits::DEFAULT).await;
    let p = provider("alpha");
    let first = pools
        .install(installation(&p, 0, b"k1", http_config("alpha", 1)))
        .await
        .expect("create");
    let old_dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let old_lease = pools
        .client(&p, &first.slots[0], OriginKind::Http)
        .expect("lease on epoch 1");
    let old = old_lease
        .adapter_state(build(&old_dropped))
        .expect("built on epoch 1");
    let again = pools
        .client(&p, &first.slots[0], OriginKind::Http)
        .expect("second lease on epoch 1")
        .adapter_state(|_| -> Result<Built, ()> { panic!("epoch 1 builds once") })
        .expect("kept on epoch 1");
    assert!(std::sync::Arc::ptr_eq(&old, &again));
    drop(again);

    let second = pools
        .install(installation(&p, 1, b"k2", http_config("alpha", 1)))
        .await
        .expect("rotate");
    let new_dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let new = pools
        .client(&p, &second.slots[0], OriginKind::Http)
        .expect("lease on epoch 2")
        .adapter_state(build(&new_dropped))
        .expect("built on epoch 2");
    assert_eq!(
        (old.credential.as_slice(), new.credential.as_slice()),
        (&b"k1"[..], &b"k2"[..]),
        "each epoch builds from its own credential"
    );
    assert_eq!(
        old_lease
            .adapter_state(|_| -> Result<Built, ()> { panic!("kept") })
            .map(|b| b.credential.clone()),
        Ok(b"k1".to_vec()),
        "a call still on epoch 1 keeps epoch 1's value"
    );

    drop(old);
    drop(old_lease);
    support::quiescent(&pools).await;
    assert!(
        old_dropped.load(std::sync::atomic::Ordering::SeqCst),
        "the drained epoch drops its adapter state"
    );
    assert!(!new_dropped.load(std::sync::atomic::Ordering::SeqCst));
}

/// A rotation takes the provider and the new credential only: the next
/// epoch keeps the current authority and configuration (same digest,
/// which excludes credentials), and a provider with nothing installed is
/// refused naming it.
#[tokio::test]
async fn rotate_takes_the_provider_and_the_new_credential_only() {
    let pools = start(Limits::DEFAULT).await;
    let p = provider("alpha");
    let first = pools
        .install(installation(&p, 0, b"k1", http_config("alpha", 2)))
        .await
        .expect("install");

    let credential = provider_pools::Credential::from_slice(b"k2").expect("credential");
    let second = pools.rotate(&p, credential).await.expect("rotation");
    assert_eq!(second.epoch, Epoch::new(2));
    assert_eq!(second.digest, first.digest);
    assert_eq!(second.slots.len(), 2);
    let described = pools.describe(&p).expect("installed");
    assert_eq!(
        (described.epoch, &described.authority),
        (
            Epoch::new(2),
            &installation(&p, 0, b"k", http_config("alpha", 2)).authority
        )
    );

    let unknown = provider("nobody");
    let credential = provider_pools::Credential::from_slice(b"k").expect("credential");
    assert_eq!(
        pools.rotate(&unknown, credential).await,
        Err(InstallError::NotInstalled { provider: unknown })
    );
}
