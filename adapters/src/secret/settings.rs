//! [`SecretSettings`]: the public, bounded settings of a secret origin, read
//! from the provider's configuration.
//!
//! Invariants:
//! - Every setting has a default and an absolute ceiling; a value of zero,
//!   above its ceiling or not a decimal integer is refused naming the
//!   setting.
//! - Settings are public configuration: they never hold secret bytes.

use std::time::Duration;

use provider_pools_actors::{OriginKind, ProviderConfig};

use crate::secret::SecretError;

/// Setting: the largest secret file a reload accepts, in bytes.
pub const MAX_SECRET_BYTES_SETTING: &str = "max_secret_bytes";
/// Setting: how long loaded material is served, in milliseconds.
pub const TTL_MS_SETTING: &str = "ttl_ms";
/// Setting: how many secrets one origin's cache holds.
pub const MAX_SECRETS_SETTING: &str = "max_secrets";

/// The bounds of one secret origin's cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretSettings {
    /// Largest secret file a reload accepts (default 64 KiB, ceiling 1 MiB).
    pub max_secret_bytes: u32,
    /// How long loaded material is served after its reload read it
    /// (default 5 minutes, ceiling 24 hours).
    pub ttl: Duration,
    /// Most secrets cached per origin and epoch (default 64, ceiling 1,024).
    pub max_secrets: usize,
}

/// `(setting, default, ceiling)` of each integer setting.
const MAX_BYTES: (&str, u64, u64) = (MAX_SECRET_BYTES_SETTING, 64 * 1024, 1024 * 1024);
const TTL_MS: (&str, u64, u64) = (TTL_MS_SETTING, 5 * 60 * 1000, 24 * 60 * 60 * 1000);
const MAX_SECRETS: (&str, u64, u64) = (MAX_SECRETS_SETTING, 64, 1024);

impl SecretSettings {
    /// The defaults.
    pub const DEFAULT: Self = Self {
        max_secret_bytes: MAX_BYTES.1 as u32,
        ttl: Duration::from_millis(TTL_MS.1),
        max_secrets: MAX_SECRETS.1 as usize,
    };

    /// The absolute ceilings.
    pub const CEILING: Self = Self {
        max_secret_bytes: MAX_BYTES.2 as u32,
        ttl: Duration::from_millis(TTL_MS.2),
        max_secrets: MAX_SECRETS.2 as usize,
    };

    /// Reads the settings through `lookup` (a setting's value by key),
    /// taking the default for each one not set.
    ///
    /// # Errors
    ///
    /// [`SecretError::Setting`] naming the first setting that is not a
    /// decimal integer from 1 to its ceiling.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_adapters::secret::SecretSettings;
    ///
    /// let settings = SecretSettings::parse(|key| (key == "ttl_ms").then_some("1000"))?;
    /// assert_eq!(settings.ttl, std::time::Duration::from_secs(1));
    /// assert!(SecretSettings::parse(|_| Some("0")).is_err());
    /// # Ok::<(), provider_pools_adapters::secret::SecretError>(())
    /// ```
    pub fn parse<'a>(lookup: impl Fn(&str) -> Option<&'a str>) -> Result<Self, SecretError> {
        let get = |(setting, default, ceiling): (&'static str, u64, u64)| {
            let Some(text) = lookup(setting) else {
                return Ok(default);
            };
            match text.parse::<u64>() {
                Ok(value) if (1..=ceiling).contains(&value) => Ok(value),
                _ => Err(SecretError::Setting {
                    setting,
                    max: ceiling,
                }),
            }
        };
        // The ceilings fit the target types, so the conversions are exact.
        Ok(Self {
            max_secret_bytes: u32::try_from(get(MAX_BYTES)?).unwrap_or(u32::MAX),
            ttl: Duration::from_millis(get(TTL_MS)?),
            max_secrets: usize::try_from(get(MAX_SECRETS)?).unwrap_or(usize::MAX),
        })
    }

    /// Validates a provider configuration before it is installed: its
    /// settings, and that every secret origin's target is an absolute path.
    /// The directory itself is opened by each reload.
    ///
    /// # Errors
    ///
    /// [`SecretError::Setting`], or [`SecretError::Directory`] with
    /// [`std::io::ErrorKind::InvalidInput`] for a relative target.
    pub fn of_config(config: &ProviderConfig) -> Result<Self, SecretError> {
        let relative = config.origins.iter().any(|origin| {
            origin.kind == OriginKind::Secret && !std::path::Path::new(&origin.target).is_absolute()
        });
        if relative {
            return Err(SecretError::Directory(std::io::ErrorKind::InvalidInput));
        }
        Self::parse(|key| config.settings.get(key).map(String::as_str))
    }
}

impl Default for SecretSettings {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &'static str)]) -> Result<SecretSettings, SecretError> {
        let pairs = pairs.to_vec();
        SecretSettings::parse(move |key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v))
    }

    #[test]
    fn defaults_apply_and_each_bound_is_refused_by_name() {
        assert_eq!(with(&[]).map_err(|e| e.code()), Ok(SecretSettings::DEFAULT));
        let top = with(&[
            ("max_secret_bytes", "1048576"),
            ("ttl_ms", "86400000"),
            ("max_secrets", "1024"),
        ]);
        assert_eq!(top.map_err(|e| e.code()), Ok(SecretSettings::CEILING));
        for (setting, bad) in [
            ("max_secret_bytes", "0"),
            ("max_secret_bytes", "1048577"),
            ("ttl_ms", "-1"),
            ("ttl_ms", "86400001"),
            ("max_secrets", "1e3"),
            ("max_secrets", ""),
        ] {
            let refused = with(&[(setting, bad)]).expect_err("refused");
            assert!(
                matches!(refused, SecretError::Setting { setting: s, .. } if s == setting),
                "{setting} = {bad:?}: {refused}"
            );
        }
    }
}
