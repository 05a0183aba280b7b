//! [`AdmissionLayer`]: fair admission, per tenant, for the calls of any
//! inner tower service (a hyper-util or tonic client, a tower-http stack).
//!
//! Each call takes the tenant and the deadline from the request's
//! [`ExecutionPlan`] extension, waits its turn in the pools' fair queue
//! for the bound provider, and only then calls the inner service. The
//! running request is held for the call's whole life: until the response
//! *and its body* are dropped ([`HeldBody`]).
//!
//! What it owns, and what it does not:
//! - It owns the **running capacity**: the provider's, the tenant's and the
//!   registry's running ceilings, fairness between tenants, the pending
//!   bounds, the queue age, the plan's deadline until the response head.
//! - It does **not** own the inner service's connections, sockets, TLS,
//!   retries or body sizes: those stay the inner client's, unbounded by
//!   the pools' connection limits and uncounted in their snapshots. For
//!   owned, bounded connections use [`HttpService`](crate::http_origin::HttpService).
//!
//! Invariants:
//! - A request without a plan is refused before anything is charged.
//! - The inner service is called only after the grant, and at most once
//!   per call; its readiness (`poll_ready`) is claimed before admission
//!   waits (the ready clone is the one called, tower's usual rule).
//! - If the inner service has not answered the head by the plan's
//!   deadline, the call fails `Timeout` and the running request is
//!   released.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use provider_pools_actors::{
    DispatchAuthority, OriginKind, ProviderId, ProviderPools, RunningRequest, TypedSlot,
};

use crate::http_origin::admitted::{plan_of, Binding, ServiceError};

/// Admits every call of the services it wraps.
///
/// ```
/// # use std::time::Duration;
/// # use provider_pools_actors::{
/// #     Authority, BrokerGeneration, Credential, Epoch, ExecutionPlan, Installation, LedgerId,
/// #     OriginSlot, PoolsConfig, ProviderConfig, ProviderId, ProviderPools, ServiceName,
/// #     SessionId, TenantId,
/// # };
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
/// # let pools = ProviderPools::start(config).await?;
/// # let origin = "https://api.weather.example";
/// # let receipt = pools.install(Installation {
/// #     provider: ProviderId::new("weather")?,
/// #     authority: Authority::new(origin)?,
/// #     expected: Epoch::ZERO,
/// #     credential: Credential::new(b"token".to_vec())?,
/// #     config: ProviderConfig::new(ServiceName::new("weather")?)
/// #         .with_origin(OriginSlot::new(0), OriginKind::Http, origin),
/// # }).await?;
/// # let tenant = TenantId::new("acme")?;
/// # let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
/// # let plan = ExecutionPlan::seal(tenant.clone(), SessionId::new(1), LedgerId::new(1), deadline, deadline);
/// use std::convert::Infallible;
/// use std::sync::Arc;
/// use provider_pools_actors::{OriginKind, PolicyTable};
/// use provider_pools_adapters::http_origin::AdmissionLayer;
/// use tower::{service_fn, ServiceExt};
/// use tower_layer::Layer;
///
/// // The host's policy, given once: `tenant` may call this provider.
/// let policy = Arc::new(PolicyTable::new());
/// policy.allow(tenant, receipt.provider.clone());
/// let layer = AdmissionLayer::new(&pools, &receipt.provider, receipt.slots[0], OriginKind::Http, policy);
/// // Any tower client works as the inner service (hyper-util's, reqwest's
/// // through a tower adapter); this one answers at once.
/// let client = service_fn(|_: http::Request<String>| async {
///     Ok::<_, Infallible>(http::Response::new(String::from("sunny")))
/// });
/// let mut request = http::Request::get("/forecast").body(String::new())?;
/// request.extensions_mut().insert(plan); // the tenant and the deadline
/// let response = layer.layer(client).oneshot(request).await?;
/// assert_eq!(response.status(), 200);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct AdmissionLayer {
    binding: Arc<Binding>,
}

impl AdmissionLayer {
    /// Calls are admitted for `slot` of `provider` (whose running ceilings
    /// and fair queue apply), as `authority` allows.
    pub fn new(
        pools: &ProviderPools,
        provider: &ProviderId,
        slot: TypedSlot,
        kind: OriginKind,
        authority: Arc<dyn DispatchAuthority>,
    ) -> Self {
        Self {
            binding: Binding::new(pools, provider, slot, kind, authority),
        }
    }
}

impl<S> tower_layer::Layer<S> for AdmissionLayer {
    type Service = Admitted<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Admitted {
            inner,
            binding: Arc::clone(&self.binding),
        }
    }
}

/// An inner service whose calls are admitted first.
#[derive(Clone, Debug)]
pub struct Admitted<S> {
    inner: S,
    binding: Arc<Binding>,
}

type Answer<R, E> = Result<http::Response<HeldBody<R>>, ServiceError<E>>;

impl<S, B, R> tower_service::Service<http::Request<B>> for Admitted<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<R>>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
    S::Error: Send,
    B: Send + 'static,
    R: Body + Send + 'static,
{
    type Response = http::Response<HeldBody<R>>;
    type Error = ServiceError<S::Error>;
    type Future = Pin<Box<dyn Future<Output = Answer<R, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ServiceError::Inner)
    }

    /// # Cancel safety
    ///
    /// Dropping the future while it waits for admission leaves the queue
    /// and never calls the inner service; dropping it later drops the
    /// inner call's future and returns the running capacity.
    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        // The ready service is the one to call; a clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let binding = Arc::clone(&self.binding);
        Box::pin(async move {
            let plan = plan_of(&request)?;
            let running = binding.run(plan, Bytes::new()).await?;
            let deadline = running.deadline();
            let response = tokio::time::timeout_at(deadline, inner.call(request))
                .await
                .map_err(|_| ServiceError::Timeout)?
                .map_err(ServiceError::Inner)?;
            Ok(response.map(|body| HeldBody {
                body: Box::pin(body),
                _running: running,
            }))
        })
    }
}

/// The inner response body, with the running request it belongs to: the
/// capacity returns when this body is dropped (read to its end or not).
pub struct HeldBody<R> {
    body: Pin<Box<R>>,
    _running: RunningRequest,
}

impl<R> std::fmt::Debug for HeldBody<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldBody").finish_non_exhaustive()
    }
}

impl<R: Body> Body for HeldBody<R> {
    type Data = R::Data;
    type Error = R::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<R::Data>, R::Error>>> {
        self.body.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
