//! Bad state files and backups: each refused with a typed error, the
//! previous state intact — a refused state file is left as it was, and a
//! refused restore leaves the live state unchanged in memory and on disk.

mod file_support;

use std::fs;

use file_support::{addresses, global, node, registration, request, Place};
use provider_pools_control_plane::file::{FileOptions, MAX_STATE_FILE_BYTES};
use provider_pools_control_plane::{ControlPlane, ControlPlaneError, StoreLimits};

/// Writes `document` as the state file and opens it with `options`: the
/// open is refused and the file is left byte for byte.
fn refused_on_open(document: &[u8], options: impl Fn(&Place) -> FileOptions) -> ControlPlaneError {
    let place = Place::new();
    fs::write(&place.path, document).expect("state file written");
    let error = options(&place)
        .open(&place.path)
        .expect_err("the state file is refused");
    assert!(
        place.bytes() == document,
        "a refused state file is left as it was"
    );
    error
}

/// Restores `document` as a backup into a live client holding one
/// registration and one lease: refused, and the live state is unchanged.
async fn refused_on_restore(
    document: &[u8],
    options: impl Fn(&Place) -> FileOptions,
) -> ControlPlaneError {
    let place = Place::new();
    let client = options(&place).open(&place.path).expect("opened");
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    let grant = client
        .acquire(request(&global("scheduler"), "node-a"))
        .await
        .expect("acquired");
    let before = place.bytes();
    let elsewhere = tempfile::tempdir().expect("backup directory");
    let backup = elsewhere.path().join("backup.json");
    fs::write(&backup, document).expect("backup written");

    let error = client
        .restore_from(&backup)
        .expect_err("the backup is refused");
    assert!(place.bytes() == before, "the state file is unchanged");
    assert_eq!(
        place.leftovers(&[]),
        Vec::<String>::new(),
        "no staged file left"
    );
    assert_eq!(addresses(&client, "billing").await, ["10.0.0.1:8443"]);
    let lease = client
        .read_lease(global("scheduler"))
        .await
        .expect("read")
        .expect("present");
    assert!(lease.is_held_by(&node("node-a"), grant.token));
    error
}

fn defaults(place: &Place) -> FileOptions {
    place.options()
}

/// Both refusals of `document`, with the default options.
async fn refused(document: &[u8]) -> [ControlPlaneError; 2] {
    [
        refused_on_open(document, defaults),
        refused_on_restore(document, defaults).await,
    ]
}

fn assert_corrupt(errors: [ControlPlaneError; 2], reason_holds: &str) {
    for (error, expected_what) in errors.into_iter().zip(["state file", "backup"]) {
        match error {
            ControlPlaneError::Corrupt { what, reason } => {
                assert_eq!(what, expected_what);
                assert!(
                    reason.contains(reason_holds),
                    "{reason:?} lacks {reason_holds:?}"
                );
            }
            other => panic!("expected corrupt {expected_what}, got {other:?}"),
        }
    }
}

const EMPTY: &str = r#"{"version":1,"registrations":[],"leases":[]}"#;

fn lease_json(name: &str, token: &str) -> String {
    format!(
        r#"{{"key":{{"scope":"global","name":"{name}"}},"holder":null,"token":{token},"expires_at_ms":0}}"#
    )
}

fn registration_json(service: &str, node: &str, ttl_ms: u64) -> String {
    format!(
        r#"{{"registration":{{"service":"{service}","node":"{node}","address":"10.0.0.1:1","metadata":{{}},"ttl_ms":{ttl_ms}}},"expires_at_ms":0}}"#
    )
}

fn document(registrations: &[String], leases: &[String]) -> Vec<u8> {
    format!(
        r#"{{"version":1,"registrations":[{}],"leases":[{}]}}"#,
        registrations.join(","),
        leases.join(",")
    )
    .into_bytes()
}

#[tokio::test]
async fn an_oversized_file_is_refused_before_it_is_decoded() {
    // Garbage from the first byte: a decoder that ran first would answer
    // `Corrupt`, not `TooLarge`.
    let mut oversized = b"not json at all".to_vec();
    oversized.resize(
        usize::try_from(MAX_STATE_FILE_BYTES).expect("fits") + 1,
        b' ',
    );
    let [on_open, on_restore] = refused(&oversized).await;
    assert!(
        matches!(on_open, ControlPlaneError::TooLarge { what: "state file", limit } if limit == MAX_STATE_FILE_BYTES),
        "{on_open:?}"
    );
    assert!(
        matches!(on_restore, ControlPlaneError::TooLarge { what: "backup", limit } if limit == MAX_STATE_FILE_BYTES),
        "{on_restore:?}"
    );
}

