//! A provider's public configuration, its digest and its accounted size.
//!
//! The trusted node adapter validates its protocol-specific settings, then
//! describes the installation here: the public service name, its approved
//! origins as opaque typed slots, and public settings. Credentials are never
//! part of this type, so the digest cannot depend on them.
//!
//! Invariants:
//! - Every part is bounded (origins, settings, lengths) before it is retained.
//! - The digest is computed over a canonical, length-prefixed encoding of the
//!   public parts only; the same configuration always yields the same digest.
//! - [`ProviderConfig::accounted_bytes`] is what an epoch charges to the
//!   node's metadata budget for its public parts.
//! - `Debug` shows origin targets through
//!   [`provider_pools_redact::redact_userinfo`] and setting values through
//!   [`provider_pools_redact::redact_setting`], so userinfo or a secret that
//!   a target or a setting should never carry is never printed either.

use std::collections::BTreeMap;
use std::fmt;

use provider_pools_redact::{redact_setting, redact_userinfo};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::identity::{OriginKind, OriginSlot, ServiceName};

/// Most origins one configuration may declare (the absolute ceiling of
/// clients per provider).
pub(crate) const MAX_ORIGINS: usize = ProviderConfig::MAX_ORIGINS;
/// Most public settings one configuration may carry.
pub(crate) const MAX_SETTINGS: usize = ProviderConfig::MAX_SETTINGS;
/// Longest origin target, setting key or setting value, in bytes.
pub(crate) const MAX_TEXT: usize = ProviderConfig::MAX_TEXT;

/// Fixed bytes accounted per installed epoch, besides its variable parts.
pub(crate) const EPOCH_OVERHEAD: u32 = 512;
/// Fixed bytes accounted per configured origin, besides its target text.
pub(crate) const ORIGIN_OVERHEAD: u32 = 64;

/// One approved origin: the slot guests name, its protocol kind and its
/// public target (for example `https://api.example.com:443`).
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct OriginSpec {
    /// The opaque slot the trusted adapter assigned.
    pub slot: OriginSlot,
    /// The protocol this origin is reached with.
    pub kind: OriginKind,
    /// The public target, validated by the adapter for its protocol.
    pub target: String,
}

/// The public configuration of one installation.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct ProviderConfig {
    /// The public service name this provider is known by.
    pub service: ServiceName,
    /// Approved origins, each reached by one configured client.
    pub origins: Vec<OriginSpec>,
    /// Public, protocol-specific settings.
    pub settings: BTreeMap<String, String>,
}

/// A configuration part that is out of bounds or inconsistent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// More origins than a provider may have clients.
    #[error("configuration declares {count} origins, more than {max}")]
    TooManyOrigins {
        /// Declared origins.
        count: usize,
        /// The bound in force.
        max: usize,
    },
    /// Two origins share one slot.
    #[error("origin slot {slot} is declared twice")]
    DuplicateSlot {
        /// The repeated slot.
        slot: OriginSlot,
    },
    /// Too many public settings.
    #[error("configuration has {count} settings, more than {max}")]
    TooManySettings {
        /// Declared settings.
        count: usize,
        /// The bound.
        max: usize,
    },
    /// A text part is empty or longer than [`ProviderConfig::MAX_TEXT`].
    #[error("{part} is {len} bytes; it must be 1 to {max}")]
    TextLength {
        /// Which part.
        part: TextPart,
        /// Its length.
        len: usize,
        /// The bound.
        max: usize,
    },
}

/// A text part of a [`ProviderConfig`], named in [`ConfigError::TextLength`].
///
/// Displayed as `origin target`, `setting key` or `setting value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TextPart {
    /// An [`OriginSpec::target`].
    OriginTarget,
    /// The key of a public setting.
    SettingKey,
    /// The value of a public setting.
    SettingValue,
}

impl TextPart {
    /// The part's name, as displayed.
    pub const fn name(self) -> &'static str {
        match self {
            Self::OriginTarget => "origin target",
            Self::SettingKey => "setting key",
            Self::SettingValue => "setting value",
        }
    }
}

impl fmt::Display for TextPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// SHA-256 digest of a public configuration; never covers credentials.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct ConfigDigest([u8; 32]);

impl fmt::Debug for OriginSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OriginSpec")
            .field("slot", &self.slot)
            .field("kind", &self.kind)
            .field("target", &redact_userinfo(&self.target))
            .finish()
    }
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let settings = self
            .settings
            .iter()
            .map(|(key, value)| (key, redact_setting(key, value)));
        f.debug_struct("ProviderConfig")
            .field("service", &self.service)
            .field("origins", &self.origins)
            .field("settings", &DebugMap(settings))
            .finish()
    }
}

/// Formats an iterator of pairs as a map (`{k: v, …}`).
struct DebugMap<I>(I);

impl<I, K, V> fmt::Debug for DebugMap<I>
where
    I: Iterator<Item = (K, V)> + Clone,
    K: fmt::Debug,
    V: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.clone()).finish()
    }
}

impl ConfigDigest {
    /// The digest's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for ConfigDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for ConfigDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConfigDigest({self})")
    }
}

