//! A change that does not fit — the store's limits or the state file's —
//! leaves the previous registration or lease unchanged, in memory and on
//! disk; so does a change whose file cannot be written.

mod file_support;

use std::fs;

use file_support::{addresses, global, node, registration, request, Place};
use provider_pools_control_plane::file::FileOptions;
use provider_pools_control_plane::{ControlPlane, ControlPlaneError, LeaseRequest, StoreLimits};

fn tight_bytes(place: &Place, max_bytes: u64) -> FileOptions {
    place
        .options()
        .with_limits(StoreLimits {
            max_records: 100,
            max_bytes,
        })
        .expect("tighter")
}

#[tokio::test]
async fn a_replacement_over_the_store_limits_leaves_the_previous_record() {
    let place = Place::new();
    let client = tight_bytes(&place, 500).open(&place.path).expect("opened");
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    let key = global("scheduler");
    let grant = client.acquire(request(&key, "n")).await.expect("acquired");
    client.release(grant).await.expect("released");
    let before = place.bytes();

    let bigger = registration("billing", "node-a", "10.0.0.1:8443")
        .with_metadata("note", "x".repeat(400))
        .expect("metadata");
    let error = client.register(bigger).await.expect_err("does not fit");
    assert!(
        matches!(
            error,
            ControlPlaneError::LimitExceeded {
                limit: "retained bytes"
            }
        ),
        "{error:?}"
    );
    let error = client
        .acquire(request(&key, &"n".repeat(253)))
        .await
        .expect_err("does not fit");
    assert!(
        matches!(
            error,
            ControlPlaneError::LimitExceeded {
                limit: "retained bytes"
            }
        ),
        "{error:?}"
    );

    assert_eq!(addresses(&client, "billing").await, ["10.0.0.1:8443"]);
    let found = client
        .discover(file_support::service("billing"))
        .await
        .expect("discovered");
    assert!(found[0].metadata().is_empty());
    let lease = client
        .read_lease(key)
        .await
        .expect("read")
        .expect("present");
    assert_eq!((lease.holder, lease.token.get()), (None, 1));
    assert!(place.bytes() == before, "the state file is unchanged");
}

#[tokio::test]
async fn a_change_over_the_file_limit_is_undone_in_memory_and_on_disk() {
    let place = Place::new();
    let client = place
        .options()
        .with_max_file_bytes(600)
        .expect("tighter")
        .open(&place.path)
        .expect("opened");
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    let key = global("scheduler");
    let grant = client
        .acquire(request(&key, "node-a"))
        .await
        .expect("acquired");
    let before = place.bytes();
    let stats = client.stats();

    let bigger = registration("billing", "node-a", "10.0.0.1:8443")
        .with_metadata("note", "x".repeat(400))
        .expect("metadata");
    let error = client
        .register(bigger)
        .await
        .expect_err("the file would be too large");
    assert!(
        matches!(
            error,
            ControlPlaneError::TooLarge {
                what: "state file",
                limit: 600
            }
        ),
        "{error:?}"
    );
    let error = client
        .acquire(request(&global("another"), &"n".repeat(253)))
        .await
        .expect_err("the file would be too large");
    assert!(
        matches!(error, ControlPlaneError::TooLarge { .. }),
        "{error:?}"
    );

    let found = client
        .discover(file_support::service("billing"))
        .await
        .expect("discovered");
    assert_eq!(found.len(), 1);
    assert!(
        found[0].metadata().is_empty(),
        "the registration is the previous one"
    );
    assert_eq!(
        client.read_lease(global("another")).await.expect("read"),
        None
    );
    let lease = client
        .read_lease(key)
        .await
        .expect("read")
        .expect("present");
    assert!(lease.is_held_by(&node("node-a"), grant.token));
    let after = client.stats();
    assert_eq!(
        (after.registrations, after.lease_slots, after.current_bytes),
        (stats.registrations, stats.lease_slots, stats.current_bytes)
    );
    assert!(place.bytes() == before, "the state file is unchanged");
    assert_eq!(
        place.leftovers(&[]),
        Vec::<String>::new(),
        "the staged file is removed"
    );
}

