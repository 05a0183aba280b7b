//! One process owns a state file: a second client is refused, and what a
//! dead writer left behind is cleaned up by the next owner.

mod file_support;

use std::fs;
use std::io::ErrorKind;

use file_support::{addresses, registration, Place};
use provider_pools_control_plane::{ControlPlane, ControlPlaneError};

fn assert_locked(result: Result<impl std::fmt::Debug, ControlPlaneError>) {
    match result {
        Err(ControlPlaneError::Storage {
            operation: "lock",
            source,
        }) => assert_eq!(source.kind(), ErrorKind::WouldBlock),
        other => panic!("expected the lock to be refused, got {other:?}"),
    }
}

#[test]
fn a_second_client_on_the_same_state_file_is_refused() {
    let place = Place::new();
    let owner = place.open();
    assert_locked(place.options().open(&place.path));
    // Another spelling of the same path is the same lock.
    let respelled = place.directory.path().join(".").join("control-plane.json");
    assert_locked(place.options().open(respelled));

    drop(owner);
    let _next = place
        .options()
        .open(&place.path)
        .expect("free once the owner is gone");
}

#[tokio::test]
async fn a_leftover_staged_file_is_ignored_and_removed_on_open() {
    let place = Place::new();
    let client = place.open();
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    drop(client);
    let committed = place.bytes();
    let directory = place.directory.path();
    let leftover = directory.join("control-plane.json.tmp-4242-7");
    fs::write(&leftover, b"{\"version\":1,\"registrations\":[").expect("leftover written");
    let unrelated = [
        directory.join("other.json.tmp-4242-7"),
        directory.join("control-plane.json.tmp-notes"),
        directory.join("control-plane.json.tmp-1-2.lock"),
    ];
    for path in &unrelated {
        fs::write(path, b"not ours").expect("unrelated written");
    }

    let client = place.open();
    assert_eq!(addresses(&client, "billing").await, ["10.0.0.1:8443"]);
    assert_eq!(place.bytes(), committed);
    assert!(!leftover.exists(), "the leftover is removed");
    for path in &unrelated {
        assert!(path.exists(), "{} is left alone", path.display());
    }
}
