//! [`HttpControlPlaneClient`]: the [`ControlPlane`] trait over the V1 JSON
//! protocol, through a bounded queue and one worker.
//!
//! Invariants:
//! - A call's retry cycle starts when the method is called — before its
//!   body is encoded and queued — so its budget includes the queue wait.
//! - A body is encoded once, into one `Bytes` every attempt shares.
//! - Lease acquire, renew and release make exactly one attempt, whatever
//!   the retry configuration; the other calls keep it.
//! - Invalid input (a lease time to live out of range) is refused before
//!   anything is queued.
//! - Every lease grant is checked against its request ([`crate::lease::answers`]);
//!   a mismatch is [`ControlPlaneError::Protocol`], never a held lease.
//! - A discovery answer naming another service or a node twice is
//!   [`ControlPlaneError::Protocol`].

use std::fmt;
use std::future::ready;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use tokio::time::Instant;

use crate::client::{BoxFuture, CallResult, ControlPlane};
use crate::error::ControlPlaneError;
use crate::lease::answers::{Expected, LeaseAnswers};
use crate::lease::{LeaseGrant, LeaseKey, LeaseRequest, LeaseState};
use crate::name::ServiceGroup;
use crate::presence::{PresenceKey, Registration};
use crate::retry::{RetryCycle, RetryPolicy};
use crate::transport::Endpoint;
use crate::transport::{HttpTransport, SharedHttpControlPlaneRequest};
use crate::v1::config::HttpClientConfig;
use crate::v1::exchange::{decode_json, Decode, Exchange};
use crate::v1::protocol::{Done, Instances, LeaseRead, Route};
use crate::v1::queue::{HttpWorker, RequestQueue};

/// A control-plane client speaking V1 JSON over an [`HttpTransport`].
///
/// ```no_run
/// use std::sync::Arc;
/// use provider_pools_control_plane::v1::{HttpClientConfig, HttpControlPlaneClient};
/// # fn transport() -> Arc<dyn provider_pools_control_plane::transport::HttpTransport> { todo!() }
///
/// # async fn example() -> Result<(), provider_pools_control_plane::ControlPlaneError> {
/// let (client, worker) = HttpControlPlaneClient::new(
///     HttpClientConfig::new("https://control-plane.example.net"),
///     transport(),
/// )?;
/// tokio::spawn(worker.run());
/// # let _ = client;
/// # Ok(())
/// # }
/// ```
pub struct HttpControlPlaneClient {
    base: Endpoint,
    policy: RetryPolicy,
    max_response_bytes: usize,
    queue: RequestQueue,
    answers: LeaseAnswers,
}

impl HttpControlPlaneClient {
    /// A client of `config.endpoint` through `transport`, and the worker
    /// that executes its calls: spawn [`HttpWorker::run`]. Calls made before
    /// the worker runs wait in the queue (their budgets running).
    ///
    /// # Errors
    ///
    /// `InsecureEndpoint` or `Invalid` (naming `endpoint`) for an endpoint
    /// that is not https, or plain http off loopback, or carries userinfo,
    /// or that the transport cannot reach (https on the std transport);
    /// `Invalid` naming `queue_capacity` or `max_response_bytes` out of
    /// bounds.
    pub fn new(
        config: HttpClientConfig,
        transport: Arc<dyn HttpTransport>,
    ) -> Result<(Self, HttpWorker), ControlPlaneError> {
        config.check()?;
        let base = Endpoint::parse(&config.endpoint)?;
        transport.check_endpoint(&base)?;
        let (queue, worker) = RequestQueue::new(config.queue_capacity, transport);
        let client = Self {
            base,
            policy: RetryPolicy::new(config.retry),
            max_response_bytes: config.max_response_bytes,
            queue,
            answers: LeaseAnswers::default(),
        };
        Ok((client, worker))
    }

