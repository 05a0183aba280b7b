//! The common path for the case most hosts start with: one HTTP provider
//! with one origin and a secret, called for tenants (feature `http`).
//!
//! [`HttpProvider::install`] installs the provider's first epoch and binds
//! the buffered HTTP adapter ([`adapters::http_origin::HttpService`]) to its
//! origin with the host's dispatch policy, given once;
//! [`HttpProvider::get`] and [`HttpProvider::send`] seal the tenant's plan
//! and go through fair admission, the policy, a pooled connection and a
//! buffered exchange; [`HttpProvider::rotate`] takes the new secret alone.
//! The expert path (`ProviderPools::install`, `admit`, `dispatch`,
//! `start`) stays available for everything else.
//!
//! Invariants:
//! - The secret is sent as the `authorization` header's value and never
//!   shown: it lives in the epoch's `Credential` only.
//! - A response's body ([`StagedBody`]) holds its charged bytes and the
//!   running request; dropping it releases every charge of the call.
//! - A rotation is `ProviderPools::rotate`: a call admitted on the old
//!   epoch finishes on it, calls that start after a rotation use the new
//!   one.
//!
//! [`adapters::http_origin::HttpService`]: crate::adapters::http_origin::HttpService

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http_body::Body;
use provider_pools_adapters::http_origin::{
    BodyLimits, HttpService, ServiceError, StagedBody, AUTH_HEADER_SETTING,
};
use tokio::time::Instant;
use tower_service::Service;

use crate::{
    Authority, Bytes, Credential, CredentialError, DispatchAuthority, Epoch, ExecutionPlan,
    IdentityError, InstallError, InstallReceipt, Installation, LedgerId, OriginKind, OriginSlot,
    ProviderConfig, ProviderId, ProviderPools, ServiceName, SessionId, TenantId,
};

/// The header the secret is sent in.
pub const SECRET_HEADER: &str = "authorization";

/// One HTTP provider on the common path: an origin, a secret, and the
/// host's dispatch policy. Cheap to clone; clones share the provider.
///
/// # Examples
///
/// The README's quick start is a complete, running example.
#[derive(Clone)]
pub struct HttpProvider {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("id", &self.inner.id)
            .field("epoch", &self.epoch())
            .finish_non_exhaustive()
    }
}

struct Inner {
    pools: ProviderPools,
    id: ProviderId,
    policy: Arc<dyn DispatchAuthority>,
    /// The service bound to the latest installed epoch's origin slot.
    service: Mutex<HttpService>,
    /// Numbers the sessions of the plans this provider seals.
    sessions: AtomicU64,
}

