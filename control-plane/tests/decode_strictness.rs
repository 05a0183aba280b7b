//! Decoding is strict everywhere: unknown fields inside a lease key,
//! duplicate metadata keys, metadata with NUL/CR/LF and metadata past its
//! cap are refused (the cap while decoding: the 33rd entry is never read).

use provider_pools_control_plane::{LeaseKey, Registration};

fn registration(metadata: &str) -> Result<Registration, serde_json::Error> {
    serde_json::from_str(&format!(
        r#"{{"service":"s","node":"n","address":"10.0.0.1:80","metadata":{metadata},"ttl_ms":1000}}"#
    ))
}

#[test]
fn unknown_fields_inside_a_lease_key_are_refused() {
    let key: Result<LeaseKey, _> =
        serde_json::from_str(r#"{"scope":"global","name":"leader","extra":1}"#);
    assert!(key.is_err(), "{key:?}");
    let key: LeaseKey =
        serde_json::from_str(r#"{"scope":"global","name":"leader"}"#).expect("valid");
    assert!(key.to_string().contains("leader"));
}

#[test]
fn duplicate_metadata_keys_are_refused() {
    let error = registration(r#"{"zone":"a","zone":"b"}"#).expect_err("duplicate");
    assert!(error.to_string().contains("twice"), "{error}");
    assert!(registration(r#"{"zone":"a","rack":"b"}"#).is_ok());
}

#[test]
fn metadata_with_nul_cr_or_lf_is_refused() {
    for bad in [
        r#"{"zone":"a\u0000"}"#,
        r#"{"zone":"a\r\nX: y"}"#,
        r#"{"zo\nne":"a"}"#,
    ] {
        assert!(registration(bad).is_err(), "{bad}");
    }
}

#[test]
fn metadata_past_its_cap_is_refused_while_decoding() {
    let mut entries: Vec<String> = (0..32).map(|i| format!(r#""k{i}":"v""#)).collect();
    assert!(registration(&format!("{{{}}}", entries.join(","))).is_ok());
    // The 33rd entry is refused before its value is read: a value that is
    // not even a string never gets decoded.
    entries.push(r#""k32":{"not":"a string"}"#.into());
    let error = registration(&format!("{{{}}}", entries.join(","))).expect_err("33 entries");
    assert!(error.to_string().contains("more than 32"), "{error}");
}
