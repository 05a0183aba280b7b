//! Backup and restore: a backup is an exact, validated copy of the state
//! file; a restore replaces the state only with a valid backup that moves
//! no fencing token back.

mod file_support;

use std::fs;

use file_support::{addresses, global, node, registration, request, Place};
use provider_pools_control_plane::file::MAX_STATE_FILE_BYTES;
use provider_pools_control_plane::{ControlPlane, ControlPlaneError, PresenceKey};
use tempfile::TempDir;

fn backups() -> (TempDir, std::path::PathBuf) {
    let directory = tempfile::tempdir().expect("backup directory");
    let path = directory.path().join("backup.json");
    (directory, path)
}

fn leftovers_beside(backup: &std::path::Path) -> Vec<String> {
    let directory = backup.parent().expect("has a directory");
    let mut left: Vec<String> = fs::read_dir(directory)
        .expect("listed")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path != backup)
        .map(|path| path.display().to_string())
        .collect();
    left.sort();
    left
}

#[tokio::test]
async fn a_backup_restores_the_state_it_was_taken_from() {
    let place = Place::new();
    let (_backups, backup) = backups();
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
    client.backup_to(&backup).expect("backed up");
    assert!(
        fs::read(&backup).expect("readable") == place.bytes(),
        "an exact copy"
    );
    assert_eq!(leftovers_beside(&backup), Vec::<String>::new());
    let backed_up = place.bytes();

    client
        .register(registration("billing", "node-b", "10.0.0.2:8443"))
        .await
        .expect("registered");
    client
        .deregister(PresenceKey {
            service: file_support::service("billing"),
            node: node("node-a"),
        })
        .await
        .expect("deregistered");
    client.release(grant.clone()).await.expect("released");
    // Released, the lease keeps its token: the backup may restore it.

    client.restore_from(&backup).expect("restored");
    assert!(place.bytes() == backed_up, "the state file is the backup");
    assert_eq!(place.leftovers(&[]), Vec::<String>::new());
    assert_eq!(addresses(&client, "billing").await, ["10.0.0.1:8443"]);
    let lease = client
        .read_lease(key.clone())
        .await
        .expect("read")
        .expect("present");
    assert!(lease.is_held_by(&node("node-a"), grant.token));
    drop(client);

    let client = place.open();
    assert_eq!(addresses(&client, "billing").await, ["10.0.0.1:8443"]);
    client.renew(grant).await.expect("the restored grant holds");
}

#[tokio::test]
async fn a_backup_of_a_state_never_written_is_the_empty_document() {
    let place = Place::new();
    let (_backups, backup) = backups();
    let client = place.open();
    client.backup_to(&backup).expect("backed up");
    let written = fs::read_to_string(&backup).expect("readable");
    assert!(
        written.starts_with(r#"{"version":2,"registrations":[],"leases":[],"sha256":""#),
        "{written}"
    );
    client
        .restore_from(&backup)
        .expect("the empty backup restores");
}

#[tokio::test]
async fn a_corrupt_backup_is_refused_and_the_live_state_is_unchanged() {
    let place = Place::new();
    let (_backups, backup) = backups();
    let client = place.open();
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    client.backup_to(&backup).expect("backed up");
    client
        .register(registration("billing", "node-b", "10.0.0.2:8443"))
        .await
        .expect("registered");
    let live = place.bytes();
    let whole = fs::read(&backup).expect("readable");
    fs::write(&backup, &whole[..whole.len() - 3]).expect("corrupted");

    let error = client.restore_from(&backup).expect_err("corrupt");
    assert!(
        matches!(error, ControlPlaneError::Corrupt { what: "backup", .. }),
        "{error:?}"
    );
    assert!(place.bytes() == live, "the state file is unchanged");
    assert_eq!(
        place.leftovers(&[]),
        Vec::<String>::new(),
        "the staged copy is removed"
    );
    assert_eq!(
        addresses(&client, "billing").await,
        ["10.0.0.1:8443", "10.0.0.2:8443"]
    );
}

#[tokio::test]
async fn a_backup_over_16_mib_is_refused() {
    let place = Place::new();
    let (_backups, backup) = backups();
    let client = place.open();
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    let live = place.bytes();
    let mut oversized = br#"{"version":1,"registrations":[],"leases":[]}"#.to_vec();
    oversized.resize(
        usize::try_from(MAX_STATE_FILE_BYTES).expect("fits") + 1,
        b' ',
    );
    fs::write(&backup, &oversized).expect("written");

    let error = client.restore_from(&backup).expect_err("too large");
    assert!(
        matches!(error, ControlPlaneError::TooLarge { what: "backup", limit } if limit == MAX_STATE_FILE_BYTES),
        "{error:?}"
    );
    assert!(place.bytes() == live, "the state file is unchanged");
    assert_eq!(place.leftovers(&[]), Vec::<String>::new());
    assert_eq!(addresses(&client, "billing").await, ["10.0.0.1:8443"]);
}

fn assert_refused_backup(error: ControlPlaneError, expected: &str) {
    match error {
        ControlPlaneError::Invalid {
            field: "backup",
            reason,
        } => assert_eq!(reason, expected),
        other => panic!("expected an invalid backup, got {other:?}"),
    }
}

#[tokio::test]
async fn a_restore_never_moves_a_fencing_token_back() {
    let place = Place::new();
    let (_backups, backup) = backups();
    let client = place.open();
    let key = global("scheduler");
    let first = client
        .acquire(request(&key, "node-a"))
        .await
        .expect("acquired");
    client.backup_to(&backup).expect("backed up");
    client.release(first).await.expect("released");
    let second = client
        .acquire(request(&key, "node-b"))
        .await
        .expect("acquired");
    let live = place.bytes();

    // A lower token.
    assert_refused_backup(
        client
            .restore_from(&backup)
            .expect_err("the token would go back"),
        "lease global/scheduler would go back from token 2 to 1",
    );
    assert!(place.bytes() == live, "the state file is unchanged");
    // A lease the backup does not know: its tokens would start again.
    client.backup_to(&backup).expect("backed up");
    client
        .acquire(request(&global("newer"), "node-b"))
        .await
        .expect("acquired");
    let live_with_newer = place.bytes();
    assert_refused_backup(
        client
            .restore_from(&backup)
            .expect_err("a slot would be forgotten"),
        "lease global/newer (token 1) is missing; its tokens would start again",
    );

    assert!(
        place.bytes() == live_with_newer,
        "the state file is unchanged"
    );
    assert_eq!(place.leftovers(&[]), Vec::<String>::new());
    let lease = client
        .read_lease(key)
        .await
        .expect("read")
        .expect("present");
    assert!(lease.is_held_by(&node("node-b"), second.token));
}

#[tokio::test]
async fn a_backup_that_does_not_validate_never_replaces_its_destination() {
    let place = Place::new();
    let (_backups, backup) = backups();
    let client = place.open();
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    client.backup_to(&backup).expect("backed up");
    let previous_backup = fs::read(&backup).expect("readable");
    // The state file is damaged under the client (outside its lock's
    // protection): the copy fails validation.
    fs::write(&place.path, b"{\"version\":1,").expect("damaged");

    let error = client.backup_to(&backup).expect_err("does not validate");
    assert!(
        matches!(error, ControlPlaneError::Corrupt { what: "backup", .. }),
        "{error:?}"
    );
    assert!(
        fs::read(&backup).expect("readable") == previous_backup,
        "the destination is unchanged"
    );
    assert_eq!(
        leftovers_beside(&backup),
        Vec::<String>::new(),
        "the staged copy is removed"
    );
}
