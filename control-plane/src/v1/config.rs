//! [`HttpClientConfig`]: what an operator configures for the HTTP client.

use std::fmt;

use crate::error::ControlPlaneError;
use crate::retry::RetryConfig;
use crate::transport::DEFAULT_MAX_RESPONSE_BYTES;

/// Calls that may wait for the worker by default.
pub const DEFAULT_QUEUE_CAPACITY: usize = 64;
/// Most calls that may wait for the worker.
pub const MAX_QUEUE_CAPACITY: usize = 4_096;
/// Largest response body the client accepts, whatever is configured.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// The HTTP client's configuration; checked by
/// [`HttpControlPlaneClient::new`](super::HttpControlPlaneClient::new).
#[derive(Clone, PartialEq, Eq)]
pub struct HttpClientConfig {
    /// The server's base URL: `https://…`, or `http://` to a loopback
    /// address; no userinfo, query or fragment. V1 paths are appended.
    pub endpoint: String,
    /// Retries of discovery, registration, heartbeat and lease reads
    /// (bounded when a call executes); lease mutations always make one
    /// attempt with its attempt timeout.
    pub retry: RetryConfig,
    /// Calls that may wait for the worker (1–4,096); one more may be
    /// executing. A call beyond it fails at once with `LimitExceeded`
    /// naming `request queue`.
    pub queue_capacity: usize,
    /// Largest response body decoded (1 B – 16 MiB); the transport bounds
    /// what it reads as well.
    pub max_response_bytes: usize,
}

impl HttpClientConfig {
    /// The defaults for `endpoint`: [`RetryConfig::default`], a queue of
    /// 64 calls and 4 MiB responses.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            retry: RetryConfig::default(),
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// Checks the bounds that are refused rather than clamped.
    pub(crate) fn check(&self) -> Result<(), ControlPlaneError> {
        if !(1..=MAX_QUEUE_CAPACITY).contains(&self.queue_capacity) {
            return Err(ControlPlaneError::invalid(
                "queue_capacity",
                format!("{}, must be 1–{MAX_QUEUE_CAPACITY}", self.queue_capacity),
            ));
        }
        if !(1..=MAX_RESPONSE_BYTES).contains(&self.max_response_bytes) {
            return Err(ControlPlaneError::invalid(
                "max_response_bytes",
                format!(
                    "{}, must be 1–{MAX_RESPONSE_BYTES}",
                    self.max_response_bytes
                ),
            ));
        }
        Ok(())
    }
}

impl fmt::Debug for HttpClientConfig {
    /// Shows the endpoint without any userinfo (it would be refused, but
    /// a config is printed before it is checked).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let endpoint = crate::transport::redact_userinfo(&self.endpoint);
        f.debug_struct("HttpClientConfig")
            .field("endpoint", &endpoint)
            .field("retry", &self.retry)
            .field("queue_capacity", &self.queue_capacity)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_userinfo() {
        let spelled = HttpClientConfig::new("https:user:s3cret@cp.example.net");
        assert!(!format!("{spelled:?}").contains("s3cret"), "{spelled:?}");
        let config = HttpClientConfig::new("https://user:s3cret@cp.example.net:8443/base");
        let text = format!("{config:?}");
        assert!(
            !text.contains("s3cret") && !text.contains("user:"),
            "{text}"
        );
        assert!(
            text.contains("https://<userinfo>@cp.example.net:8443/base"),
            "{text}"
        );
    }

    #[test]
    fn zero_and_oversized_bounds_are_refused_naming_the_field() {
        let mut config = HttpClientConfig::new("https://cp.example.net");
        config.queue_capacity = 0;
        assert!(config
            .check()
            .expect_err("zero")
            .to_string()
            .starts_with("invalid queue_capacity"));
        config.queue_capacity = MAX_QUEUE_CAPACITY;
        config.max_response_bytes = MAX_RESPONSE_BYTES + 1;
        assert!(config
            .check()
            .expect_err("too big")
            .to_string()
            .starts_with("invalid max_response_bytes"));
    }
}