impl ProviderConfig {
    /// Most origins one configuration may declare (the absolute ceiling of
    /// clients per provider).
    pub const MAX_ORIGINS: usize = 128;
    /// Most public settings one configuration may carry.
    pub const MAX_SETTINGS: usize = 64;
    /// Longest origin target, setting key or setting value, in bytes.
    pub const MAX_TEXT: usize = 1024;

    /// A configuration with no origins and no settings.
    pub fn new(service: ServiceName) -> Self {
        Self {
            service,
            origins: Vec::new(),
            settings: BTreeMap::new(),
        }
    }

    /// Adds an approved origin.
    pub fn with_origin(
        mut self,
        slot: OriginSlot,
        kind: OriginKind,
        target: impl Into<String>,
    ) -> Self {
        self.origins.push(OriginSpec {
            slot,
            kind,
            target: target.into(),
        });
        self
    }

    /// Adds a public setting.
    pub fn with_setting(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.insert(key.into(), value.into());
        self
    }

    /// Checks every bound; `max_origins` is the clients-per-provider limit.
    ///
    /// # Errors
    ///
    /// The first [`ConfigError`] found.
    pub fn validate(&self, max_origins: usize) -> Result<(), ConfigError> {
        let max = max_origins.min(MAX_ORIGINS);
        if self.origins.len() > max {
            return Err(ConfigError::TooManyOrigins {
                count: self.origins.len(),
                max,
            });
        }
        let mut slots: Vec<OriginSlot> = self.origins.iter().map(|o| o.slot).collect();
        slots.sort_unstable();
        if let Some(pair) = slots.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(ConfigError::DuplicateSlot { slot: pair[0] });
        }
        if self.settings.len() > MAX_SETTINGS {
            return Err(ConfigError::TooManySettings {
                count: self.settings.len(),
                max: MAX_SETTINGS,
            });
        }
        let texts = self
            .origins
            .iter()
            .map(|o| (TextPart::OriginTarget, &o.target))
            .chain(
                self.settings
                    .iter()
                    .flat_map(|(k, v)| [(TextPart::SettingKey, k), (TextPart::SettingValue, v)]),
            );
        for (part, text) in texts {
            if text.is_empty() || text.len() > MAX_TEXT {
                return Err(ConfigError::TextLength {
                    part,
                    len: text.len(),
                    max: MAX_TEXT,
                });
            }
        }
        Ok(())
    }

    /// The digest of `authority` and this configuration, credentials excluded.
    pub fn digest(&self, authority: &crate::identity::Authority) -> ConfigDigest {
        let mut hasher = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_be_bytes());
            hasher.update(bytes);
        };
        field(b"provider-pools/config/v1");
        field(authority.as_str().as_bytes());
        field(self.service.as_str().as_bytes());
        let mut origins: Vec<&OriginSpec> = self.origins.iter().collect();
        origins.sort_by_key(|o| o.slot);
        for origin in origins {
            field(&origin.slot.get().to_be_bytes());
            field(origin.kind.name().as_bytes());
            field(origin.target.as_bytes());
        }
        for (key, value) in &self.settings {
            field(key.as_bytes());
            field(value.as_bytes());
        }
        ConfigDigest(hasher.finalize().into())
    }

    /// Bytes this configuration charges to the node's metadata budget.
    ///
    /// Call after [`ProviderConfig::validate`]: the sum is then far below
    /// `u32::MAX`; it saturates rather than wraps regardless.
    pub fn accounted_bytes(&self) -> u32 {
        let origins: usize = self
            .origins
            .iter()
            .map(|o| ORIGIN_OVERHEAD as usize + o.target.len())
            .sum();
        let settings: usize = self.settings.iter().map(|(k, v)| k.len() + v.len()).sum();
        let total = self.service.as_str().len() + origins + settings;
        u32::try_from(total).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_userinfo_and_no_secret_named_setting() {
        let config = ProviderConfig::new(ServiceName::new("s").expect("service"))
            .with_origin(OriginSlot::new(0), OriginKind::Http, "https:u:s3cret@h:1")
            .with_setting("password", "s3cret")
            .with_setting("endpoint", "//u:s3cret@h")
            .with_setting("mount", "kv");
        let text = format!("{config:?}");
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("<userinfo>@h:1"), "{text}");
        assert!(text.contains(r#""mount": "kv""#), "{text}");
    }

    #[test]
    fn an_empty_text_part_is_named_as_before() {
        let service = ServiceName::new("s").expect("service");
        let cases = [
            (
                ProviderConfig::new(service.clone()).with_origin(
                    OriginSlot::new(0),
                    OriginKind::Http,
                    "",
                ),
                "origin target is 0 bytes; it must be 1 to 1024",
            ),
            (
                ProviderConfig::new(service.clone()).with_setting("", "v"),
                "setting key is 0 bytes; it must be 1 to 1024",
            ),
            (
                ProviderConfig::new(service).with_setting("k", ""),
                "setting value is 0 bytes; it must be 1 to 1024",
            ),
        ];
        for (config, message) in cases {
            let refused = config.validate(MAX_ORIGINS).map_err(|e| e.to_string());
            assert_eq!(refused, Err(message.to_owned()));
        }
    }
}
