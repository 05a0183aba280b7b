//! An S3 provider's configuration: the endpoint origin, the settings
//! `region`, `bucket` and `path_style`, and the credential's shape.
//!
//! Invariants:
//! - Every refusal names the setting (or the credential) it is about, and
//!   never echoes credential bytes.
//! - The endpoint is an approved `http://` or `https://` origin: scheme,
//!   host and port only.
//! - The credential is `ACCESS_KEY_ID:SECRET_ACCESS_KEY`, both parts
//!   non-empty printable ASCII.

use std::collections::BTreeMap;

use provider_pools_actors::{Credential, OriginKind, ProviderConfig};

use crate::http_origin::{ApprovedOrigin, OriginError};

/// The provider setting naming the S3 region (required).
pub const REGION_SETTING: &str = "region";
/// The provider setting naming the one bucket the provider serves
/// (required); guests name keys only.
pub const BUCKET_SETTING: &str = "bucket";
/// The provider setting choosing path-style addressing (`true`, the
/// default) or virtual-hosted addressing (`false`).
pub const PATH_STYLE_SETTING: &str = "path_style";

/// Why an S3 provider's configuration or credential was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum S3ConfigError {
    /// A required setting is missing.
    #[error("s3 setting `{setting}` is missing")]
    Missing {
        /// The setting's name.
        setting: &'static str,
    },
    /// A setting's value is not allowed.
    #[error("s3 setting `{setting}` is invalid: {reason}")]
    Invalid {
        /// The setting's name.
        setting: &'static str,
        /// A fixed reason.
        reason: &'static str,
    },
    /// The origin's target is not an approved endpoint origin.
    #[error("s3 endpoint origin is invalid")]
    Endpoint(#[from] OriginError),
    /// The origin is not an [`OriginKind::S3`] origin.
    #[error("the origin is not an s3 origin")]
    NotS3,
    /// The credential is not `ACCESS_KEY_ID:SECRET_ACCESS_KEY`.
    #[error("s3 credential is invalid: {reason}")]
    Credential {
        /// A fixed reason; never the credential's bytes.
        reason: &'static str,
    },
}

impl S3ConfigError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing { .. } | Self::Invalid { .. } => "invalid_setting",
            Self::Endpoint(_) => "invalid_origin",
            Self::NotS3 => "not_s3",
            Self::Credential { .. } => "invalid_credential",
        }
    }
}

/// A validated S3 origin: endpoint, region, bucket and addressing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Endpoint {
    /// The approved endpoint origin (the slot's target).
    pub origin: ApprovedOrigin,
    /// The region the SDK signs for.
    pub region: String,
    /// The one bucket the provider serves.
    pub bucket: String,
    /// Path-style (`origin/bucket/key`) or virtual-hosted
    /// (`bucket.host/key`) addressing.
    pub path_style: bool,
}

impl S3Endpoint {
    /// Validates an S3 origin's target and the provider's settings.
    ///
    /// # Errors
    ///
    /// The [`S3ConfigError`] naming the first setting refused.
    pub fn parse(target: &str, settings: &BTreeMap<String, String>) -> Result<Self, S3ConfigError> {
        Self::from_lookup(target, |key| settings.get(key).map(String::as_str))
    }

    pub(crate) fn from_lookup<'a>(
        target: &str,
        setting: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Self, S3ConfigError> {
        let origin = ApprovedOrigin::parse(target)?;
        let region = setting(REGION_SETTING).ok_or(S3ConfigError::Missing {
            setting: REGION_SETTING,
        })?;
        check_region(region)?;
        let bucket = setting(BUCKET_SETTING).ok_or(S3ConfigError::Missing {
            setting: BUCKET_SETTING,
        })?;
        check_bucket(bucket)?;
        let path_style = match setting(PATH_STYLE_SETTING) {
            None | Some("true") => true,
            Some("false") => false,
            Some(_) => {
                return Err(S3ConfigError::Invalid {
                    setting: PATH_STYLE_SETTING,
                    reason: "must be `true` or `false`",
                })
            }
        };
        Ok(Self {
            origin,
            region: region.to_owned(),
            bucket: bucket.to_owned(),
            path_style,
        })
    }

    /// The `Host` a request of this endpoint carries: the origin's host,
    /// or `bucket.host` with virtual-hosted addressing.
    pub(crate) fn request_host(&self) -> String {
        if self.path_style {
            self.origin.host_header()
        } else {
            format!("{}.{}", self.bucket, self.origin.host_header())
        }
    }

    /// `scheme://host[:port]` as the SDK's endpoint URL.
    pub(crate) fn endpoint_url(&self) -> String {
        format!("{}://{}", self.origin.scheme(), self.origin.host_header())
    }
}

/// Validates every [`OriginKind::S3`] origin of `config` with its
/// settings, before the configuration is installed.
///
/// # Errors
///
/// The first origin's [`S3ConfigError`]; [`S3ConfigError::NotS3`] when the
/// configuration has no S3 origin.
pub fn validate(config: &ProviderConfig) -> Result<(), S3ConfigError> {
    let mut found = false;
    for origin in config.origins.iter().filter(|o| o.kind == OriginKind::S3) {
        S3Endpoint::parse(&origin.target, &config.settings)?;
        found = true;
    }
    if found {
        Ok(())
    } else {
        Err(S3ConfigError::NotS3)
    }
}

