//! [`EtcdConfig`]: where the etcd gateway is, which key prefix the control
//! plane owns there, and the bounds of every exchange.
//!
//! Invariants:
//! - A checked endpoint is `https`, or plain `http` to a loopback address,
//!   with no userinfo, query or fragment ([`check_endpoint`]).
//! - A checked prefix is 1–256 bytes of `[A-Za-z0-9._:/-]` ending in `/`, so
//!   no two deployments' key spaces nest by accident of spelling.
//! - Every exchange has a deadline (1 ms – 30 s) and a response bound
//!   (1 KiB – 64 MiB); discovery lists at most 1–65,536 instances.

use std::time::Duration;

use crate::error::ControlPlaneError;
use crate::transport::{Endpoint, DEFAULT_MAX_RESPONSE_BYTES};

/// The key prefix used unless another is configured.
pub const DEFAULT_PREFIX: &str = "/provider-pools/";
/// How long one HTTP exchange with etcd may take by default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The most instances one discovery lists by default.
pub const DEFAULT_MAX_DISCOVERED: usize = 4_096;

const MAX_PREFIX_BYTES: usize = 256;
const MAX_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const MIN_RESPONSE_BYTES: usize = 1024;
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
const MAX_DISCOVERED: usize = 65_536;

/// How to reach etcd and how much to accept from it.
///
/// ```
/// use std::time::Duration;
/// use provider_pools_control_plane::etcd::EtcdConfig;
///
/// let config = EtcdConfig::new("http://127.0.0.1:2379")
///     .with_prefix("/billing-cluster/")
///     .with_request_timeout(Duration::from_secs(2));
/// assert_eq!(config.prefix(), "/billing-cluster/");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct EtcdConfig {
    endpoint: String,
    prefix: String,
    request_timeout: Duration,
    max_response_bytes: usize,
    max_discovered: usize,
}

impl std::fmt::Debug for EtcdConfig {
    /// Shows the endpoint through [`crate::transport::redact_userinfo`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdConfig")
            .field(
                "endpoint",
                &crate::transport::redact_userinfo(&self.endpoint),
            )
            .field("prefix", &self.prefix)
            .field("request_timeout", &self.request_timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("max_discovered", &self.max_discovered)
            .finish()
    }
}

impl EtcdConfig {
    /// The etcd client URL (`https://…`, or `http://` to loopback) with the
    /// defaults: prefix `/provider-pools/`, 5 s per exchange, 4 MiB per
    /// response, 4,096 instances per discovery. Checked by
    /// [`EtcdClient::new`](super::EtcdClient::new).
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            prefix: DEFAULT_PREFIX.to_owned(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_discovered: DEFAULT_MAX_DISCOVERED,
        }
    }

    /// The key prefix every control-plane key starts with.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long one HTTP exchange may take, connecting included.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The largest response body read from etcd.
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The most instances one discovery lists; more is an error, never a
    /// silent truncation.
    pub fn with_max_discovered(mut self, instances: usize) -> Self {
        self.max_discovered = instances;
        self
    }

    /// The endpoint as given.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The deadline of one exchange.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The response bound, in bytes.
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }

    /// The discovery bound, in instances.
    pub fn max_discovered(&self) -> usize {
        self.max_discovered
    }

    /// Checks every field; answers the endpoint's base URL.
    pub(crate) fn check(&self) -> Result<String, ControlPlaneError> {
        let base = check_endpoint(&self.endpoint)?;
        check_prefix(&self.prefix)?;
        if self.request_timeout.is_zero() || self.request_timeout > MAX_REQUEST_TIMEOUT {
            return Err(ControlPlaneError::invalid(
                "request_timeout",
                format!(
                    "{} ms, must be 1–{} ms",
                    self.request_timeout.as_millis(),
                    MAX_REQUEST_TIMEOUT.as_millis()
                ),
            ));
        }
        if !(MIN_RESPONSE_BYTES..=MAX_RESPONSE_BYTES).contains(&self.max_response_bytes) {
            return Err(ControlPlaneError::invalid(
                "max_response_bytes",
                format!(
                    "{}, must be {MIN_RESPONSE_BYTES}–{MAX_RESPONSE_BYTES}",
                    self.max_response_bytes
                ),
            ));
        }
        if !(1..=MAX_DISCOVERED).contains(&self.max_discovered) {
            return Err(ControlPlaneError::invalid(
                "max_discovered",
                format!("{}, must be 1–{MAX_DISCOVERED}", self.max_discovered),
            ));
        }
        Ok(base)
    }
}