#[tokio::test]
async fn malformed_json_is_corrupt() {
    assert_corrupt(
        refused(br#"{"version":1,"registrations":[}"#).await,
        "line 1",
    );
    assert_corrupt(refused(b"").await, "EOF");
    assert_corrupt(
        refused(format!("{EMPTY} trailing").as_bytes()).await,
        "trailing",
    );
}

#[tokio::test]
async fn a_truncated_file_is_corrupt() {
    let place = Place::new();
    let client = place.open();
    for name in ["node-a", "node-b", "node-c"] {
        client
            .register(registration("billing", name, "10.0.0.1:8443"))
            .await
            .expect("registered");
    }
    client
        .acquire(request(&global("scheduler"), "node-a"))
        .await
        .expect("acquired");
    let whole = place.bytes();
    drop(client);
    // A version-2 file cut anywhere has lost its checksum trailer.
    assert_corrupt(
        refused(&whole[..whole.len() / 2]).await,
        "must end with its checksum trailer",
    );
    // A version-1 file has none to lose: the decoder finds the cut.
    let legacy = document(&[registration_json("billing", "node-a", 1_000)], &[]);
    assert_corrupt(refused(&legacy[..legacy.len() / 2]).await, "EOF");
}

#[tokio::test]
async fn more_records_or_bytes_than_the_limits_are_refused() {
    let leases: Vec<String> = (0..5).map(|n| lease_json(&format!("l{n}"), "1")).collect();
    let five = document(&[], &leases);
    let four_records = |place: &Place| {
        place
            .options()
            .with_limits(StoreLimits {
                max_records: 4,
                max_bytes: 1 << 20,
            })
            .expect("tighter")
    };
    let refusals = [
        refused_on_open(&five, four_records),
        refused_on_restore(&five, four_records).await,
    ];
    for error in refusals {
        assert!(
            matches!(error, ControlPlaneError::LimitExceeded { limit: "records" }),
            "{error:?}"
        );
    }

    // Each of these lease slots is charged 96 + 2 bytes.
    let under_five_slots = |place: &Place| {
        place
            .options()
            .with_limits(StoreLimits {
                max_records: 100,
                max_bytes: 4 * 98 + 97,
            })
            .expect("tighter")
    };
    let refusals = [
        refused_on_open(&five, under_five_slots),
        refused_on_restore(&five, under_five_slots).await,
    ];
    for error in refusals {
        assert!(
            matches!(
                error,
                ControlPlaneError::LimitExceeded {
                    limit: "retained bytes"
                }
            ),
            "{error:?}"
        );
    }
}

#[tokio::test]
async fn duplicate_keys_are_corrupt() {
    let twice = registration_json("billing", "node-a", 1_000);
    assert_corrupt(
        refused(&document(&[twice.clone(), twice], &[])).await,
        "appears twice",
    );
    let lease = lease_json("scheduler", "1");
    assert_corrupt(
        refused(&document(&[], &[lease.clone(), lease])).await,
        "appears twice",
    );
    assert_corrupt(
        refused(br#"{"version":1,"version":1,"registrations":[],"leases":[]}"#).await,
        "`version` must come first, once",
    );
    assert_corrupt(
        refused(br#"{"version":1,"registrations":[],"leases":[],"leases":[]}"#).await,
        "duplicate field `leases`",
    );
    let record = r#"{"key":{"scope":"global","name":"a"},"holder":null,"token":1,"token":2,"expires_at_ms":0}"#;
    assert_corrupt(
        refused(&document(&[], &[record.to_owned()])).await,
        "duplicate field `token`",
    );
}

#[tokio::test]
async fn an_unknown_or_misplaced_version_is_corrupt() {
    assert_corrupt(
        refused(br#"{"version":3,"registrations":[],"leases":[]}"#).await,
        "version 3 is not supported (only 1 and 2)",
    );
    assert_corrupt(
        refused(br#"{"version":2,"registrations":[],"leases":[]}"#).await,
        "version 2 must end with its checksum trailer",
    );
    assert_corrupt(
        refused(br#"{"registrations":[],"version":1,"leases":[]}"#).await,
        "`version` must come first",
    );
    assert_corrupt(
        refused(br#"{"registrations":[],"leases":[]}"#).await,
        "`version` must come first",
    );
    assert_corrupt(
        refused(br#"{"version":1,"leases":[]}"#).await,
        "missing field `registrations`",
    );
    assert_corrupt(
        refused(br#"{"version":1,"registrations":[],"leases":[],"extra":0}"#).await,
        "unknown field `extra`",
    );
}

#[tokio::test]
async fn an_overflowing_or_zero_epoch_is_corrupt() {
    assert_corrupt(
        refused(&document(
            &[],
            &[lease_json("scheduler", "18446744073709551616")],
        ))
        .await,
        "line 1",
    );
    assert_corrupt(
        refused(&document(&[], &[lease_json("scheduler", "-1")])).await,
        "line 1",
    );
    assert_corrupt(
        refused(&document(&[], &[lease_json("scheduler", "0")])).await,
        "has token 0",
    );
}

#[tokio::test]
async fn invalid_names_and_values_are_refused_by_the_validating_types() {
    assert_corrupt(
        refused(&document(
            &[registration_json("billing", "a/b", 1_000)],
            &[],
        ))
        .await,
        "invalid node",
    );
    assert_corrupt(
        refused(&document(
            &[registration_json("bill ing", "node-a", 1_000)],
            &[],
        ))
        .await,
        "invalid service",
    );
    assert_corrupt(
        refused(&document(&[], &[lease_json("../etc", "1")])).await,
        "invalid lease",
    );
    assert_corrupt(
        refused(&document(&[registration_json("billing", "node-a", 0)], &[])).await,
        "invalid ttl",
    );
}
