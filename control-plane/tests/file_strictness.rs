//! The state file is decoded strictly at every level: an unknown field or
//! a repeated key anywhere — the document, a record, a registration, its
//! metadata, a lease key — is `Corrupt`, and so is metadata holding NUL, CR
//! or LF. Each file is written as a valid version-2 document (its checksum
//! computed over the hostile bytes), so what refuses it is the decoder, not
//! the checksum; the refused file is left as it was.

mod file_support;

use std::fs;

use file_support::Place;
use provider_pools_control_plane::ControlPlaneError;
use sha2::Digest as _;

/// `body` (a document without its closing brace) ended with its checksum
/// trailer, as the file client writes it.
fn signed(body: &str) -> Vec<u8> {
    let digest = sha2::Sha256::digest(body.as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(r#"{body},"sha256":"{hex}"}}"#).into_bytes()
}

/// A version-2 document of the given records.
fn document(registrations: &[&str], leases: &[&str]) -> Vec<u8> {
    signed(&format!(
        r#"{{"version":2,"registrations":[{}],"leases":[{}]"#,
        registrations.join(","),
        leases.join(",")
    ))
}

/// Opens `document` as the state file: refused as `Corrupt` with a reason
/// holding `holds`, and left byte for byte.
fn assert_refused(document: &[u8], holds: &str) {
    let place = Place::new();
    fs::write(&place.path, document).expect("written");
    match place.options().open(&place.path) {
        Err(ControlPlaneError::Corrupt {
            what: "state file",
            reason,
        }) => assert!(reason.contains(holds), "{reason:?} lacks {holds:?}"),
        other => panic!(
            "expected a corrupt state file ({holds}), got {other:?} for {}",
            String::from_utf8_lossy(document)
        ),
    }
    assert!(
        place.bytes() == document,
        "a refused file is left as it was"
    );
}

const REGISTRATION: &str = r#"{"registration":{"service":"billing","node":"node-a","address":"10.0.0.1:1","metadata":{"zone":"eu-1"},"ttl_ms":1000},"expires_at_ms":0}"#;
const LEASE: &str =
    r#"{"key":{"scope":"global","name":"scheduler"},"holder":null,"token":1,"expires_at_ms":0}"#;

/// `record` with its first `from` replaced by `to`.
fn with(record: &str, from: &str, to: &str) -> String {
    assert!(record.contains(from), "{from} in {record}");
    record.replacen(from, to, 1)
}

#[test]
fn the_untouched_records_open() {
    let place = Place::new();
    fs::write(&place.path, document(&[REGISTRATION], &[LEASE])).expect("written");
    let _client = place
        .options()
        .open(&place.path)
        .expect("valid records open");
}

#[test]
fn unknown_fields_are_refused_at_every_level_of_the_state_file() {
    assert_refused(
        &signed(r#"{"version":2,"registrations":[],"leases":[],"extra":0"#),
        "unknown field `extra`",
    );
    let presence = with(
        REGISTRATION,
        r#""expires_at_ms":0"#,
        r#""expires_at_ms":0,"x":1"#,
    );
    assert_refused(&document(&[&presence], &[]), "unknown field `x`");
    let registration = with(REGISTRATION, r#""ttl_ms":1000"#, r#""ttl_ms":1000,"x":1"#);
    assert_refused(&document(&[&registration], &[]), "unknown field `x`");
    let lease = with(LEASE, r#""token":1"#, r#""token":1,"x":1"#);
    assert_refused(&document(&[], &[&lease]), "unknown field `x`");
    // The lease key is an adjacently tagged enum: serde names the two
    // fields it allows.
    let key = with(
        LEASE,
        r#""name":"scheduler""#,
        r#""name":"scheduler","x":1"#,
    );
    assert_refused(
        &document(&[], &[&key]),
        r#"string "x", expected "scope" or "name""#,
    );
}

#[test]
fn repeated_keys_are_refused_at_every_level_of_the_state_file() {
    assert_refused(
        &signed(r#"{"version":2,"registrations":[],"registrations":[],"leases":[]"#),
        "duplicate field `registrations`",
    );
    let presence = with(
        REGISTRATION,
        r#""expires_at_ms":0"#,
        r#""expires_at_ms":0,"expires_at_ms":5"#,
    );
    assert_refused(
        &document(&[&presence], &[]),
        "duplicate field `expires_at_ms`",
    );
    let registration = with(
        REGISTRATION,
        r#""node":"node-a""#,
        r#""node":"node-a","node":"node-b""#,
    );
    assert_refused(&document(&[&registration], &[]), "duplicate field `node`");
    let metadata = with(
        REGISTRATION,
        r#""zone":"eu-1""#,
        r#""zone":"eu-1","zone":"us-1""#,
    );
    assert_refused(&document(&[&metadata], &[]), "appears twice");
    let holder = with(
        LEASE,
        r#""holder":null"#,
        r#""holder":null,"holder":"node-a""#,
    );
    assert_refused(&document(&[], &[&holder]), "duplicate field `holder`");
    let scope = with(
        LEASE,
        r#""scope":"global""#,
        r#""scope":"global","scope":"service""#,
    );
    assert_refused(&document(&[], &[&scope]), "duplicate field `scope`");
    let name = with(
        LEASE,
        r#""name":"scheduler""#,
        r#""name":"scheduler","name":"compactor""#,
    );
    assert_refused(&document(&[], &[&name]), "duplicate field `name`");
}

#[test]
fn metadata_with_nul_cr_or_lf_in_the_state_file_is_refused() {
    for (from, to) in [
        (r#""eu-1""#, r#""eu\u00001""#),
        (r#""eu-1""#, r#""eu-1\r\nX: y""#),
        (r#""zone""#, r#""zo\nne""#),
    ] {
        let registration = with(REGISTRATION, from, to);
        assert_refused(&document(&[&registration], &[]), "control character");
    }
}
