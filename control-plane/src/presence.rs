//! Presence: a [`Registration`] announces one node's instance of a service
//! for a time to live; heartbeats extend it; discovery lists the live ones.
//!
//! Invariants:
//! - A registration is bounded when made or decoded: its address is at most
//!   1,024 bytes, its metadata at most 32 entries of at most 128-byte keys and
//!   1,024-byte values, its time to live 1 ms – 24 h.
//! - The control plane coordinates; it never stores business payloads, so
//!   metadata stays small by construction.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ControlPlaneError;
use crate::name::{NodeId, ServiceGroup};

/// Longest address, in bytes.
pub const MAX_ADDRESS_BYTES: usize = 1_024;
pub use crate::metadata::MAX_METADATA_ENTRIES;
/// Longest metadata key, in bytes.
pub const MAX_METADATA_KEY_BYTES: usize = 128;
/// Longest metadata value, in bytes.
pub const MAX_METADATA_VALUE_BYTES: usize = 1_024;
/// Shortest time to live of a registration or lease.
pub const MIN_TTL: Duration = Duration::from_millis(1);
/// Longest time to live of a registration or lease.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Which instance: a service and the node serving it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PresenceKey {
    /// The service.
    pub service: ServiceGroup,
    /// The node.
    pub node: NodeId,
}

/// One node's instance of a service, as registered and as discovered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RegistrationFields", into = "RegistrationFields")]
pub struct Registration {
    key: PresenceKey,
    address: String,
    metadata: BTreeMap<String, String>,
    ttl: Duration,
}

/// The wire form, checked on the way in.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistrationFields {
    service: ServiceGroup,
    node: NodeId,
    address: String,
    #[serde(default, deserialize_with = "crate::metadata::bounded")]
    metadata: BTreeMap<String, String>,
    ttl_ms: u64,
}

impl Registration {
    /// A registration with no metadata.
    ///
    /// ```
    /// use std::time::Duration;
    /// use provider_pools_control_plane::{NodeId, Registration, ServiceGroup};
    ///
    /// let registration = Registration::new(
    ///     ServiceGroup::new("billing")?,
    ///     NodeId::new("node-a")?,
    ///     "10.0.0.7:8443",
    ///     Duration::from_secs(10),
    /// )?
    /// .with_metadata("zone", "eu-1")?;
    /// assert_eq!(registration.metadata()["zone"], "eu-1");
    /// # Ok::<(), provider_pools_control_plane::ControlPlaneError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `address` or `ttl` when out of
    /// bounds.
    pub fn new(
        service: ServiceGroup,
        node: NodeId,
        address: impl Into<String>,
        ttl: Duration,
    ) -> Result<Self, ControlPlaneError> {
        let registration = Self {
            key: PresenceKey { service, node },
            address: address.into(),
            metadata: BTreeMap::new(),
            ttl,
        };
        registration.check()?;
        Ok(registration)
    }

    /// Adds one metadata entry.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `metadata` when the entry or the
    /// count is out of bounds.
    pub fn with_metadata(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, ControlPlaneError> {
        self.metadata.insert(key.into(), value.into());
        self.check()?;
        Ok(self)
    }

    /// The service and node.
    pub fn key(&self) -> &PresenceKey {
        &self.key
    }

    /// The service.
    pub fn service(&self) -> &ServiceGroup {
        &self.key.service
    }

    /// The node.
    pub fn node(&self) -> &NodeId {
        &self.key.node
    }

    /// Where the instance is reached.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Small descriptive entries (zone, version, …).
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// How long the registration lives without a heartbeat.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Bytes of text this registration holds: what the stores account.
    pub fn text_bytes(&self) -> usize {
        self.key.service.as_str().len()
            + self.key.node.as_str().len()
            + self.address.len()
            + self
                .metadata
                .iter()
                .map(|(key, value)| key.len() + value.len())
                .sum::<usize>()
    }

    fn check(&self) -> Result<(), ControlPlaneError> {
        if self.address.is_empty() || self.address.len() > MAX_ADDRESS_BYTES {
            return Err(ControlPlaneError::invalid(
                "address",
                format!(
                    "{} bytes, must be 1–{MAX_ADDRESS_BYTES}",
                    self.address.len()
                ),
            ));
        }
        if self.address.chars().any(char::is_control) {
            return Err(ControlPlaneError::invalid(
                "address",
                "holds a control character",
            ));
        }
        check_ttl("ttl", self.ttl)?;
        if self.metadata.len() > MAX_METADATA_ENTRIES {
            return Err(ControlPlaneError::invalid(
                "metadata",
                format!(
                    "{} entries, at most {MAX_METADATA_ENTRIES}",
                    self.metadata.len()
                ),
            ));
        }
        for (key, value) in &self.metadata {
            if key.is_empty() || key.len() > MAX_METADATA_KEY_BYTES {
                return Err(ControlPlaneError::invalid(
                    "metadata",
                    format!(
                        "a key of {} bytes, must be 1–{MAX_METADATA_KEY_BYTES}",
                        key.len()
                    ),
                ));
            }
            if key.chars().chain(value.chars()).any(char::is_control) {
                return Err(ControlPlaneError::invalid(
                    "metadata",
                    format!("the entry {key:?} holds a control character"),
                ));
            }
            if value.len() > MAX_METADATA_VALUE_BYTES {
                return Err(ControlPlaneError::invalid(
                    "metadata",
                    format!(
                        "the value of {key:?} is {} bytes, at most {MAX_METADATA_VALUE_BYTES}",
                        value.len()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Checks a time to live against [`MIN_TTL`]..=[`MAX_TTL`].
pub(crate) fn check_ttl(field: &'static str, ttl: Duration) -> Result<(), ControlPlaneError> {
    if ttl < MIN_TTL || ttl > MAX_TTL {
        return Err(ControlPlaneError::invalid(
            field,
            format!("{} ms, must be 1 ms – 24 h", ttl.as_millis()),
        ));
    }
    Ok(())
}

impl TryFrom<RegistrationFields> for Registration {
    type Error = ControlPlaneError;

    fn try_from(fields: RegistrationFields) -> Result<Self, Self::Error> {
        let registration = Self {
            key: PresenceKey {
                service: fields.service,
                node: fields.node,
            },
            address: fields.address,
            metadata: fields.metadata,
            ttl: Duration::from_millis(fields.ttl_ms),
        };
        registration.check()?;
        Ok(registration)
    }
}

impl From<Registration> for RegistrationFields {
    fn from(registration: Registration) -> Self {
        Self {
            service: registration.key.service,
            node: registration.key.node,
            address: registration.address,
            metadata: registration.metadata,
            ttl_ms: u64::try_from(registration.ttl.as_millis()).unwrap_or(u64::MAX),
        }
    }
}
