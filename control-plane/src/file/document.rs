//! The state document, encoded straight from a [`StoreState`] and decoded
//! record by record into one.
//!
//! ```text
//! {"version":2,
//!  "registrations":[{"registration":{"service":…,"node":…,"address":…,"metadata":{…},"ttl_ms":…},"expires_at_ms":…}, …],
//!  "leases":[{"key":{"scope":"global"|"service","name":…},"holder":…|null,"token":…,"expires_at_ms":…}, …],
//!  "sha256":"<digest of every byte before the comma>"}
//! ```
//!
//! Invariants:
//! - `version` comes first and is 2 (or 1, the legacy format without a
//!   checksum); `registrations` and `leases` follow, once each; a version-2
//!   document ends with its `sha256` trailer (see [`checksum`]), a version-1
//!   document has none. Unknown fields and repeated fields are refused at
//!   every level.
//! - A file's checksum is verified, in a streaming pass, before any record
//!   is decoded; the decoder then requires the trailer it verified.
//! - Decoding reads at most the byte limit plus one byte, and refuses the
//!   file as `TooLarge` when that extra byte exists.
//! - Every record is decoded through the validating types (names,
//!   registrations, metadata capped while it is decoded) and restored into
//!   the store at once, under its record and byte limits; a repeated key is
//!   `Corrupt`. Nothing else holds the decoded records: the store's maps
//!   are their only owner.
//! - Every failure is typed: `TooLarge`, `LimitExceeded`, `Corrupt` naming
//!   what was read, or `Storage` for a failed read.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ControlPlaneError;
use crate::file::checksum::{self, Hashing, Trailer};
use crate::store::{LeaseRecord, PresenceRecord, StoreLimits, StoreState};

/// The version this code writes: a document with a checksum.
pub(crate) const VERSION: u64 = 2;
/// The legacy version it still reads: no checksum (migrated on open).
pub(crate) const LEGACY_VERSION: u64 = 1;

/// Which format a decoded document had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Version 2, its checksum verified.
    Verified,
    /// Version 1: nothing verified its bytes; rewrite it as version 2.
    Legacy,
}

/// Writes the whole state as a version-2 document, digesting it on the way
/// and ending it with its checksum trailer; no copy of the encoding is
/// held.
///
/// # Errors
///
/// What writing to `writer` returns.
pub(crate) fn write(writer: impl Write, state: &StoreState) -> io::Result<()> {
    let mut writer = Hashing::new(writer);
    write!(writer, r#"{{"version":{VERSION},"registrations":"#)?;
    serde_json::to_writer(&mut writer, &Registrations(state))?;
    writer.write_all(br#","leases":"#)?;
    serde_json::to_writer(&mut writer, &Leases(state))?;
    let _inner = writer.finish()?;
    Ok(())
}

struct Registrations<'a>(&'a StoreState);

impl Serialize for Registrations<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.presence.values().flat_map(BTreeMap::values))
    }
}

struct Leases<'a>(&'a StoreState);

impl Serialize for Leases<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.leases.values())
    }
}

/// Decodes the document in `file` (from its current position) into a new
/// store with `limits`, reading at most `max_bytes`: first the checksum
/// pass, then, from the same position, the record-by-record restore.
///
/// # Errors
///
/// `TooLarge` over `max_bytes` (from the file's length before any byte is
/// read, or from the bounded reads), `LimitExceeded` past `limits`,
/// `Corrupt` naming `what` for a checksum mismatch or anything malformed,
/// `Storage` when reading fails.
pub(crate) fn decode(
    file: &mut File,
    max_bytes: u64,
    limits: StoreLimits,
    what: &'static str,
) -> Result<(StoreState, Format), ControlPlaneError> {
    let read_error = |source| ControlPlaneError::Storage {
        operation: "read",
        source,
    };
    let length = file.metadata().map_err(read_error)?.len();
    if length > max_bytes {
        return Err(ControlPlaneError::TooLarge {
            what,
            limit: max_bytes,
        });
    }
    let start = file.stream_position().map_err(read_error)?;
    let trailer = checksum::verify(&mut *file, max_bytes, what)?;
    file.seek(SeekFrom::Start(start)).map_err(read_error)?;
    decode_bounded(file, max_bytes, limits, what, trailer)
}

/// [`decode`] from any reader whose checksum pass gave `trailer`: the
/// bounded read and the record-by-record restore.
pub(crate) fn decode_bounded(
    source: impl Read,
    max_bytes: u64,
    limits: StoreLimits,
    what: &'static str,
    trailer: Trailer,
) -> Result<(StoreState, Format), ControlPlaneError> {
    let mut reader = BufReader::new(source.take(max_bytes.saturating_add(1)));
    let mut state = StoreState::new(limits);
    let mut refused = None;
    let mut deserializer = serde_json::Deserializer::from_reader(&mut reader);
    let decoded = DocumentSeed {
        state: &mut state,
        refused: &mut refused,
        what,
        trailer,
    }
    .deserialize(&mut deserializer)
    .and_then(|format| deserializer.end().map(|()| format));
    if reader.get_ref().limit() == 0 {
        return Err(ControlPlaneError::TooLarge {
            what,
            limit: max_bytes,
        });
    }
    match (decoded, refused) {
        (Ok(format), _) => Ok((state, format)),
        (Err(_), Some(refusal)) => Err(refusal),
        (Err(error), None) if error.is_io() => Err(ControlPlaneError::Storage {
            operation: "read",
            source: error.into(),
        }),
        (Err(error), None) => Err(ControlPlaneError::Corrupt {
            what,
            reason: error.to_string(),
        }),
    }
}

