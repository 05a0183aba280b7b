//! [`bounded`]: decodes a registration's metadata map while enforcing its
//! bounds, so a hostile file or answer never materialises more than
//! [`MAX_METADATA_ENTRIES`] entries.
//!
//! Invariants:
//! - Decoding stops at the first entry past the cap, before reading it.
//! - A key seen twice is refused (never "last wins").

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserializer, Error as _, MapAccess, Visitor};

/// Most metadata entries of one registration.
pub const MAX_METADATA_ENTRIES: usize = 32;

/// Deserializes a metadata map of at most `MAX_METADATA_ENTRIES` distinct
/// keys.
pub(crate) fn bounded<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    deserializer.deserialize_map(Bounded)
}

struct Bounded;

impl<'de> Visitor<'de> for Bounded {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a map of at most {MAX_METADATA_ENTRIES} distinct keys")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut metadata = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if metadata.len() == MAX_METADATA_ENTRIES {
                return Err(A::Error::custom(format_args!(
                    "metadata has more than {MAX_METADATA_ENTRIES} entries"
                )));
            }
            if metadata.contains_key(&key) {
                return Err(A::Error::custom(format_args!(
                    "metadata key {key:?} appears twice"
                )));
            }
            let value = map.next_value::<String>()?;
            metadata.insert(key, value);
        }
        Ok(metadata)
    }
}
