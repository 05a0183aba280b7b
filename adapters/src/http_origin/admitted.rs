//! What the tower service and the admission layer share: the call's plan
//! taken from the request, admission through dispatch to a running
//! request, and the typed error.
//!
//! Invariants:
//! - A request without an [`ExecutionPlan`] extension is refused before
//!   anything is charged: the tenant and the deadline come only from it.
//! - Admission, dispatch and start run in that order; a failure at any
//!   step leaves nothing held (each step's guard is dropped).

use std::sync::Arc;

use bytes::Bytes;
use provider_pools_actors::{
    AdmitError, AdmitRequest, DispatchAuthority, ExecutionPlan, OriginKind, ProviderId,
    ProviderPools, RunningRequest, TypedSlot,
};

use crate::http_origin::error::HttpError;

/// A call through [`HttpService`](crate::http_origin::HttpService) or
/// [`AdmissionLayer`](crate::http_origin::AdmissionLayer) that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError<E = std::convert::Infallible> {
    /// The request carries no [`ExecutionPlan`] extension.
    #[error("the request carries no ExecutionPlan extension")]
    MissingPlan,
    /// Not admitted, not dispatched, or not started.
    #[error("not admitted")]
    Admission(#[from] AdmitError),
    /// The request's target is not an origin-form path and query.
    #[error("request target: {0}")]
    Target(String),
    /// The request body could not be read within its bound.
    #[error("request body: {0}")]
    Body(String),
    /// The buffered exchange failed.
    #[error("the http exchange failed")]
    Http(#[source] HttpError),
    /// The inner service did not answer before the request's deadline.
    #[error("the inner service did not answer before the request's deadline")]
    Timeout,
    /// The inner service failed.
    #[error("the inner service failed")]
    Inner(#[source] E),
}

impl<E> ServiceError<E> {
    /// A stable code: the admission's own, `missing_plan`, `target`,
    /// `body`, the HTTP error's, `timeout` or `inner`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MissingPlan => "missing_plan",
            Self::Admission(error) => error.code(),
            Self::Target(_) => "target",
            Self::Body(_) => "body",
            Self::Http(error) => error.code(),
            Self::Timeout => "timeout",
            Self::Inner(_) => "inner",
        }
    }
}

/// Where admitted calls go: a provider's origin slot, and who may call it.
#[derive(Clone)]
pub(crate) struct Binding {
    pub(crate) pools: ProviderPools,
    pub(crate) provider: ProviderId,
    pub(crate) slot: TypedSlot,
    pub(crate) kind: OriginKind,
    pub(crate) authority: Arc<dyn DispatchAuthority>,
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Binding")
            .field("provider", &self.provider)
            .field("slot", &self.slot)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Binding {
    /// Calls to `slot` of `provider`, a `kind` origin, as `authority` allows.
    pub(crate) fn new(
        pools: &ProviderPools,
        provider: &ProviderId,
        slot: TypedSlot,
        kind: OriginKind,
        authority: Arc<dyn DispatchAuthority>,
    ) -> Arc<Self> {
        Arc::new(Self {
            pools: pools.clone(),
            provider: provider.clone(),
            slot,
            kind,
            authority,
        })
    }

    /// Admits, dispatches and starts one call of `plan`, `input` staged
    /// as its input.
    pub(crate) async fn run<E>(
        &self,
        plan: ExecutionPlan,
        input: Bytes,
    ) -> Result<RunningRequest, ServiceError<E>> {
        let input = self.pools.stage_input(&plan, input)?;
        let ready = self
            .pools
            .admit(AdmitRequest {
                plan: plan.clone(),
                provider: self.provider.clone(),
                slot: self.slot,
                kind: self.kind,
                input,
            })
            .await?;
        let call = self
            .pools
            .dispatch(self.authority.as_ref(), &plan, &self.provider)?;
        Ok(ready.start(call)?)
    }
}

/// The plan of `request`, from its extensions.
pub(crate) fn plan_of<B, E>(request: &http::Request<B>) -> Result<ExecutionPlan, ServiceError<E>> {
    request
        .extensions()
        .get::<ExecutionPlan>()
        .cloned()
        .ok_or(ServiceError::MissingPlan)
}