/// Restores each record as it is decoded; a typed refusal is kept in
/// `refused` (serde's own error only carries text).
struct DocumentSeed<'s> {
    state: &'s mut StoreState,
    refused: &'s mut Option<ControlPlaneError>,
    what: &'static str,
    trailer: Trailer,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    Version,
    Registrations,
    Leases,
    Sha256,
}

/// The fields of a version-1 document, for its unknown-field error.
const LEGACY_FIELDS: &[&str] = &["version", "registrations", "leases"];

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_> {
    type Value = Format;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Format, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DocumentSeed<'_> {
    type Value = Format;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a control-plane state document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Format, A::Error> {
        let Self {
            state,
            refused,
            what,
            trailer,
        } = self;
        let mut version = None;
        let (mut registrations, mut leases, mut digest) = (false, false, false);
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Version => {
                    if version.is_some() || registrations || leases {
                        return Err(de::Error::custom("`version` must come first, once"));
                    }
                    let found: u64 = map.next_value()?;
                    let refusal = match (found, trailer) {
                        (VERSION, Trailer::Verified(_)) | (LEGACY_VERSION, _) => None,
                        (VERSION, Trailer::Absent) => Some(format!(
                            "version {VERSION} must end with its checksum trailer and does not"
                        )),
                        _ => Some(format!(
                            "version {found} is not supported (only {LEGACY_VERSION} and {VERSION})"
                        )),
                    };
                    if let Some(reason) = refusal {
                        *refused = Some(ControlPlaneError::Corrupt { what, reason });
                        return Err(de::Error::custom("unsupported version"));
                    }
                    version = Some(found);
                }
                Field::Registrations | Field::Leases | Field::Sha256 if version.is_none() => {
                    return Err(de::Error::custom("`version` must come first"));
                }
                Field::Sha256 if version == Some(LEGACY_VERSION) => {
                    return Err(de::Error::unknown_field("sha256", LEGACY_FIELDS));
                }
                Field::Sha256 if digest => return Err(de::Error::duplicate_field("sha256")),
                Field::Registrations | Field::Leases if digest => {
                    return Err(de::Error::custom("`sha256` must come last"));
                }
                Field::Registrations if registrations => {
                    return Err(de::Error::duplicate_field("registrations"));
                }
                Field::Leases if leases => return Err(de::Error::duplicate_field("leases")),
                Field::Registrations => {
                    map.next_value_seed(RecordsSeed {
                        state: &mut *state,
                        refused: &mut *refused,
                        what,
                        restore: restore_presence,
                    })?;
                    registrations = true;
                }
                Field::Leases => {
                    map.next_value_seed(RecordsSeed {
                        state: &mut *state,
                        refused: &mut *refused,
                        what,
                        restore: restore_lease,
                    })?;
                    leases = true;
                }
                Field::Sha256 => {
                    let found: String = map.next_value()?;
                    // The checksum pass verified the file's last bytes; this
                    // field must be those bytes.
                    if !matches!(trailer, Trailer::Verified(verified) if checksum::hex(&verified) == found)
                    {
                        return Err(de::Error::custom(
                            "`sha256` is not the verified trailer at the end of the file",
                        ));
                    }
                    if !(registrations && leases) {
                        return Err(de::Error::custom("`sha256` must come last"));
                    }
                    digest = true;
                }
            }
        }
        let format = match version {
            Some(VERSION) if !digest => return Err(de::Error::missing_field("sha256")),
            Some(VERSION) => Format::Verified,
            _ => Format::Legacy,
        };
        for (present, name) in [
            (version.is_some(), "version"),
            (registrations, "registrations"),
            (leases, "leases"),
        ] {
            if !present {
                return Err(de::Error::missing_field(name));
            }
        }
        Ok(format)
    }
}

/// One array of records, each restored as soon as it is decoded.
struct RecordsSeed<'s, R> {
    state: &'s mut StoreState,
    refused: &'s mut Option<ControlPlaneError>,
    what: &'static str,
    restore: fn(&mut StoreState, R, &'static str) -> Result<(), ControlPlaneError>,
}

impl<'de, R: DeserializeOwned> DeserializeSeed<'de> for RecordsSeed<'_, R> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, R: DeserializeOwned> Visitor<'de> for RecordsSeed<'_, R> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an array of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut records: A) -> Result<(), A::Error> {
        while let Some(record) = records.next_element::<R>()? {
            if let Err(refusal) = (self.restore)(self.state, record, self.what) {
                *self.refused = Some(refusal);
                return Err(de::Error::custom("record refused"));
            }
        }
        Ok(())
    }
}

fn restore_presence(
    state: &mut StoreState,
    record: PresenceRecord,
    what: &'static str,
) -> Result<(), ControlPlaneError> {
    state
        .restore_presence(record)
        .map_err(|error| naming(error, what))
}

fn restore_lease(
    state: &mut StoreState,
    record: LeaseRecord,
    what: &'static str,
) -> Result<(), ControlPlaneError> {
    if record.token.get() == 0 {
        return Err(ControlPlaneError::Corrupt {
            what,
            reason: format!("lease {} has token 0; tokens start at 1", record.key),
        });
    }
    state
        .restore_lease(record)
        .map_err(|error| naming(error, what))
}

/// A store refusal, saying which file it came from.
fn naming(error: ControlPlaneError, what: &'static str) -> ControlPlaneError {
    match error {
        ControlPlaneError::Corrupt { reason, .. } => ControlPlaneError::Corrupt { what, reason },
        other => other,
    }
}

#[cfg(test)]
mod tests;
