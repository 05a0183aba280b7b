//! [`PooledHttpTransport`]: the reusable unauthenticated HTTP profile — one
//! [`reqwest::Client`] built once and reused by every request, so
//! connections (and TLS sessions) are kept alive across calls.
//!
//! Invariants:
//! - One client per transport; clones share it and its connection pool.
//! - Bounded everywhere: connect timeout, a per-request timeout equal to the
//!   time left before the request deadline (and the whole exchange,
//!   body included, stops at that deadline), a bounded number of idle
//!   connections kept for a bounded time, a response body of
//!   at most `max_response_bytes` (a larger `Content-Length` is refused
//!   before reading; a body streamed past the bound is cut off there and its
//!   connection dropped, not pooled).
//! - The shared request body is sent as is: [`Bytes`] clones are reference
//!   counts, never copies.
//! - TLS is rustls on ring with the web PKI roots or the `ca_file` CA only;
//!   HTTP/1.1 only; no proxy from the environment; redirects are never
//!   followed (a 3xx is passed through), so a request never leaves the
//!   validated endpoint.
//! - Each request URL is checked again ([`super::target`]): plain http goes
//!   to loopback only.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::BytesMut;
use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use tokio::time::Instant;

use super::target::request_url;
use super::tls_config::client_config;
use super::{
    HttpControlPlaneRequest, HttpMethod, HttpResponse, HttpTransport,
    SharedHttpControlPlaneRequest, TransportError, DEFAULT_MAX_RESPONSE_BYTES,
};
use crate::error::ControlPlaneError;
use crate::future::BoxFuture;

/// Default bound on establishing a connection (TCP and TLS).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default time an idle pooled connection is kept.
pub const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default number of idle connections kept per host.
pub const DEFAULT_POOL_MAX_IDLE_PER_HOST: usize = 4;
/// The ceiling of idle connections kept per host.
pub const MAX_POOL_MAX_IDLE_PER_HOST: usize = 1_024;

/// How a [`PooledHttpTransport`] (or a
/// [`BearerHttpTransport`](super::BearerHttpTransport)) builds its client.
///
/// Defaults: connect timeout [`DEFAULT_CONNECT_TIMEOUT`] (5 s), idle
/// connections kept [`DEFAULT_POOL_IDLE_TIMEOUT`] (30 s), at most
/// [`DEFAULT_POOL_MAX_IDLE_PER_HOST`] (4) idle per host, responses of at
/// most [`DEFAULT_MAX_RESPONSE_BYTES`] (4 MiB), web PKI roots (no
/// `ca_file`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PooledTransportConfig {
    connect_timeout: Duration,
    pool_idle_timeout: Duration,
    pool_max_idle_per_host: usize,
    max_response_bytes: usize,
    ca_file: Option<PathBuf>,
}

impl Default for PooledTransportConfig {
    fn default() -> Self {
        Self {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            pool_idle_timeout: DEFAULT_POOL_IDLE_TIMEOUT,
            pool_max_idle_per_host: DEFAULT_POOL_MAX_IDLE_PER_HOST,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            ca_file: None,
        }
    }
}

impl PooledTransportConfig {
    /// The bound on establishing a connection; never more than the request's
    /// own deadline in effect.
    pub fn with_connect_timeout(self, connect_timeout: Duration) -> Self {
        Self {
            connect_timeout,
            ..self
        }
    }

    /// How long an idle connection is kept in the pool.
    pub fn with_pool_idle_timeout(self, pool_idle_timeout: Duration) -> Self {
        Self {
            pool_idle_timeout,
            ..self
        }
    }

    /// How many idle connections are kept per host (0 keeps none: every
    /// request gets a new connection), at most
    /// [`MAX_POOL_MAX_IDLE_PER_HOST`].
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `pool_max_idle_per_host` above
    /// its ceiling.
    pub fn with_pool_max_idle_per_host(
        self,
        pool_max_idle_per_host: usize,
    ) -> Result<Self, ControlPlaneError> {
        if pool_max_idle_per_host > MAX_POOL_MAX_IDLE_PER_HOST {
            return Err(ControlPlaneError::invalid(
                "pool_max_idle_per_host",
                format!("{pool_max_idle_per_host}, must be at most {MAX_POOL_MAX_IDLE_PER_HOST}"),
            ));
        }
        Ok(Self {
            pool_max_idle_per_host,
            ..self
        })
    }

    /// The largest response body read, in bytes: 1 to
    /// [`MAX_RESPONSE_BYTES_CEILING`](super::MAX_RESPONSE_BYTES_CEILING).
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `max_response_bytes` when zero
    /// or above the ceiling.
    pub fn with_max_response_bytes(
        self,
        max_response_bytes: usize,
    ) -> Result<Self, ControlPlaneError> {
        Ok(Self {
            max_response_bytes: super::check_response_bound(max_response_bytes)?,
            ..self
        })
    }

