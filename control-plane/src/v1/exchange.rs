//! [`Exchange`]: one call's attempts and waits on the transport, within
//! its retry cycle, and the decoding of its answer.
//!
//! Invariants:
//! - Every attempt shares the one encoded body ([`SharedHttpControlPlaneRequest::with_deadline`]).
//! - An attempt's deadline is its timeout clamped to the cycle's deadline;
//!   the transport future is dropped at that deadline.
//! - No attempt starts after the cycle's deadline: work that expired while
//!   queued answers `Timeout` without reaching the transport.
//! - An answer that arrives after its attempt's deadline is a timeout,
//!   whatever it reports, and no other attempt follows.
//! - Only 408, 429, 500, 502, 503, 504, transport and timeout failures are
//!   retried, after the cycle's jittered wait; everything else returns.
//! - A lease mutation makes one attempt. When it may have applied without a
//!   usable answer (a timeout, a failure after sending, a transient status,
//!   an undecodable success) it answers `OutcomeUnknown`: it is settled by
//!   reading the lease back, never by replaying it.

use serde::de::DeserializeOwned;
use tokio::time::Instant;

use crate::client::CallResult;
use crate::error::ControlPlaneError;
use crate::retry::{Failure, RetryCycle, Step};
use crate::transport::{
    HttpResponse, HttpTransport, SharedHttpControlPlaneRequest, TransportError,
};
use crate::v1::protocol::ErrorEnvelope;

/// Turns a success body into the call's answer.
pub(crate) type Decode<T> = fn(&[u8]) -> CallResult<T>;

/// Decodes a JSON success body: malformed JSON is `Corrupt`, a body of
/// the wrong shape `Protocol`.
pub(crate) fn decode_json<T: DeserializeOwned>(body: &[u8]) -> CallResult<T> {
    serde_json::from_slice(body).map_err(|error| match error.classify() {
        serde_json::error::Category::Data => {
            ControlPlaneError::Protocol(format!("unexpected response: {error}"))
        }
        _ => ControlPlaneError::Corrupt {
            what: "response",
            reason: error.to_string(),
        },
    })
}

/// One call, ready for the worker.
pub(crate) struct Exchange {
    operation: &'static str,
    lease_mutation: bool,
    request: SharedHttpControlPlaneRequest,
    cycle: RetryCycle,
    max_response_bytes: usize,
}

/// How one attempt ended.
enum Attempt<T> {
    /// The call's answer: a success, or a failure no retry can change.
    Done(CallResult<T>),
    /// A failure: `ambiguous` when a lease mutation may have applied.
    Failed {
        failure: Failure,
        error: ControlPlaneError,
        ambiguous: bool,
    },
}

impl Exchange {
    /// A call of `operation` whose cycle already started (at the provider
    /// call).
    pub(crate) fn new(
        operation: &'static str,
        lease_mutation: bool,
        request: SharedHttpControlPlaneRequest,
        cycle: RetryCycle,
        max_response_bytes: usize,
    ) -> Self {
        Self {
            operation,
            lease_mutation,
            request,
            cycle,
            max_response_bytes,
        }
    }

    /// Runs the attempts and decodes the answer.
    pub(crate) async fn execute<T>(
        mut self,
        transport: &dyn HttpTransport,
        decode: Decode<T>,
    ) -> CallResult<T> {
        loop {
            let Some(deadline) = self.cycle.begin_attempt(Instant::now().into_std()) else {
                // The budget ran out before this attempt could start.
                return Err(ControlPlaneError::Timeout);
            };
            let deadline = Instant::from_std(deadline);
            let request = self.request.with_deadline(deadline);
            let answer = tokio::time::timeout_at(deadline, transport.send_shared(&request)).await;
            let answered = Instant::now();
            let attempt = match answer {
                Err(_elapsed) => Attempt::Failed {
                    failure: Failure::Timeout,
                    error: ControlPlaneError::Timeout,
                    ambiguous: true,
                },
                // A late answer, whatever it says: the operation may have
                // applied, so no attempt follows. A transport's own timeout
                // (or any failure) at the attempt deadline is not an answer:
                // it is a failed attempt, retried within the cycle budget.
                Ok(Ok(_))
                    if self
                        .cycle
                        .is_overdue(deadline.into_std(), answered.into_std()) =>
                {
                    return Err(self.ambiguous(ControlPlaneError::Timeout));
                }
                Ok(Ok(response)) => self.classify_response(&response, decode),
                Ok(Err(error)) => classify_transport(error),
            };
            let (failure, error, ambiguous) = match attempt {
                Attempt::Done(result) => return result,
                Attempt::Failed {
                    failure,
                    error,
                    ambiguous,
                } => (failure, error, ambiguous),
            };
            if self.lease_mutation {
                return Err(if ambiguous {
                    self.ambiguous(error)
                } else {
                    error
                });
            }
            match self.cycle.after_failure(failure, answered.into_std()) {
                Step::Retry { after } => {
                    tracing::debug!(
                        operation = self.operation,
                        %error,
                        wait_ms = after.as_millis() as u64,
                        "control plane call retries"
                    );
                    tokio::time::sleep(after).await;
                }
                Step::GiveUp => return Err(error),
            }
        }
    }

    /// `error`, or an unknown outcome when this is a lease mutation.
    fn ambiguous(&self, error: ControlPlaneError) -> ControlPlaneError {
        if self.lease_mutation {
            ControlPlaneError::OutcomeUnknown {
                operation: self.operation,
            }
        } else {
            error
        }
    }

    fn classify_response<T>(&self, response: &HttpResponse, decode: Decode<T>) -> Attempt<T> {
        if response.body.len() > self.max_response_bytes {
            return Attempt::Failed {
                failure: Failure::Semantic,
                error: ControlPlaneError::TooLarge {
                    what: "response",
                    limit: self.max_response_bytes as u64,
                },
                ambiguous: true,
            };
        }
        if (200..300).contains(&response.status) {
            return match decode(&response.body) {
                Ok(value) => Attempt::Done(Ok(value)),
                Err(error) => Attempt::Failed {
                    failure: Failure::Semantic,
                    error,
                    ambiguous: true,
                },
            };
        }
        let failure = Failure::Status(response.status);
        let error = serde_json::from_slice::<ErrorEnvelope>(&response.body)
            .ok()
            .and_then(|envelope| envelope.error.into_error().ok())
            .unwrap_or(ControlPlaneError::Status {
                status: response.status,
            });
        Attempt::Failed {
            failure,
            error,
            // A transient status may come from a proxy after the server
            // applied the mutation; a refusal is definitive.
            ambiguous: failure.is_retryable(),
        }
    }
}

fn classify_transport<T>(error: TransportError) -> Attempt<T> {
    let (failure, error, ambiguous) = match error {
        TransportError::Connect(reason) => (
            Failure::Transport,
            ControlPlaneError::Transport(format!("connect failed: {reason}")),
            false,
        ),
        TransportError::Timeout => (Failure::Timeout, ControlPlaneError::Timeout, true),
        TransportError::TooLarge { limit } => (
            Failure::Semantic,
            ControlPlaneError::TooLarge {
                what: "response",
                limit: limit as u64,
            },
            true,
        ),
        TransportError::Malformed(reason) => (
            Failure::Transport,
            ControlPlaneError::Protocol(format!("malformed response: {reason}")),
            true,
        ),
        other => (
            Failure::Transport,
            ControlPlaneError::Transport(other.to_string()),
            true,
        ),
    };
    Attempt::Failed {
        failure,
        error,
        ambiguous,
    }
}
