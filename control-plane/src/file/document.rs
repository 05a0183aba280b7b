//! The V1 state document, encoded straight from a [`StoreState`] and
//! decoded record by record into one.
//!
//! ```text
//! {"version":1,
//!  "registrations":[{"registration":{"service":…,"node":…,"address":…,"metadata":{…},"ttl_ms":…},"expires_at_ms":…}, …],
//!  "leases":[{"key":{"scope":"global"|"service","name":…},"holder":…|null,"token":…,"expires_at_ms":…}, …]}
//! ```
//!
//! Invariants:
//! - `version` comes first and is 1; `registrations` and `leases` follow,
//!   once each; unknown fields anywhere are refused.
//! - Decoding reads at most the byte limit plus one byte, and refuses the
//!   file as `TooLarge` when that extra byte exists.
//! - Every record is decoded through the validating types (names,
//!   registrations) and restored into the store at once, under its record
//!   and byte limits; a repeated key is `Corrupt`. Nothing else holds the
//!   decoded records: the store's maps are their only owner.
//! - Every failure is typed: `TooLarge`, `LimitExceeded`, `Corrupt` naming
//!   what was read, or `Storage` for a failed read.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ControlPlaneError;
use crate::store::{LeaseRecord, PresenceRecord, StoreLimits, StoreState};

/// The version this code writes and reads.
pub(crate) const VERSION: u64 = 1;

/// The whole state as a V1 document, serialized without an intermediate
/// copy.
pub(crate) struct Document<'a>(pub(crate) &'a StoreState);

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut document = serializer.serialize_struct("Document", 3)?;
        document.serialize_field("version", &VERSION)?;
        document.serialize_field("registrations", &Registrations(self.0))?;
        document.serialize_field("leases", &Leases(self.0))?;
        document.end()
    }
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

/// Decodes the V1 document in `file` (from its current position) into a
/// new store with `limits`, reading at most `max_bytes`.
///
/// # Errors
///
/// `TooLarge` over `max_bytes` (from the file's length before any byte is
/// read, or from the bounded read), `LimitExceeded` past `limits`,
/// `Corrupt` naming `what` for anything malformed, `Storage` when reading
/// fails.
pub(crate) fn decode(
    file: &mut File,
    max_bytes: u64,
    limits: StoreLimits,
    what: &'static str,
) -> Result<StoreState, ControlPlaneError> {
    let length = file
        .metadata()
        .map_err(|source| ControlPlaneError::Storage {
            operation: "read",
            source,
        })?
        .len();
    if length > max_bytes {
        return Err(ControlPlaneError::TooLarge {
            what,
            limit: max_bytes,
        });
    }
    decode_bounded(file, max_bytes, limits, what)
}

/// [`decode`] from any reader: the bounded read and the record-by-record
/// restore.
pub(crate) fn decode_bounded(
    source: impl Read,
    max_bytes: u64,
    limits: StoreLimits,
    what: &'static str,
) -> Result<StoreState, ControlPlaneError> {
    let mut reader = BufReader::new(source.take(max_bytes.saturating_add(1)));
    let mut state = StoreState::new(limits);
    let mut refused = None;
    let mut deserializer = serde_json::Deserializer::from_reader(&mut reader);
    let decoded = DocumentSeed {
        state: &mut state,
        refused: &mut refused,
        what,
    }
    .deserialize(&mut deserializer)
    .and_then(|()| deserializer.end());
    if reader.get_ref().limit() == 0 {
        return Err(ControlPlaneError::TooLarge {
            what,
            limit: max_bytes,
        });
    }
    match (decoded, refused) {
        (Ok(()), _) => Ok(state),
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
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    Version,
    Registrations,
    Leases,
}

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DocumentSeed<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a V1 control-plane state document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Self {
            state,
            refused,
            what,
        } = self;
        let (mut version, mut registrations, mut leases) = (false, false, false);
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Version => {
                    if version || registrations || leases {
                        return Err(de::Error::custom("`version` must come first, once"));
                    }
                    let found: u64 = map.next_value()?;
                    if found != VERSION {
                        *refused = Some(ControlPlaneError::Corrupt {
                            what,
                            reason: format!("version {found} is not supported (only {VERSION})"),
                        });
                        return Err(de::Error::custom("unsupported version"));
                    }
                    version = true;
                }
                Field::Registrations | Field::Leases if !version => {
                    return Err(de::Error::custom("`version` must come first"));
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
            }
        }
        for (present, name) in [
            (version, "version"),
            (registrations, "registrations"),
            (leases, "leases"),
        ] {
            if !present {
                return Err(de::Error::missing_field(name));
            }
        }
        Ok(())
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
