//! What a Vault slot is configured with, and the transit key names a guest
//! may give: the server's address, the KV-v2 and transit mounts, the
//! namespace, the token (secret paths: `path.rs`). Parsing here is pure:
//! nothing dials or installs.
//!
//! Invariants:
//! - A [`VaultAddress`] is exactly scheme (`http` or `https`), host and
//!   port: the http adapter's [`ApprovedOrigin`], which its dialer connects to.
//! - A mount, a namespace and a [`SecretPath`](crate::vault::SecretPath) are relative, `/`-separated
//!   segments of `[A-Za-z0-9._-]`, none empty, `.` or `..`, within a bound;
//!   a [`TransitKey`] is one such segment.
//! - A token is printable ASCII (a valid header value); a refused token is
//!   never echoed.

use std::fmt;

pub use crate::http_origin::CA_FILE_SETTING;
use crate::http_origin::{ApprovedOrigin, OriginError};
use crate::vault::error::VaultError;
use crate::vault::path::{check_segments, PathError, MAX_MOUNT};

/// The provider setting naming the KV-v2 mount (default [`DEFAULT_MOUNT`]).
pub const MOUNT_SETTING: &str = "mount";
/// The provider setting naming the Vault namespace (`X-Vault-Namespace`).
pub const NAMESPACE_SETTING: &str = "namespace";
/// The KV-v2 mount used when the provider sets none.
pub const DEFAULT_MOUNT: &str = "secret";
/// The provider setting naming the transit mount (default
/// [`DEFAULT_TRANSIT_MOUNT`]).
pub const TRANSIT_MOUNT_SETTING: &str = "transit_mount";
/// The transit mount used when the provider sets none.
pub const DEFAULT_TRANSIT_MOUNT: &str = "transit";

/// Longest token accepted, in bytes.
pub const MAX_TOKEN: usize = 1024;

/// A guest's transit key name, e.g. `app-key`: one segment of
/// `[A-Za-z0-9._-]`, not `.` or `..`, at most [`MAX_MOUNT`] bytes.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TransitKey(String);

impl TransitKey {
    /// Parses a transit key name.
    ///
    /// # Errors
    ///
    /// [`VaultError::InvalidInput`] naming the key and what was wrong.
    pub fn parse(text: &str) -> Result<Self, VaultError> {
        let refuse = |reason| VaultError::InvalidInput {
            input: "transit key",
            reason,
        };
        if text.contains('/') {
            return Err(refuse("must be one segment"));
        }
        check_segments(text, MAX_MOUNT).map_err(|e| {
            refuse(match e {
                PathError::Empty => "is empty",
                PathError::TooLong => "is longer than 128 bytes",
                PathError::DotSegment => "must not be '.' or '..'",
                _ => "may hold only ASCII letters, digits, '.', '_' and '-'",
            })
        })?;
        Ok(Self(text.to_owned()))
    }

    /// The name as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for TransitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TransitKey({})", self.0)
    }
}

impl fmt::Display for TransitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A Vault server's address: `http://host[:port]` or `https://host[:port]`
/// (ports 80 and 443 when left out).
#[derive(Clone, PartialEq, Eq)]
pub struct VaultAddress {
    origin: ApprovedOrigin,
}

impl VaultAddress {
    /// Parses an address origin: a scheme, a host and an optional port,
    /// nothing else (no userinfo, path — not even `/` —, query or fragment).
    ///
    /// # Errors
    ///
    /// [`VaultError::Config`] naming the slot's target.
    pub fn parse(text: &str) -> Result<Self, VaultError> {
        let origin = ApprovedOrigin::parse(text).map_err(|e| VaultError::Config {
            setting: "target",
            reason: match e {
                OriginError::UnsupportedScheme => "scheme must be http or https",
                OriginError::Userinfo => "must not carry userinfo",
                OriginError::Path => "must not carry a path",
                OriginError::Query | OriginError::Fragment => "must not carry a query or fragment",
                OriginError::InvalidHost => "has no valid host",
                OriginError::InvalidPort => "has no valid port",
            },
        })?;
        Ok(Self { origin })
    }

    /// True for `https`.
    pub fn is_tls(&self) -> bool {
        self.origin.is_tls()
    }