/// Why an [`HttpProvider`] could not be installed or rotated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpProviderError {
    /// The provider name or the origin is not a valid identity.
    #[error("invalid provider name or origin")]
    Identity(#[from] IdentityError),
    /// The secret is empty or too long.
    #[error("invalid secret")]
    Credential(#[from] CredentialError),
    /// The pools refused the installation.
    #[error("installation refused")]
    Install(#[from] InstallError),
    /// The installation answered no typed slot for the origin.
    #[error("the installation answered no slot for the origin")]
    NoSlot,
}

impl HttpProvider {
    /// Installs provider `name` with one approved `origin`
    /// (`http://host[:port]` or `https://host[:port]`) and `secret`, sent
    /// as the [`SECRET_HEADER`] of every request; calls are dispatched
    /// through `policy`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it completes may leave the provider
    /// installed without a handle (as `ProviderPools::install`).
    ///
    /// # Errors
    ///
    /// [`HttpProviderError::Identity`] for a bad name or origin,
    /// [`HttpProviderError::Credential`] for a bad secret, and
    /// [`HttpProviderError::Install`] when the pools refuse (the name is
    /// taken, the origin is not approved, no capacity).
    pub async fn install(
        pools: &ProviderPools,
        name: &str,
        origin: &str,
        secret: impl Into<Vec<u8>>,
        policy: Arc<dyn DispatchAuthority>,
    ) -> Result<Self, HttpProviderError> {
        let id = ProviderId::new(name)?;
        let authority = Authority::new(origin)?;
        let config = ProviderConfig::new(ServiceName::new(name)?)
            .with_origin(OriginSlot::new(0), OriginKind::Http, origin)
            .with_setting(AUTH_HEADER_SETTING, SECRET_HEADER);
        let credential = Credential::new(secret.into())?;
        let receipt = pools
            .install(Installation {
                provider: id.clone(),
                authority,
                expected: Epoch::ZERO,
                credential,
                config,
            })
            .await?;
        let service = bind(pools, &policy, &receipt)?;
        Ok(Self {
            inner: Arc::new(Inner {
                pools: pools.clone(),
                id,
                policy,
                service: Mutex::new(service),
                sessions: AtomicU64::new(0),
            }),
        })
    }

    /// The provider's id (what the policy allows tenants to call).
    pub fn id(&self) -> &ProviderId {
        &self.inner.id
    }

    /// The installed epoch: 1 after install, one more after each rotation
    /// (zero once the pools retired the provider).
    pub fn epoch(&self) -> Epoch {
        self.inner
            .pools
            .describe(&self.inner.id)
            .map_or(Epoch::ZERO, |d| d.epoch)
    }

    /// Sends `GET target` (an origin-form path and query, such as
    /// `/forecast?city=paris`) for `tenant`, waiting at most `timeout` in
    /// all: admission, dial and exchange. The response's body holds the
    /// call's charges until it is dropped.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future while it waits for admission leaves the queue;
    /// once the exchange started, dropping it destroys the connection and
    /// returns the running capacity.
    ///
    /// # Errors
    ///
    /// A [`ServiceError`]: refused or timed out in admission, denied by the
    /// policy (`code()` says which), a bad target, or a failed exchange.
    pub async fn get(
        &self,
        tenant: &TenantId,
        target: &str,
        timeout: Duration,
    ) -> Result<http::Response<StagedBody>, ServiceError> {
        let request = http::Request::get(target)
            .body(http_body_util::Empty::<Bytes>::new())
            .map_err(|e| ServiceError::Target(e.to_string()))?;
        self.send(tenant, request, timeout).await
    }

    /// Sends `request` (its URI an origin-form path and query) for
    /// `tenant`, waiting at most `timeout` in all. The request body is read
    /// within [`BodyLimits::default`]'s bound before admission.
    ///
    /// # Cancel safety
    ///
    /// As [`HttpProvider::get`].
    ///
    /// # Errors
    ///
    /// As [`HttpProvider::get`].
    pub async fn send<B>(
        &self,
        tenant: &TenantId,
        mut request: http::Request<B>,
        timeout: Duration,
    ) -> Result<http::Response<StagedBody>, ServiceError>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let deadline = Instant::now() + timeout;
        let session = SessionId::new(self.inner.sessions.fetch_add(1, Ordering::Relaxed) + 1);
        let plan = ExecutionPlan::seal(
            tenant.clone(),
            session,
            LedgerId::new(0),
            deadline,
            deadline,
        );
        request.extensions_mut().insert(plan);
        let mut service = self.service();
        service.call(request).await
    }

    /// Rotates the secret: installs the next epoch with the same origin
    /// and `secret` ([`ProviderPools::rotate`]). Calls already admitted
    /// finish on the old epoch, which is retired once they are done.
    ///
    /// # Cancel safety
    ///
    /// Once queued, the rotation completes or is refused whatever happens
    /// to the future; calls go on working either way.
    ///
    /// # Errors
    ///
    /// [`HttpProviderError::Credential`] for a bad secret and
    /// [`HttpProviderError::Install`] when the pools refuse (no room for
    /// both epochs, a concurrent rotation, closed).
    pub async fn rotate(&self, secret: impl Into<Vec<u8>>) -> Result<Epoch, HttpProviderError> {
        let credential = Credential::new(secret.into())?;
        let receipt = self.inner.pools.rotate(&self.inner.id, credential).await?;
        let service = bind(&self.inner.pools, &self.inner.policy, &receipt)?;
        *self
            .inner
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = service;
        Ok(receipt.epoch)
    }

    fn service(&self) -> HttpService {
        self.inner
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The service bound to the origin slot of `receipt`'s epoch.
fn bind(
    pools: &ProviderPools,
    policy: &Arc<dyn DispatchAuthority>,
    receipt: &InstallReceipt,
) -> Result<HttpService, HttpProviderError> {
    let slot = receipt
        .slot(OriginSlot::new(0))
        .ok_or(HttpProviderError::NoSlot)?;
    Ok(HttpService::new(
        pools,
        &receipt.provider,
        slot,
        Arc::clone(policy),
        BodyLimits::default(),
    ))
}
