//! The decoder at the real record cap, which a 16 MiB file cannot reach.

use std::io::{self, Read, Write};

use sha2::Digest as _;

use super::*;

/// A V1 document of `count` lease slots, generated as it is read.
struct Generated {
    count: usize,
    next: usize,
    pending: Vec<u8>,
    offset: usize,
    finished: bool,
}

impl Generated {
    fn new(count: usize) -> Self {
        Self {
            count,
            next: 0,
            pending: br#"{"version":1,"registrations":[],"leases":["#.to_vec(),
            offset: 0,
            finished: false,
        }
    }

    fn refill(&mut self) {
        self.pending.clear();
        self.offset = 0;
        if self.next < self.count {
            let comma = if self.next == 0 { "" } else { "," };
            let _infallible = write!(
                self.pending,
                r#"{comma}{{"key":{{"scope":"global","name":"l{}"}},"holder":null,"token":1,"expires_at_ms":0}}"#,
                self.next
            );
            self.next += 1;
        } else if !self.finished {
            self.pending.extend_from_slice(b"]}");
            self.finished = true;
        }
    }
}

impl Read for Generated {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.offset == self.pending.len() {
            self.refill();
        }
        let available = &self.pending[self.offset..];
        let copied = available.len().min(buffer.len());
        buffer[..copied].copy_from_slice(&available[..copied]);
        self.offset += copied;
        Ok(copied)
    }
}

#[test]
fn decoding_stops_at_the_real_record_cap() {
    let cap = StoreLimits::FILE_DECODED.max_records;
    // 262,145 lease slots take more than 16 MiB of JSON, so the byte bound
    // is lifted here to reach the record cap itself: the first 262,144
    // records are restored, the next one is refused.
    let error = decode_bounded(
        Generated::new(cap + 1),
        u64::MAX - 1,
        StoreLimits::FILE_DECODED,
        "state file",
        Trailer::Absent,
    )
    .expect_err("one record past the cap");
    assert!(
        matches!(error, ControlPlaneError::LimitExceeded { limit: "records" }),
        "{error:?}"
    );
}

#[test]
fn the_byte_bound_is_checked_by_reading_one_byte_past_it() {
    let exact = br#"{"version":1,"registrations":[],"leases":[]}"#;
    let limit = exact.len() as u64;
    let decode = |bytes: &[u8]| {
        decode_bounded(
            bytes,
            limit,
            StoreLimits::FILE_DECODED,
            "state file",
            Trailer::Absent,
        )
    };
    assert!(decode(exact).is_ok());
    let mut padded = exact.to_vec();
    padded.push(b' ');
    let error = decode(&padded).expect_err("one byte over");
    assert!(
        matches!(error, ControlPlaneError::TooLarge { what: "state file", limit: l } if l == limit),
        "{error:?}"
    );
}

#[test]
fn the_encoding_is_the_version_2_document_with_version_first_and_its_checksum_last() {
    let state = StoreState::new(StoreLimits::FILE_DECODED);
    let mut encoded = Vec::new();
    write(&mut encoded, &state).expect("encodes");
    let body = br#"{"version":2,"registrations":[],"leases":[]"#;
    assert!(encoded.starts_with(body));
    let digest: [u8; 32] = sha2::Sha256::digest(body).into();
    assert_eq!(
        &encoded[body.len()..],
        format!(r#","sha256":"{}"}}"#, crate::file::checksum::hex(&digest)).as_bytes()
    );
    let verified = crate::file::checksum::verify(&encoded[..], 1 << 20, "state file")
        .expect("its checksum verifies");
    let (_decoded, format) = decode_bounded(
        &encoded[..],
        1 << 20,
        StoreLimits::FILE_DECODED,
        "state file",
        verified,
    )
    .expect("decodes");
    assert_eq!(format, Format::Verified);
}
