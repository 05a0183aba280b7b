//! [`HttpService`]: the buffered HTTP adapter as a
//! `tower::Service<http::Request<B>>` bound to one provider, so tower's
//! and tower-http's layers (tracing, set-header, timeouts) wrap it.
//!
//! Each call takes the tenant and the deadline from the request's
//! [`ExecutionPlan`] extension, is admitted fairly per tenant, runs one
//! buffered exchange on a connection the pools own
//! ([`call`](crate::http_origin::call)), and answers a response whose body
//! ([`StagedBody`]) holds the charged bytes and the running request until
//! it is dropped.
//!
//! Invariants:
//! - `poll_ready` is always ready: backpressure is admission's (pending
//!   bounds refuse at once; the fair queue makes a call wait).
//! - The request body is read under the binding's `max_request` before
//!   anything is admitted, and staged as the call's input (charged while
//!   it waits).
//! - Nothing of the exchange is retried; every status passes through.
//!   The service marks requests of idempotent methods (`GET`, `HEAD`,
//!   `PUT`, `DELETE`, `OPTIONS`, `TRACE`) replayable, its documented
//!   default: such a request a reused connection lost before any byte of
//!   an answer is delivered again, once, on a dialed connection (decision
//!   record 0080); others fail as maybe sent.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, Limited};
use provider_pools_actors::{
    DispatchAuthority, OriginKind, ProviderId, ProviderPools, StagedOutput, TypedSlot,
};

use crate::http_origin::admitted::{plan_of, Binding, ServiceError};
use crate::http_origin::dialer::HttpDialer;
use crate::http_origin::exchange::{BodyLimits, HttpRequest};
use crate::http_origin::origin::RequestTarget;

/// The buffered HTTP adapter of one provider's origin slot, as a tower
/// service. Cheap to clone.
///
/// ```
/// # use std::time::Duration;
/// # use provider_pools_actors::{
/// #     Authority, BrokerGeneration, Credential, Epoch, ExecutionPlan, Installation, LedgerId,
/// #     OriginKind, OriginSlot, PoolsConfig, ProviderConfig, ProviderId, ProviderPools,
/// #     ServiceName, SessionId, TenantId,
/// # };
/// # use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # // A loopback origin answering every request with 200 "sunny".
/// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// # let origin = format!("http://{}", listener.local_addr()?);
/// # tokio::spawn(async move {
/// #     while let Ok((mut socket, _)) = listener.accept().await {
/// #         tokio::spawn(async move {
/// #             let mut buffer = [0u8; 4096];
/// #             while matches!(socket.read(&mut buffer).await, Ok(n) if n > 0) {
/// #                 let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nsunny";
/// #                 if socket.write_all(answer).await.is_err() { break; }
/// #             }
/// #         });
/// #     }
/// # });
/// # let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
/// # let pools = ProviderPools::start(config).await?;
/// # let receipt = pools.install(Installation {
/// #     provider: ProviderId::new("weather")?,
/// #     authority: Authority::new(&origin)?,
/// #     expected: Epoch::ZERO,
/// #     credential: Credential::new(b"token".to_vec())?,
/// #     config: ProviderConfig::new(ServiceName::new("weather")?)
/// #         .with_origin(OriginSlot::new(0), OriginKind::Http, origin.as_str()),
/// # }).await?;
/// # let tenant = TenantId::new("acme")?;
/// # let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
/// # let plan = ExecutionPlan::seal(tenant.clone(), SessionId::new(1), LedgerId::new(1), deadline, deadline);
/// use std::sync::Arc;
/// use provider_pools_actors::PolicyTable;
/// use provider_pools_adapters::http_origin::{BodyLimits, HttpService};
/// use tower_service::Service;
///
/// // The host's policy, given once: `tenant` may call this provider.
/// let policy = Arc::new(PolicyTable::new());
/// policy.allow(tenant, receipt.provider.clone());
/// let mut service = HttpService::new(&pools, &receipt.provider, receipt.slots[0], policy, BodyLimits::default());
/// let body = http_body_util::Empty::<bytes::Bytes>::new();
/// let mut request = http::Request::get("/forecast?city=paris").body(body)?;
/// request.extensions_mut().insert(plan); // the tenant and the deadline
/// let response = service.call(request).await?;
/// assert!(response.status().is_success());
/// assert_eq!(response.body().bytes().as_ref(), b"sunny");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct HttpService {
    binding: Arc<Binding>,
    dialer: HttpDialer,
    limits: BodyLimits,
}

impl HttpService {
    /// Calls go to `slot` of `provider`, as `authority` allows, with
    /// `limits` on both bodies.
    pub fn new(
        pools: &ProviderPools,
        provider: &ProviderId,
        slot: TypedSlot,
        authority: Arc<dyn DispatchAuthority>,
        limits: BodyLimits,
    ) -> Self {
        Self {
            binding: Binding::new(pools, provider, slot, OriginKind::Http, authority),
            dialer: HttpDialer::new(pools.clone()),
            limits,
        }
    }
}

type Answer = Result<http::Response<StagedBody>, ServiceError>;

impl<B> tower_service::Service<http::Request<B>> for HttpService
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = http::Response<StagedBody>;
    type Error = ServiceError;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    /// # Cancel safety
    ///
    /// Dropping the future while it waits for admission leaves the queue;
    /// once the exchange started, dropping it destroys the connection
    /// (the buffered adapter's rule) and returns the running capacity.
    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let service = self.clone();
        Box::pin(async move {
            let plan = plan_of(&request)?;
            let (parts, body) = request.into_parts();
            let target = parts
                .uri
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_owned();
            let target =
                RequestTarget::parse(&target).map_err(|e| ServiceError::Target(e.to_string()))?;
            let body = Limited::new(body, service.limits.max_request)
                .collect()
                .await
                .map_err(|e| ServiceError::Body(e.to_string()))?
                .to_bytes();
            let running = service.binding.run(plan, body.clone()).await?;
            let request = HttpRequest {
                // The mark is the service's default for idempotent methods:
                // the body is held whole.
                replayable: parts.method.is_idempotent(),
                method: parts.method,
                target,
                headers: parts.headers,
                body,
            };
            let response = crate::http_origin::call(
                &service.binding.pools,
                &running,
                &service.dialer,
                request,
                service.limits,
            )
            .await
            .map_err(ServiceError::Http)?;
            let mut answer = http::Response::new(StagedBody::new(response.body));
            *answer.status_mut() = response.status;
            *answer.headers_mut() = response.headers;
            Ok(answer)
        })
    }
}

/// A buffered response body: the charged bytes, yielded once, and the
/// running request they belong to, both held until the body is dropped.
#[derive(Debug)]
pub struct StagedBody {
    output: StagedOutput,
    sent: bool,
}

impl StagedBody {
    fn new(output: StagedOutput) -> Self {
        Self {
            output,
            sent: false,
        }
    }

    /// The whole body, read without consuming it (its charge is held until
    /// the body is dropped).
    pub fn bytes(&self) -> &Bytes {
        self.output.bytes()
    }
}

impl Body for StagedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.sent || self.output.bytes().is_empty() {
            self.sent = true;
            return Poll::Ready(None);
        }
        self.sent = true;
        Poll::Ready(Some(Ok(Frame::data(self.output.bytes().clone()))))
    }

    fn is_end_stream(&self) -> bool {
        self.sent || self.output.bytes().is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        let left = if self.sent {
            0
        } else {
            self.output.bytes().len()
        };
        SizeHint::with_exact(left as u64)
    }
}