    /// A PEM bundle whose certificates replace the web PKI roots (a private
    /// CA).
    pub fn with_ca_file(self, ca_file: impl Into<PathBuf>) -> Self {
        Self {
            ca_file: Some(ca_file.into()),
            ..self
        }
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The pool idle timeout.
    pub fn pool_idle_timeout(&self) -> Duration {
        self.pool_idle_timeout
    }

    /// The idle connections kept per host.
    pub fn pool_max_idle_per_host(&self) -> usize {
        self.pool_max_idle_per_host
    }

    /// The response-body bound, in bytes.
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }

    /// The `ca_file`, if any.
    pub fn ca_file(&self) -> Option<&Path> {
        self.ca_file.as_deref()
    }
}

/// One reused, bounded HTTP client; no authentication.
#[derive(Clone)]
pub struct PooledHttpTransport {
    client: reqwest::Client,
    config: PooledTransportConfig,
}

impl PooledHttpTransport {
    /// Builds the client once.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] for a zero connect timeout, a
    /// `ca_file` that cannot be read or holds no usable certificate (field
    /// `ca_file`), or a client that cannot be built; `TooLarge` for a
    /// `ca_file` over [`MAX_CA_FILE_BYTES`](super::MAX_CA_FILE_BYTES).
    pub fn new(config: PooledTransportConfig) -> Result<Self, ControlPlaneError> {
        if config.connect_timeout.is_zero() {
            return Err(ControlPlaneError::invalid(
                "connect_timeout",
                "must be more than zero",
            ));
        }
        let tls = client_config(config.ca_file())?;
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .http1_only()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .tcp_nodelay(true)
            .connect_timeout(config.connect_timeout)
            .pool_idle_timeout(config.pool_idle_timeout)
            .pool_max_idle_per_host(config.pool_max_idle_per_host)
            .build()
            .map_err(|error| ControlPlaneError::invalid("transport", describe(&error)))?;
        Ok(Self { client, config })
    }

    /// The configuration the client was built from.
    pub fn config(&self) -> &PooledTransportConfig {
        &self.config
    }

    /// Sends `request` on the shared client, with `authorization` when the
    /// bearer transport adds one; reads the bounded answer by the deadline.
    pub(crate) async fn execute(
        &self,
        request: &SharedHttpControlPlaneRequest,
        authorization: Option<HeaderValue>,
    ) -> Result<HttpResponse, TransportError> {
        let url = request_url(request.url())?;
        let deadline = request.deadline();
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(TransportError::Timeout);
        }
        let mut builder = self
            .client
            .request(method(request.method()), url)
            .timeout(left)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .body(request.body().clone());
        if let Some(value) = authorization {
            builder = builder.header(AUTHORIZATION, value);
        }
        tokio::time::timeout_at(deadline, self.round_trip(builder))
            .await
            .unwrap_or(Err(TransportError::Timeout))
    }

    async fn round_trip(
        &self,
        builder: reqwest::RequestBuilder,
    ) -> Result<HttpResponse, TransportError> {
        let limit = self.config.max_response_bytes;
        let mut response = builder.send().await.map_err(transport_error)?;
        let status = response.status().as_u16();
        let declared = response.content_length().unwrap_or(0);
        if declared > limit as u64 {
            return Err(TransportError::TooLarge { limit });
        }
        // Grown as bytes arrive, never sized by the announced length.
        let mut body = BytesMut::new();
        while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
            if chunk.len() > limit - body.len() {
                // Dropping the response closes its connection.
                return Err(TransportError::TooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(HttpResponse {
            status,
            body: body.freeze(),
        })
    }
}

impl fmt::Debug for PooledHttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledHttpTransport")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl HttpTransport for PooledHttpTransport {
    fn send(
        &self,
        request: HttpControlPlaneRequest,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        Box::pin(async move { self.execute(&request.into_shared(), None).await })
    }

    fn send_shared<'a>(
        &'a self,
        request: &'a SharedHttpControlPlaneRequest,
    ) -> BoxFuture<'a, Result<HttpResponse, TransportError>> {
        Box::pin(self.execute(request, None))
    }
}

fn method(method: HttpMethod) -> reqwest::Method {
    match method {
        HttpMethod::Get => reqwest::Method::GET,
        HttpMethod::Post => reqwest::Method::POST,
        HttpMethod::Put => reqwest::Method::PUT,
        HttpMethod::Delete => reqwest::Method::DELETE,
    }
}

/// Connect (and TLS handshake) failures never sent the request; anything
/// later may have.
fn transport_error(error: reqwest::Error) -> TransportError {
    if error.is_timeout() {
        return TransportError::Timeout;
    }
    let before_send = error.is_connect() || error.is_builder();
    let text = describe(&error.without_url());
    if before_send {
        TransportError::Connect(text)
    } else {
        TransportError::Io(text)
    }
}

/// An error and its sources, `: `-separated.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
