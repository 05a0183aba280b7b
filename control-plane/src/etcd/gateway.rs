//! [`Gateway`]: one JSON exchange with etcd's v3 gateway (`POST /v3/…`),
//! bounded in time and size, its failure classified.
//!
//! Invariants:
//! - One exchange is one HTTP request, never repeated here; it ends by the
//!   configured deadline (connecting, sending and reading included) and
//!   reads at most the configured number of response bytes.
//! - A [`Exchange::Decisive`] request (the one that changes a lease's
//!   holder or its life) that may have reached etcd and was not answered
//!   with a definite result is [`ControlPlaneError::OutcomeUnknown`]; only
//!   a failure to connect proves it was never sent.
//! - Redirects are not followed and no proxy is used: requests go to the
//!   checked endpoint only.

use std::error::Error as _;
use std::fmt;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::ControlPlaneError;
use crate::etcd::wire::GatewayError;

/// Longest transport message kept in an error.
const MAX_MESSAGE_CHARS: usize = 512;

/// What a failed exchange means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Exchange {
    /// A read, or a write whose loss changes no lease (a grant, a revoke, a
    /// presence write): failures are reported as they are.
    Plain,
    /// The write that decides the lease operation `operation`: once sent,
    /// any failure without a definite answer is an unknown outcome.
    Decisive(&'static str),
}

/// A reqwest client bound to one checked endpoint.
pub(super) struct Gateway {
    http: reqwest::Client,
    base: String,
    timeout: Duration,
    max_response_bytes: usize,
}

impl Gateway {
    /// A gateway to `base` (checked, without a trailing `/`).
    pub(super) fn new(
        base: String,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<Self, ControlPlaneError> {
        // The transports' TLS: rustls on ring with the web PKI roots.
        let tls = crate::transport::tls_config::client_config(None)?;
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .map_err(|error| {
                ControlPlaneError::Transport(format!(
                    "cannot build the etcd HTTP client: {}",
                    chain(&error)
                ))
            })?;
        Ok(Self {
            http,
            base,
            timeout,
            max_response_bytes,
        })
    }

    /// Posts `request` to `path` (`/v3/…`) and decodes the first JSON
    /// message of the answer (the keep-alive stream sends one per line).
    pub(super) async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &'static str,
        request: &Req,
        exchange: Exchange,
    ) -> Result<Resp, ControlPlaneError> {
        let body = serde_json::to_vec(request).map_err(|error| {
            ControlPlaneError::Protocol(format!("cannot encode {path}: {error}"))
        })?;
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|error| failed(path, &error, exchange))?;
        let status = response.status().as_u16();
        let body = self
            .read_body(response)
            .await
            .map_err(|error| after_send(path, error, exchange))?;
        if !(200..300).contains(&status) {
            return Err(refused(path, status, &body, exchange));
        }
        let mut messages = serde_json::Deserializer::from_slice(&body).into_iter::<Resp>();
        match messages.next() {
            Some(Ok(message)) => Ok(message),
            Some(Err(error)) => Err(after_send(
                path,
                ControlPlaneError::Corrupt {
                    what: "etcd response",
                    reason: format!("{path}: {error}"),
                },
                exchange,
            )),
            None => Err(after_send(
                path,
                ControlPlaneError::Corrupt {
                    what: "etcd response",
                    reason: format!("{path}: empty body"),
                },
                exchange,
            )),
        }
    }

    async fn read_body(
        &self,
        mut response: reqwest::Response,
    ) -> Result<Vec<u8>, ControlPlaneError> {
        let limit = self.max_response_bytes;
        let too_large = ControlPlaneError::TooLarge {
            what: "etcd response",
            limit: limit as u64,
        };
        if response
            .content_length()
            .is_some_and(|length| length > limit as u64)
        {
            return Err(too_large);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| read_failed(&error))?
        {
            if body.len() + chunk.len() > limit {
                return Err(too_large);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

impl fmt::Debug for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gateway")
            .field("base", &self.base)
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

/// A request that failed before an answer arrived.
fn failed(path: &str, error: &reqwest::Error, exchange: Exchange) -> ControlPlaneError {
    if error.is_connect() {
        // Never sent: not even a decisive write can have applied.
        return ControlPlaneError::Transport(format!("connect to etcd failed: {}", chain(error)));
    }
    after_send(path, read_failed(error), exchange)
}

fn read_failed(error: &reqwest::Error) -> ControlPlaneError {
    if error.is_timeout() {
        ControlPlaneError::Timeout
    } else {
        ControlPlaneError::Transport(chain(error))
    }
}

/// A failure once the request may have reached etcd.
fn after_send(path: &str, error: ControlPlaneError, exchange: Exchange) -> ControlPlaneError {
    match exchange {
        Exchange::Plain => error,
        Exchange::Decisive(operation) => {
            tracing::debug!(path, %error, "etcd lease {operation}: outcome unknown");
            ControlPlaneError::OutcomeUnknown { operation }
        }
    }
}

/// A non-2xx answer. etcd answers a write it refused before proposing with
/// a 4xx; a 5xx or 408 (deadline, leader change, cancel) may follow a
/// proposal that still applies.
fn refused(path: &str, status: u16, body: &[u8], exchange: Exchange) -> ControlPlaneError {
    let error: GatewayError = serde_json::from_slice(body).unwrap_or_default();
    let message: String = error.message.chars().take(MAX_MESSAGE_CHARS).collect();
    tracing::debug!(
        path,
        status,
        code = error.code,
        message,
        "etcd refused a request"
    );
    if status >= 500 || status == 408 {
        return after_send(path, ControlPlaneError::Status { status }, exchange);
    }
    ControlPlaneError::Status { status }
}

/// The error and its sources, bounded.
fn chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text.chars().take(MAX_MESSAGE_CHARS).collect()
}