/// Checks that `credential` has the shape `ACCESS_KEY_ID:SECRET_ACCESS_KEY`.
///
/// # Errors
///
/// [`S3ConfigError::Credential`] with a fixed reason.
pub fn validate_credential(credential: &Credential) -> Result<(), S3ConfigError> {
    split_credential(credential.expose_to_adapter()).map(|_| ())
}

/// The access key id and the secret, borrowed from the credential bytes.
pub(crate) fn split_credential(bytes: &[u8]) -> Result<(&str, &str), S3ConfigError> {
    let refuse = |reason| S3ConfigError::Credential { reason };
    let text = std::str::from_utf8(bytes)
        .map_err(|_| refuse("expected ACCESS_KEY_ID:SECRET_ACCESS_KEY in ascii"))?;
    let (key_id, secret) = text
        .split_once(':')
        .ok_or_else(|| refuse("expected ACCESS_KEY_ID:SECRET_ACCESS_KEY"))?;
    if key_id.is_empty() || secret.is_empty() {
        return Err(refuse("the access key id and the secret must not be empty"));
    }
    let printable = |s: &str| s.bytes().all(|b| b.is_ascii_graphic());
    if !printable(key_id) || !printable(secret) {
        return Err(refuse(
            "the access key id and the secret must be printable ascii",
        ));
    }
    Ok((key_id, secret))
}

fn check_region(region: &str) -> Result<(), S3ConfigError> {
    let valid = !region.is_empty()
        && region.len() <= 64
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if valid {
        Ok(())
    } else {
        Err(S3ConfigError::Invalid {
            setting: REGION_SETTING,
            reason: "1 to 64 lowercase letters, digits or `-`",
        })
    }
}

/// S3's bucket naming rules: 3 to 63 lowercase letters, digits, `.` and
/// `-`, starting and ending with a letter or digit.
fn check_bucket(bucket: &str) -> Result<(), S3ConfigError> {
    let bytes = bucket.as_bytes();
    let edge = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let valid = (3..=63).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'.' || *b == b'-')
        && edge(bytes.first())
        && edge(bytes.last())
        && !bucket.contains("..");
    if valid {
        Ok(())
    } else {
        Err(S3ConfigError::Invalid {
            setting: BUCKET_SETTING,
            reason: "3 to 63 lowercase letters, digits, `.` or `-`, starting and ending with a letter or digit",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_valid_configuration_defaults_to_path_style() {
        let endpoint = S3Endpoint::parse(
            "http://127.0.0.1:9000",
            &settings(&[("region", "us-east-1"), ("bucket", "data")]),
        )
        .expect("valid");
        assert!(endpoint.path_style);
        assert_eq!(endpoint.request_host(), "127.0.0.1:9000");
        assert_eq!(endpoint.endpoint_url(), "http://127.0.0.1:9000");
    }

    #[test]
    fn each_refusal_names_its_setting() {
        let target = "http://127.0.0.1:9000";
        let missing =
            |s: &[(&str, &str)]| S3Endpoint::parse(target, &settings(s)).expect_err("refused");
        assert_eq!(
            missing(&[("bucket", "data")]),
            S3ConfigError::Missing { setting: "region" }
        );
        assert_eq!(
            missing(&[("region", "us-east-1")]),
            S3ConfigError::Missing { setting: "bucket" }
        );
        for (key, value) in [
            ("region", "US East"),
            ("bucket", "Data"),
            ("bucket", "ab"),
            ("bucket", "-data"),
            ("path_style", "yes"),
        ] {
            let mut pairs = vec![("region", "us-east-1"), ("bucket", "data")];
            pairs.retain(|(k, _)| *k != key);
            pairs.push((key, value));
            match missing(&pairs) {
                S3ConfigError::Invalid { setting, .. } => assert_eq!(setting, key),
                other => panic!("{key}={value}: {other:?}"),
            }
        }
        assert_eq!(
            S3Endpoint::parse("http://h/path", &settings(&[])).expect_err("path"),
            S3ConfigError::Endpoint(OriginError::Path)
        );
    }

    #[test]
    fn virtual_hosted_addressing_prefixes_the_bucket() {
        let endpoint = S3Endpoint::parse(
            "https://s3.example:443",
            &settings(&[
                ("region", "eu-west-1"),
                ("bucket", "data"),
                ("path_style", "false"),
            ]),
        )
        .expect("valid");
        assert_eq!(endpoint.request_host(), "data.s3.example");
    }

    #[test]
    fn the_credential_shape_is_checked_without_echoing_it() {
        assert_eq!(
            split_credential(b"AKIDEXAMPLE:s3cr3t/with+chars").expect("valid"),
            ("AKIDEXAMPLE", "s3cr3t/with+chars")
        );
        for bad in [
            &b"KQXQ7ZVQW9"[..],
            b":ZVQW9",
            b"KQXQ7:",
            b"KQXQ7:ZVQW9 ZVQW9",
            b"KQXQ7:ZVQW9\xff",
        ] {
            let error = split_credential(bad).expect_err("bad shape");
            let shown = format!("{error} {error:?}");
            assert!(!shown.contains("ZVQW9"), "{shown}");
            assert!(!shown.contains("KQXQ7"), "{shown}");
            assert_eq!(error.code(), "invalid_credential");
        }
    }
}
