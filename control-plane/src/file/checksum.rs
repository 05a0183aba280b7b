//! The state file's checksum: a SHA-256 digest of every byte of a version-2
//! document before its fixed-size trailer, `,"sha256":"<64 lowercase hex>"}`.
//!
//! Invariants:
//! - A version-2 document ends with exactly the trailer ([`TRAILER_LEN`]
//!   bytes, nothing after it); the digest covers every byte before it.
//! - [`verify`] streams the file in bounded chunks (it never holds the
//!   document) and answers before any record is decoded: a digest that does
//!   not match is `Corrupt`, whatever the damaged bytes would decode to.
//! - A file without a well-formed trailer is [`Trailer::Absent`]; only its
//!   version (read by the decoder) can make it acceptable, as a version-1
//!   document, and a version-1 document may not carry a checksum field.
//! - [`Hashing`] digests exactly the bytes it passes on, so the writer and
//!   the verifier agree on what is covered.

use std::fmt::Write as _;
use std::io::{self, Read, Write};

use sha2::{Digest as _, Sha256};

use crate::error::ControlPlaneError;

/// What a trailer starts with: the last field's name.
pub(crate) const TRAILER_PREFIX: &[u8] = br#","sha256":""#;
/// Hex digits of a SHA-256 digest.
const HEX_DIGITS: usize = 64;
/// What a trailer ends with: the string's quote and the document's brace.
const TRAILER_END: &[u8] = br#""}"#;
/// Bytes of a whole trailer.
pub(crate) const TRAILER_LEN: usize = TRAILER_PREFIX.len() + HEX_DIGITS + TRAILER_END.len();
/// Bytes read at a time while verifying.
const CHUNK: usize = 64 * 1024;

/// A SHA-256 digest.
pub(crate) type Digest = [u8; 32];

/// What the end of a file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trailer {
    /// The file ends with a trailer whose digest matches every byte before
    /// it.
    Verified(Digest),
    /// The file ends with no trailer (a version-1 document, or damage the
    /// decoder will name).
    Absent,
}

/// The digest as the trailer writes it: lowercase hex.
pub(crate) fn hex(digest: &Digest) -> String {
    let mut text = String::with_capacity(HEX_DIGITS);
    for byte in digest {
        // Writing to a String cannot fail.
        let _infallible = write!(text, "{byte:02x}");
    }
    text
}

/// Reads `source` to its end (at most `max_bytes`) and checks its
/// trailer's digest against the bytes before it.
///
/// # Errors
///
/// `TooLarge` past `max_bytes`; `Corrupt` naming `what` when the trailer's
/// digest is malformed or does not match the contents; `Storage` when
/// reading fails.
pub(crate) fn verify(
    source: impl Read,
    max_bytes: u64,
    what: &'static str,
) -> Result<Trailer, ControlPlaneError> {
    let mut source = source.take(max_bytes.saturating_add(1));
    let mut hasher = Sha256::new();
    // The last TRAILER_LEN bytes seen are held back from the digest until
    // more bytes arrive: at the end they are the trailer.
    let mut held = Vec::with_capacity(CHUNK + TRAILER_LEN);
    let mut chunk = vec![0; CHUNK];
    let mut total: u64 = 0;
    loop {
        let read = match source.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(ControlPlaneError::Storage {
                    operation: "read",
                    source,
                })
            }
        };
        total = total.saturating_add(read as u64);
        if total > max_bytes {
            return Err(ControlPlaneError::TooLarge {
                what,
                limit: max_bytes,
            });
        }
        held.extend_from_slice(&chunk[..read]);
        if held.len() > TRAILER_LEN {
            let covered = held.len() - TRAILER_LEN;
            hasher.update(&held[..covered]);
            held.drain(..covered);
        }
    }
    let Some(claimed) = trailer_digest(&held, what)? else {
        return Ok(Trailer::Absent);
    };
    let actual: Digest = hasher.finalize().into();
    if actual != claimed {
        return Err(ControlPlaneError::Corrupt {
            what,
            reason: format!(
                "checksum mismatch: the trailer says sha256 {}, the contents hash to {}",
                hex(&claimed),
                hex(&actual)
            ),
        });
    }
    Ok(Trailer::Verified(actual))
}

/// The digest a trailer claims; `None` when `tail` is no trailer at all.
fn trailer_digest(tail: &[u8], what: &'static str) -> Result<Option<Digest>, ControlPlaneError> {
    if tail.len() < TRAILER_LEN || !tail.starts_with(TRAILER_PREFIX) {
        return Ok(None);
    }
    let malformed = || ControlPlaneError::Corrupt {
        what,
        reason: "the checksum trailer is malformed (64 lowercase hex digits, then `\"}`)".into(),
    };
    let digits = &tail[TRAILER_PREFIX.len()..TRAILER_PREFIX.len() + HEX_DIGITS];
    if !tail.ends_with(TRAILER_END) {
        return Err(malformed());
    }
    let mut digest = [0; 32];
    for (byte, pair) in digest.iter_mut().zip(digits.chunks_exact(2)) {
        let (Some(high), Some(low)) = (nibble(pair[0]), nibble(pair[1])) else {
            return Err(malformed());
        };
        *byte = high << 4 | low;
    }
    Ok(Some(digest))
}

fn nibble(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

/// Passes bytes on to `inner` and digests exactly the bytes it passed.
pub(crate) struct Hashing<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> Hashing<W> {
    pub(crate) fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// Writes the trailer for everything written so far, ending the
    /// document.
    ///
    /// # Errors
    ///
    /// What writing to the inner writer returns.
    pub(crate) fn finish(self) -> io::Result<W> {
        let Self { mut inner, hasher } = self;
        let digest: Digest = hasher.finalize().into();
        inner.write_all(TRAILER_PREFIX)?;
        inner.write_all(hex(&digest).as_bytes())?;
        inner.write_all(TRAILER_END)?;
        Ok(inner)
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buffer)?;
        self.hasher.update(&buffer[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(body: &[u8]) -> Vec<u8> {
        let mut writer = Hashing::new(Vec::new());
        writer.write_all(body).expect("written");
        writer.finish().expect("finished")
    }

    #[test]
    fn a_signed_document_verifies_and_any_changed_byte_does_not() {
        let document = signed(br#"{"version":2,"registrations":[],"leases":[]"#);
        assert_eq!(
            document.len(),
            br#"{"version":2,"registrations":[],"leases":[]"#.len() + TRAILER_LEN
        );
        assert!(matches!(
            verify(&document[..], 1 << 20, "state file"),
            Ok(Trailer::Verified(_))
        ));
        for index in 0..document.len() {
            let mut damaged = document.clone();
            damaged[index] ^= 0x01;
            let verified = verify(&damaged[..], 1 << 20, "state file");
            // Damage before the trailer, or in its digest, is a mismatch or
            // a malformed trailer; damage to the trailer's fixed bytes makes
            // it no trailer, which only a version-1 document may lack.
            assert!(
                !matches!(verified, Ok(Trailer::Verified(_))),
                "byte {index}: {verified:?}"
            );
        }
    }

    #[test]
    fn a_document_without_a_trailer_is_absent_not_verified() {
        let legacy = br#"{"version":1,"registrations":[],"leases":[]}"#;
        assert_eq!(
            verify(&legacy[..], 1 << 20, "state file").ok(),
            Some(Trailer::Absent)
        );
    }
}