    /// The bounded retry policy of the calls that retry.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.policy
    }

    /// Starts the call's cycle, encodes its body once and queues it.
    fn call<T: Send + 'static>(
        &self,
        route: Route,
        body: Option<&dyn ErasedBody>,
        decode: Decode<T>,
    ) -> BoxFuture<'_, CallResult<T>> {
        // The provider call: the budget starts here.
        let started = Instant::now();
        let policy = if route.is_lease_mutation() {
            self.policy.single_attempt()
        } else {
            self.policy
        };
        let cycle = RetryCycle::start(policy, started.into_std());
        let body = match body.map(ErasedBody::encode).transpose() {
            Ok(body) => body.unwrap_or_default(),
            Err(error) => return Box::pin(ready(Err(error))),
        };
        let request = SharedHttpControlPlaneRequest::new(
            route.method(),
            self.base.join(&route.path()),
            body,
            Instant::from_std(cycle.deadline()),
        );
        let exchange = Exchange::new(
            route.operation(),
            route.is_lease_mutation(),
            request,
            cycle,
            self.max_response_bytes,
        );
        match self.queue.submit(exchange, decode) {
            Ok(answer) => Box::pin(answer),
            Err(error) => Box::pin(ready(Err(error))),
        }
    }
}

/// A request body, encoded to JSON once.
trait ErasedBody {
    fn encode(&self) -> CallResult<Bytes>;
}

impl<B: Serialize> ErasedBody for B {
    fn encode(&self) -> CallResult<Bytes> {
        serde_json::to_vec(self)
            .map(Bytes::from)
            .map_err(|error| ControlPlaneError::invalid("body", error.to_string()))
    }
}

fn done(body: &[u8]) -> CallResult<()> {
    decode_json::<Done>(body).map(|_| ())
}

fn instances(body: &[u8]) -> CallResult<Vec<Registration>> {
    decode_json::<Instances>(body).map(|found| found.instances)
}

fn lease_read(body: &[u8]) -> CallResult<Option<LeaseState>> {
    decode_json::<LeaseRead>(body).map(|read| read.lease)
}

fn grant(body: &[u8]) -> CallResult<LeaseGrant> {
    let grant: LeaseGrant = decode_json(body)?;
    grant
        .check()
        .map_err(|error| ControlPlaneError::Protocol(format!("granted lease: {error}")))?;
    Ok(grant)
}

impl ControlPlane for HttpControlPlaneClient {
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>> {
        self.call(Route::Register, Some(&registration), done)
    }

    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.call(Route::Heartbeat, Some(&key), done)
    }

    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.call(Route::Deregister, Some(&key), done)
    }

    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        let answer = self.call(Route::Discover(service.clone()), None, instances);
        Box::pin(async move {
            let found = answer.await?;
            let mut nodes = std::collections::BTreeSet::new();
            for instance in &found {
                if instance.key().service != service {
                    return Err(ControlPlaneError::Protocol(format!(
                        "discovery of {} answered an instance of {}",
                        service.as_str(),
                        instance.key().service.as_str()
                    )));
                }
                if !nodes.insert(&instance.key().node) {
                    return Err(ControlPlaneError::Protocol(format!(
                        "discovery answered node {} twice",
                        instance.key().node.as_str()
                    )));
                }
            }
            Ok(found)
        })
    }

    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        if let Err(error) = request.check() {
            return Box::pin(ready(Err(error)));
        }
        let answer = self.call(Route::Acquire, Some(&request), grant);
        Box::pin(async move {
            let granted = answer.await?;
            self.answers
                .check(&Expected::acquisition(&request), granted)
        })
    }

    fn renew(&self, lease: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        if let Err(error) = lease.check() {
            return Box::pin(ready(Err(error)));
        }
        let answer = self.call(Route::Renew, Some(&lease), grant);
        Box::pin(async move {
            let renewed = answer.await?;
            self.answers.check(&Expected::renewal(&lease), renewed)
        })
    }

    fn release(&self, lease: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        if let Err(error) = lease.check() {
            return Box::pin(ready(Err(error)));
        }
        self.call(Route::Release, Some(&lease), done)
    }

    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        self.call(Route::ReadLease(key), None, lease_read)
    }
}

impl fmt::Debug for HttpControlPlaneClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpControlPlaneClient")
            .field("endpoint", &self.base.as_str())
            .field("policy", &self.policy)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("queue", &self.queue)
            .finish()
    }
}