#[tokio::test]
async fn swept_registrations_come_back_when_the_change_is_undone() {
    let place = Place::new();
    let options = |place: &Place| {
        place
            .options()
            .with_limits(StoreLimits {
                max_records: 2,
                max_bytes: 1 << 20,
            })
            .expect("tighter")
            .with_max_file_bytes(700)
            .expect("tighter")
    };
    let client = options(&place).open(&place.path).expect("opened");
    let short = provider_pools_control_plane::Registration::new(
        file_support::service("billing"),
        node("node-a"),
        "10.0.0.1:8443",
        std::time::Duration::from_secs(1),
    )
    .expect("valid");
    client.register(short).await.expect("registered");
    client
        .register(registration("billing", "node-b", "10.0.0.2:8443"))
        .await
        .expect("registered");
    place.clock.advance_ms(2_000);
    let before = place.bytes();
    let stats = client.stats();

    // Full: registering node-c sweeps the expired node-a, then its file is
    // too large, so node-a must come back.
    let bigger = registration("billing", "node-c", "10.0.0.3:8443")
        .with_metadata("note", "x".repeat(400))
        .expect("metadata");
    let error = client
        .register(bigger)
        .await
        .expect_err("the file would be too large");
    assert!(
        matches!(error, ControlPlaneError::TooLarge { .. }),
        "{error:?}"
    );
    let after = client.stats();
    assert_eq!(
        (after.registrations, after.current_bytes),
        (stats.registrations, stats.current_bytes)
    );
    assert!(place.bytes() == before, "the state file is unchanged");
    drop(client);
    let reopened = options(&place).open(&place.path).expect("reopened");
    assert_eq!(reopened.stats().registrations, 2);
}

#[tokio::test]
async fn a_change_whose_file_cannot_be_written_is_undone_in_memory_and_on_disk() {
    let place = Place::new();
    let client = place.open();
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    let key = global("scheduler");
    let grant = client
        .acquire(request(&key, "node-a"))
        .await
        .expect("acquired");
    drop(client);
    // A state file whose name leaves no room for its staged file's suffix
    // (`.tmp-<pid>-<seq>`): every staged write fails to be created, even
    // as root.
    let long = place.directory.path().join("s".repeat(248));
    fs::rename(&place.path, &long).expect("renamed");
    let before = fs::read(&long).expect("readable");
    let client = place.options().open(&long).expect("opened");

    let error = client
        .register(registration("billing", "node-b", "10.0.0.2:8443"))
        .await
        .expect_err("cannot be written");
    assert!(
        matches!(
            error,
            ControlPlaneError::Storage {
                operation: "create temporary",
                ..
            }
        ),
        "{error:?}"
    );
    let error = client
        .release(grant.clone())
        .await
        .expect_err("cannot be written");
    assert!(
        matches!(error, ControlPlaneError::Storage { .. }),
        "{error:?}"
    );
    let error = client
        .acquire(
            LeaseRequest::new(global("other"), node("node-b"), file_support::TTL).expect("valid"),
        )
        .await
        .expect_err("cannot be written");
    assert!(
        matches!(error, ControlPlaneError::Storage { .. }),
        "{error:?}"
    );

    assert_eq!(addresses(&client, "billing").await, ["10.0.0.1:8443"]);
    let lease = client
        .read_lease(key)
        .await
        .expect("read")
        .expect("present");
    assert!(lease.is_held_by(&node("node-a"), grant.token));
    assert_eq!(
        client.read_lease(global("other")).await.expect("read"),
        None
    );
    assert!(
        fs::read(&long).expect("readable") == before,
        "the state file is unchanged"
    );
}
