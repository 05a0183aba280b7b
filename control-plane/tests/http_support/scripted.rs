//! [`ScriptedTransport`]: answers from a script, recording every call, for
//! tests under tokio's paused clock.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};
use std::time::Duration;

use bytes::Bytes;
use provider_pools_control_plane::retry::RetryConfig;
use provider_pools_control_plane::transport::{
    HttpControlPlaneRequest, HttpResponse, HttpTransport, SharedHttpControlPlaneRequest,
    TransportError,
};
use provider_pools_control_plane::v1::HttpClientConfig;
use provider_pools_control_plane::BoxFuture;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The body of a discovery that found nobody.
pub const NONE_FOUND: &str = r#"{"instances":[]}"#;

/// A configuration for a scripted transport (the endpoint is never
/// dialled).
pub fn config(attempts: u32, timeout_ms: u64, initial_ms: u64, max_ms: u64) -> HttpClientConfig {
    HttpClientConfig {
        retry: RetryConfig {
            max_attempts: attempts,
            attempt_timeout_ms: timeout_ms,
            initial_backoff_ms: initial_ms,
            max_backoff_ms: max_ms,
        },
        ..HttpClientConfig::new("http://127.0.0.1:1")
    }
}

/// One scripted answer.
#[derive(Clone)]
pub enum Reply {
    /// Answers this status and body at once.
    Status(u16, &'static str),
    /// Fails at once.
    Fail(TransportError),
    /// Never answers: the attempt runs into its deadline.
    Hang,
    /// A synchronous transport stuck for this long (the clock moves on
    /// while it is polled), then answering this status and body.
    Stuck(Duration, u16, &'static str),
    /// Waits until notified, then answers this status and body.
    Gate(Arc<Notify>, u16, &'static str),
}

/// One call the transport saw.
#[derive(Debug, Clone)]
pub struct Seen {
    /// When the call reached the transport.
    pub at: Instant,
    /// The URL.
    pub url: String,
    /// The body's address: the same allocation on every attempt.
    pub body_ptr: usize,
    /// The body's length.
    pub body_len: usize,
    /// The attempt's deadline.
    pub deadline: Instant,
}

pub struct ScriptedTransport {
    script: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
}

impl ScriptedTransport {
    pub fn new(script: impl IntoIterator<Item = Reply>) -> Arc<Self> {
        Arc::new(Self {
            script: Mutex::new(script.into_iter().collect()),
            seen: Mutex::new(Vec::new()),
        })
    }

    /// Every call so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }

    /// Calls whose URL ends with `suffix`.
    pub fn calls_to(&self, suffix: &str) -> usize {
        self.seen()
            .iter()
            .filter(|seen| seen.url.ends_with(suffix))
            .count()
    }
}

impl fmt::Debug for ScriptedTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedTransport").finish_non_exhaustive()
    }
}

fn answer(status: u16, body: &'static str) -> Result<HttpResponse, TransportError> {
    Ok(HttpResponse {
        status,
        body: Bytes::from_static(body.as_bytes()),
    })
}

/// Moves the paused clock by `by` without yielding, as a transport that
/// blocks its thread would let time pass.
fn block_for(by: Duration) {
    let mut advance = pin!(tokio::time::advance(by));
    let _ = advance
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()));
}

impl HttpTransport for ScriptedTransport {
    fn send(
        &self,
        _: HttpControlPlaneRequest,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        Box::pin(async { Err(TransportError::Io("only send_shared is scripted".into())) })
    }

    fn send_shared<'a>(
        &'a self,
        request: &'a SharedHttpControlPlaneRequest,
    ) -> BoxFuture<'a, Result<HttpResponse, TransportError>> {
        self.seen.lock().expect("log").push(Seen {
            at: Instant::now(),
            url: request.url().to_owned(),
            body_ptr: request.body().as_ptr() as usize,
            body_len: request.body().len(),
            deadline: request.deadline(),
        });
        let reply = self
            .script
            .lock()
            .expect("script")
            .pop_front()
            .unwrap_or(Reply::Status(418, "script exhausted"));
        Box::pin(async move {
            match reply {
                Reply::Status(status, body) => answer(status, body),
                Reply::Fail(error) => Err(error),
                Reply::Hang => std::future::pending().await,
                Reply::Stuck(by, status, body) => {
                    block_for(by);
                    answer(status, body)
                }
                Reply::Gate(gate, status, body) => {
                    gate.notified().await;
                    answer(status, body)
                }
            }
        })
    }
}