    /// The origin requests are sent to.
    pub fn origin(&self) -> &ApprovedOrigin {
        &self.origin
    }
}

impl fmt::Debug for VaultAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VaultAddress({})", self.origin)
    }
}

/// The mount named by the epoch's `mount` setting, or [`DEFAULT_MOUNT`].
pub(crate) fn mount(setting: Option<&str>) -> Result<String, VaultError> {
    let mount = setting.unwrap_or(DEFAULT_MOUNT);
    check_segments(mount, MAX_MOUNT).map_err(|_| VaultError::Config {
        setting: MOUNT_SETTING,
        reason: "must be a relative path of [A-Za-z0-9._-] segments",
    })?;
    Ok(mount.to_owned())
}

/// The transit mount named by the epoch's `transit_mount` setting, or
/// [`DEFAULT_TRANSIT_MOUNT`].
pub(crate) fn transit_mount(setting: Option<&str>) -> Result<String, VaultError> {
    let mount = setting.unwrap_or(DEFAULT_TRANSIT_MOUNT);
    check_segments(mount, MAX_MOUNT).map_err(|_| VaultError::Config {
        setting: TRANSIT_MOUNT_SETTING,
        reason: "must be a relative path of [A-Za-z0-9._-] segments",
    })?;
    Ok(mount.to_owned())
}

/// The namespace named by the epoch's `namespace` setting, if any.
pub(crate) fn namespace(setting: Option<&str>) -> Result<Option<String>, VaultError> {
    let Some(namespace) = setting else {
        return Ok(None);
    };
    check_segments(namespace.trim_end_matches('/'), MAX_MOUNT).map_err(|_| VaultError::Config {
        setting: NAMESPACE_SETTING,
        reason: "must be a relative path of [A-Za-z0-9._-] segments",
    })?;
    Ok(Some(namespace.to_owned()))
}

/// The epoch's credential as a token: non-empty printable ASCII of at most
/// [`MAX_TOKEN`] bytes. Never echoes what it refuses.
pub(crate) fn token(credential: &[u8]) -> Result<&str, VaultError> {
    let refuse = |reason| VaultError::Config {
        setting: "credential",
        reason,
    };
    if credential.is_empty() {
        return Err(refuse("the epoch's token is empty"));
    }
    if credential.len() > MAX_TOKEN {
        return Err(refuse("the epoch's token is too long"));
    }
    if !credential.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err(refuse("the epoch's token is not printable ascii"));
    }
    std::str::from_utf8(credential).map_err(|_| refuse("the epoch's token is not utf-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transit_keys_are_one_checked_segment() {
        assert_eq!(
            TransitKey::parse("app-key.v2").expect("valid").as_str(),
            "app-key.v2"
        );
        for bad in ["", "a/b", "..", "k y", "k%2f", &"k".repeat(MAX_MOUNT + 1)] {
            let err = TransitKey::parse(bad).expect_err(bad);
            assert!(
                matches!(
                    err,
                    VaultError::InvalidInput {
                        input: "transit key",
                        ..
                    }
                ),
                "{bad}"
            );
        }
        assert_eq!(transit_mount(None).ok().as_deref(), Some("transit"));
        assert!(transit_mount(Some("../sys")).is_err());
    }

    #[test]
    fn addresses_are_bare_origins() {
        for ok in [
            "http://127.0.0.1:8200",
            "https://vault.example",
            "http://[::1]:1",
        ] {
            assert!(VaultAddress::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "ftp://x",
            "http://u:p@host",
            "http://host/v1",
            "http://host?x",
            "http://host#f",
            "host:8200",
            "http://host//",
            "http://host/",
        ] {
            assert!(VaultAddress::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn settings_and_tokens_are_checked_without_echo() {
        assert_eq!(mount(None).ok().as_deref(), Some("secret"));
        assert!(mount(Some("kv/team-a")).is_ok());
        assert!(mount(Some("../sys")).is_err());
        assert!(namespace(Some("team/")).is_ok());
        assert!(namespace(Some("te am")).is_err());
        assert_eq!(token(b"s.abc").ok(), Some("s.abc"));
        let err = token(b"SECRET\r\nX: 1").expect_err("not printable");
        assert!(!format!("{err} {err:?}").contains("SECRET"));
        assert!(token(b"").is_err());
    }
}