/// The endpoint's base URL, validated by [`Endpoint::parse`] (https, or
/// http to a loopback address; no userinfo, query or fragment), without a
/// trailing `/`, ready for `/v3/…` to be appended.
pub(crate) fn check_endpoint(endpoint: &str) -> Result<String, ControlPlaneError> {
    Endpoint::parse(endpoint).map(|endpoint| endpoint.as_str().to_owned())
}

fn check_prefix(prefix: &str) -> Result<(), ControlPlaneError> {
    if prefix.is_empty() || prefix.len() > MAX_PREFIX_BYTES {
        return Err(ControlPlaneError::invalid(
            "prefix",
            format!("{} bytes, must be 1–{MAX_PREFIX_BYTES}", prefix.len()),
        ));
    }
    if !prefix.ends_with('/') {
        return Err(ControlPlaneError::invalid("prefix", "must end with '/'"));
    }
    match prefix
        .bytes()
        .find(|byte| !(byte.is_ascii_alphanumeric() || b"._:/-".contains(byte)))
    {
        Some(byte) => Err(ControlPlaneError::invalid(
            "prefix",
            format!("byte 0x{byte:02x} is not a letter, digit, '.', '_', ':', '/' or '-'"),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn https_anywhere_and_http_only_to_loopback() {
        for good in [
            "https://etcd.example:2379",
            "http://127.0.0.1:2379",
            "http://127.8.9.10:1/",
            "http://[::1]:2379",
            "http://localhost:2379",
        ] {
            assert!(check_endpoint(good).is_ok(), "{good}");
        }
        for (bad, code) in [
            ("http://10.0.0.7:2379", ErrorCode::InsecureEndpoint),
            ("http://etcd.example:2379", ErrorCode::InsecureEndpoint),
            ("https://user:pw@etcd.example", ErrorCode::InsecureEndpoint),
            ("http://user@127.0.0.1:2379", ErrorCode::InsecureEndpoint),
            ("ftp://127.0.0.1", ErrorCode::Invalid),
            ("https://etcd.example/?a=b", ErrorCode::Invalid),
            ("not a url", ErrorCode::Invalid),
        ] {
            let error = check_endpoint(bad).expect_err(bad);
            assert_eq!(error.code(), code, "{bad}: {error}");
            assert!(!error.to_string().contains("pw"), "{error}");
        }
    }

    #[test]
    fn the_base_url_loses_its_trailing_slash() {
        let base = check_endpoint("https://etcd.example/gateway/").expect("valid");
        assert_eq!(base, "https://etcd.example/gateway");
        let base = check_endpoint("http://127.0.0.1:2379").expect("valid");
        assert_eq!(base, "http://127.0.0.1:2379");
    }

    #[test]
    fn each_bound_is_checked_naming_its_field() {
        let config = || EtcdConfig::new("http://127.0.0.1:2379");
        assert!(config().check().is_ok());
        for (bad, field) in [
            (config().with_prefix(""), "prefix"),
            (config().with_prefix("no-slash"), "prefix"),
            (config().with_prefix("/a b/"), "prefix"),
            (config().with_prefix("/".repeat(257)), "prefix"),
            (
                config().with_request_timeout(Duration::ZERO),
                "request_timeout",
            ),
            (
                config().with_request_timeout(Duration::from_secs(31)),
                "request_timeout",
            ),
            (config().with_max_response_bytes(10), "max_response_bytes"),
            (config().with_max_discovered(0), "max_discovered"),
            (config().with_max_discovered(65_537), "max_discovered"),
        ] {
            let error = bad.check().expect_err(field);
            assert!(
                error.to_string().starts_with(&format!("invalid {field}: ")),
                "{field}: {error}"
            );
        }
    }
}
