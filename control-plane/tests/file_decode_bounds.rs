//! Collections in the state file are capped while they are decoded, not
//! after: a 16 MiB state file holding one registration with 1.28 million
//! metadata entries is refused at the 33rd entry, and opening it allocates
//! well under 2 MiB in all (decoding it whole took +149 MiB). A counting
//! global allocator records every byte allocated during the open; this
//! binary holds only this test, so nothing else allocates meanwhile.

mod file_support;

use std::alloc::System;
use std::fmt::Write as _;
use std::fs;

use file_support::Place;
use provider_pools_control_plane::file::MAX_STATE_FILE_BYTES;
use provider_pools_control_plane::ControlPlaneError;
use sha2::Digest as _;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ENTRIES: usize = 1_280_000;

/// A valid version-2 document (its checksum is right) of one registration
/// with [`ENTRIES`] metadata entries.
fn hostile_document() -> Vec<u8> {
    let mut body = String::with_capacity(17 * 1024 * 1024);
    body.push_str(r#"{"version":2,"registrations":[{"registration":{"service":"billing","node":"node-a","address":"10.0.0.1:1","metadata":{"#);
    for index in 0..ENTRIES {
        let comma = if index == 0 { "" } else { "," };
        let _infallible = write!(body, r#"{comma}"m{index:06x}":"""#);
    }
    body.push_str(r#"},"ttl_ms":1000},"expires_at_ms":0}],"leases":[]"#);
    let digest = sha2::Sha256::digest(body.as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    let _infallible = write!(body, r#","sha256":"{hex}"}}"#);
    body.into_bytes()
}

#[test]
fn a_16_mib_file_of_one_registration_with_a_million_metadata_entries_is_refused_while_decoding() {
    let document = hostile_document();
    assert!(
        document.len() as u64 <= MAX_STATE_FILE_BYTES && document.len() > 16_000_000,
        "{} bytes",
        document.len()
    );
    let place = Place::new();
    fs::write(&place.path, &document).expect("written");
    drop(document);
    let options = place.options();

    let region = Region::new(GLOBAL);
    let opened = options.open(&place.path);
    let allocated = region.change().bytes_allocated;

    match opened {
        Err(ControlPlaneError::Corrupt {
            what: "state file",
            reason,
        }) => assert!(reason.contains("more than 32 entries"), "{reason}"),
        other => panic!("expected the metadata cap, got {other:?}"),
    }
    assert!(
        allocated < 2 * 1024 * 1024,
        "opening allocated {allocated} bytes: the map was decoded past its cap"
    );
}
