//! The state file and its backups carry a SHA-256 checksum, verified before
//! anything is decoded: a changed byte is `Corrupt`, never a silently
//! different state — in particular never a fencing token moved back. A
//! version-1 file (written before the checksum existed) is read once and
//! rewritten with one.

mod file_support;

use std::fs;
use std::sync::OnceLock;

use file_support::{addresses, global, node, registration, request, service, Place};
use proptest::prelude::*;
use provider_pools_control_plane::file::FileClient;
use provider_pools_control_plane::{ControlPlane, ControlPlaneError, LeaseState, Registration};

/// The reason of a `Corrupt` error naming `expected_what`.
fn corrupt_reason(error: ControlPlaneError, expected_what: &str) -> String {
    match error {
        ControlPlaneError::Corrupt { what, reason } if what == expected_what => reason,
        other => panic!("expected a corrupt {expected_what}, got {other:?}"),
    }
}

/// `bytes` with the first `from` after `after` replaced by `to`.
fn replaced(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let text = std::str::from_utf8(bytes).expect("the state file is UTF-8");
    assert!(text.contains(from), "{from} is in {text}");
    text.replacen(from, to, 1).into_bytes()
}

#[tokio::test]
async fn a_flipped_token_in_the_state_file_is_refused_as_corrupt_not_regressed() {
    let place = Place::new();
    let client = place.open();
    let key = global("scheduler");
    for _ in 0..7 {
        let grant = client
            .acquire(request(&key, "node-a"))
            .await
            .expect("acquired");
        client.release(grant).await.expect("released");
    }
    drop(client);
    // One bit: "token":7 (0x37) becomes "token":3 (0x33).
    let flipped = replaced(&place.bytes(), r#""token":7"#, r#""token":3"#);
    fs::write(&place.path, &flipped).expect("flipped");

    let error = place
        .options()
        .open(&place.path)
        .expect_err("the altered file is refused");
    let reason = corrupt_reason(error, "state file");
    assert!(reason.contains("checksum mismatch"), "{reason}");
    assert!(
        place.bytes() == flipped,
        "a refused state file is left as it was"
    );
}

#[tokio::test]
async fn a_backup_with_a_flipped_byte_is_refused_and_the_live_state_is_unchanged() {
    let place = Place::new();
    let client = place.open();
    let key = global("scheduler");
    let grant = client
        .acquire(request(&key, "node-a"))
        .await
        .expect("acquired");
    let elsewhere = tempfile::tempdir().expect("backup directory");
    let backup = elsewhere.path().join("backup.json");
    client.backup_to(&backup).expect("backed up");
    let renewed = client.renew(grant).await.expect("renewed");
    let before = place.bytes();
    let taken = fs::read(&backup).expect("backup readable");
    fs::write(
        &backup,
        replaced(&taken, r#""holder":"node-a""#, r#""holder":"node-b""#),
    )
    .expect("altered");

    let reason = corrupt_reason(client.restore_from(&backup).expect_err("refused"), "backup");
    assert!(reason.contains("checksum mismatch"), "{reason}");
    assert!(place.bytes() == before, "the state file is unchanged");
    let lease = client
        .read_lease(key)
        .await
        .expect("read")
        .expect("present");
    assert!(lease.is_held_by(&node("node-a"), renewed.token));
}

#[tokio::test]
async fn a_damaged_checksum_trailer_is_corrupt() {
    let place = Place::new();
    let client = place.open();
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    drop(client);
    let whole = place.bytes();
    let trailer_at = whole.len() - 66; // the 64 digits, `"` and `}`
    for (index, byte, holds) in [
        (trailer_at, b'G', "malformed"),
        (trailer_at, b'A', "malformed"),
        (whole.len() - 1, b' ', "malformed"),
        (whole.len() - 77, b' ', "must end with its checksum trailer"),
    ] {
        let mut damaged = whole.clone();
        damaged[index] = byte;
        fs::write(&place.path, &damaged).expect("damaged");
        let error = place.options().open(&place.path).expect_err("refused");
        let reason = corrupt_reason(error, "state file");
        assert!(reason.contains(holds), "{reason} lacks {holds}");
    }
}

#[tokio::test]
async fn a_version_1_file_with_a_checksum_field_is_corrupt() {
    let place = Place::new();
    fs::write(
        &place.path,
        br#"{"version":1,"registrations":[],"leases":[],"sha256":"00"}"#,
    )
    .expect("written");
    let error = place.options().open(&place.path).expect_err("refused");
    let reason = corrupt_reason(error, "state file");
    assert!(reason.contains("unknown field `sha256`"), "{reason}");
}

const LEGACY: &str = r#"{"version":1,"registrations":[{"registration":{"service":"billing","node":"node-a","address":"10.0.0.1:8443","metadata":{"zone":"eu-1"},"ttl_ms":60000},"expires_at_ms":61000}],"leases":[{"key":{"scope":"global","name":"scheduler"},"holder":null,"token":5,"expires_at_ms":0}]}"#;

#[tokio::test]
async fn a_version_1_file_is_read_once_and_rewritten_with_a_checksum() {
    let place = Place::new();
    fs::write(&place.path, LEGACY).expect("a version-1 state file");
    let client = place.open();
    let migrated = place.bytes();
    assert!(
        migrated.starts_with(br#"{"version":2,"#),
        "{}",
        String::from_utf8_lossy(&migrated)
    );
    assert!(migrated.ends_with(b"\"}") && migrated.windows(10).any(|w| w == br#""sha256":""#));
    assert_eq!(addresses(&client, "billing").await, ["10.0.0.1:8443"]);
    let grant = client
        .acquire(request(&global("scheduler"), "node-a"))
        .await
        .expect("acquired");
    assert_eq!(grant.token.get(), 6, "the version-1 token is kept");
    drop(client);

    // The rewritten file is verified from now on: the same one-bit damage
    // a version-1 file could not detect is refused.
    let flipped = replaced(&place.bytes(), r#""token":6"#, r#""token":2"#);
    fs::write(&place.path, flipped).expect("flipped");
    let reason = corrupt_reason(
        place.options().open(&place.path).expect_err("refused"),
        "state file",
    );
    assert!(reason.contains("checksum mismatch"), "{reason}");
}

#[tokio::test]
async fn a_version_1_backup_is_restored_as_a_version_2_state_file() {
    let place = Place::new();
    let client = place.open();
    let elsewhere = tempfile::tempdir().expect("backup directory");
    let backup = elsewhere.path().join("backup.json");
    fs::write(&backup, LEGACY).expect("a version-1 backup");
    client.restore_from(&backup).expect("restored");
    assert!(place.bytes().starts_with(br#"{"version":2,"#));
    assert_eq!(addresses(&client, "billing").await, ["10.0.0.1:8443"]);
    drop(client);
    // It reopens verified, and holds what the backup held.
    let client = place.open();
    let lease = client
        .read_lease(global("scheduler"))
        .await
        .expect("read")
        .expect("present");
    assert_eq!(lease.token.get(), 5);
}

/// What the byte-flip property compares: everything the client answers.
#[derive(Debug, PartialEq)]
struct Observed {
    billing: Vec<Registration>,
    search: Vec<Registration>,
    leases: Vec<Option<LeaseState>>,
    records: (usize, usize, u64),
}

const LEASES: [&str; 3] = ["scheduler", "compactor", "janitor"];

fn observe(client: &FileClient) -> Observed {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut leases = Vec::new();
        for name in LEASES {
            leases.push(client.read_lease(global(name)).await.expect("read"));
        }
        Observed {
            billing: client.discover(service("billing")).await.expect("found"),
            search: client.discover(service("search")).await.expect("found"),
            leases,
            records: {
                let stats = client.stats();
                (stats.registrations, stats.lease_slots, stats.current_bytes)
            },
        }
    })
}

/// A valid state file with registrations, metadata, held and released
/// leases, and what a client opening it observes.
fn original() -> &'static (Vec<u8>, Observed) {
    static ORIGINAL: OnceLock<(Vec<u8>, Observed)> = OnceLock::new();
    ORIGINAL.get_or_init(|| {
        let place = Place::new();
        let client = place.open();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            for (service_name, node_name) in [
                ("billing", "node-a"),
                ("billing", "node-b"),
                ("search", "node-c"),
            ] {
                let registration = registration(service_name, node_name, "10.0.0.1:8443")
                    .with_metadata("zone", "eu-1")
                    .expect("metadata");
                client.register(registration).await.expect("registered");
            }
            for (index, name) in LEASES.into_iter().enumerate() {
                for _ in 0..=index {
                    let grant = client
                        .acquire(request(&global(name), "node-a"))
                        .await
                        .expect("acquired");
                    if name != "scheduler" {
                        client.release(grant).await.expect("released");
                    }
                }
            }
        });
        drop(client);
        let client = place.open();
        let observed = observe(&client);
        (place.bytes(), observed)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random byte changes (one to four bytes, each XORed with a non-zero
    /// mask) of a valid state file: each file is refused with a typed error
    /// and left as it was, or opens to exactly the original state.
    #[test]
    fn random_byte_flips_are_refused_or_decode_to_exactly_the_original_state(
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..=4),
    ) {
        let (bytes, expected) = original();
        let mut damaged = bytes.clone();
        for (index, mask) in &flips {
            let at = index.index(damaged.len());
            damaged[at] ^= mask;
        }
        let place = Place::new();
        fs::write(&place.path, &damaged).expect("written");
        match place.options().open(&place.path) {
            Ok(client) => prop_assert_eq!(&observe(&client), expected),
            Err(
                ControlPlaneError::Corrupt { what: "state file", .. }
                | ControlPlaneError::TooLarge { .. }
                | ControlPlaneError::LimitExceeded { .. },
            ) => prop_assert!(place.bytes() == damaged, "a refused file is left as it was"),
            Err(other) => prop_assert!(false, "an untyped refusal: {other:?}"),
        }
    }
}
