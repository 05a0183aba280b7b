//! The admission path: staging input, queueing, granting, dispatching.

use std::future::Future;

use bytes::Bytes;

use crate::admission::{AdmitError, AdmitRequest, PoolReady, StagedInput};
use crate::dispatch::{DispatchAuthority, ProviderCall};
use crate::epoch::ClientLease;
use crate::identity::ProviderId;
use crate::observe::{spans, AdmitWatch};
use crate::plan::ExecutionPlan;
use crate::provider_pools::admit_future::Admitting;
use crate::provider_pools::ProviderPools;

impl ProviderPools {
    /// Charges `bytes` as a request's input to `plan`'s tenant: its metadata
    /// share first, then the node's metadata budget.
    ///
    /// The charge stays with the returned buffer and every clone of it:
    /// cancelling a request that carried it refunds nothing still held.
    ///
    /// # Errors
    ///
    /// [`AdmitError::Capacity`] naming `metadata_per_tenant` when the
    /// tenant's share has no room (nothing shared was taken), or
    /// `metadata_bytes` when the node's budget has none.
    pub fn stage_input(
        &self,
        plan: &ExecutionPlan,
        bytes: Bytes,
    ) -> Result<StagedInput, AdmitError> {
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        let accounts = &self.inner.accounts;
        let charge = accounts
            .tenants
            .charge_metadata(plan.tenant(), &accounts.metadata, len)?;
        Ok(StagedInput::new(bytes, charge, plan.tenant().clone()))
    }

    /// Queues a request for capacity on its provider and waits for its turn.
    ///
    /// Before anything is queued the request's metadata is charged and its
    /// client leased (re-leased on the provider's current epoch at the grant
    /// if a rotation retired that epoch meanwhile: the request keeps its
    /// place); the scheduler refuses at once when the pending bound
    /// (total, the tenant's, or the provider's) is reached. The wait ends at
    /// the request's deadline: the queue age in force now, narrowed by the
    /// plan's Store and I/O deadlines. The granted [`PoolReady`] keeps that
    /// deadline.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future removes the waiter and refunds its queue slot and
    /// request charge; a grant that raced the drop is returned at once. The
    /// staged input's charge stays with whoever still holds the input.
    ///
    /// # Errors
    ///
    /// [`AdmitError::Capacity`] (naming the bound), [`AdmitError::Busy`],
    /// [`AdmitError::RateLimited`] at once when a request rate cannot grant
    /// it before its deadline, [`AdmitError::Timeout`],
    /// [`AdmitError::Closed`], [`AdmitError::Unavailable`] and
    /// [`AdmitError::Slot`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use provider_pools_actors::{
    ///     AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, Epoch, ExecutionPlan,
    ///     Installation, LedgerId, OriginKind, OriginSlot, PolicyTable, PoolsConfig,
    ///     ProviderConfig, ProviderId, ProviderPools, ServiceName, SessionId, TenantId,
    /// };
    /// use tokio::time::Instant;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    /// let provider = ProviderId::new("weather")?;
    /// let receipt = pools
    ///     .install(Installation {
    ///         provider: provider.clone(),
    ///         authority: Authority::new("https://api.weather.example")?,
    ///         expected: Epoch::ZERO,
    ///         credential: Credential::new(b"token".to_vec())?,
    ///         config: ProviderConfig::new(ServiceName::new("weather/v1")?).with_origin(
    ///             OriginSlot::new(0),
    ///             OriginKind::Http,
    ///             "https://api.weather.example:443",
    ///         ),
    ///     })
    ///     .await?;
    ///
    /// let tenant = TenantId::new("acme")?;
    /// let deadline = Instant::now() + Duration::from_secs(10);
    /// let plan = ExecutionPlan::seal(
    ///     tenant.clone(),
    ///     SessionId::new(1),
    ///     LedgerId::new(1),
    ///     deadline,
    ///     deadline,
    /// );
    /// let ready = pools
    ///     .admit(AdmitRequest {
    ///         plan: plan.clone(),
    ///         provider: provider.clone(),
    ///         slot: receipt.slot(OriginSlot::new(0)).expect("slot 0 is configured"),
    ///         kind: OriginKind::Http,
    ///         input: pools.stage_input(&plan, Bytes::from_static(b"GET /today"))?,
    ///     })
    ///     .await?;
    ///
    /// // The grant is capacity; only a fresh dispatch starts the request.
    /// let policy = PolicyTable::new();
    /// policy.allow(tenant, provider.clone());
    /// let running = ready.start(pools.dispatch(&policy, &plan, &provider)?)?;
    /// assert_eq!(running.client().epoch(), Epoch::new(1));
    /// assert_eq!(pools.snapshot().running_requests, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn admit(
        &self,
        request: AdmitRequest,
    ) -> impl Future<Output = Result<PoolReady, AdmitError>> + Send + '_ {
        // Every pending waiter's task carries this future, so its size is
        // memory per waiter (BENCHMARKS.md, "Where the time goes"): a hand-written
        // future that keeps, while in line, only what the grant needs, and
        // does nothing until first polled.
        Admitting::new(self, request)
    }

    /// The lease a grant carries: the one taken when the request was
    /// queued, or, when a rotation retired that epoch while the request
    /// waited, a fresh lease of the same slot (and kind) on the provider's
    /// current epoch: a waiter keeps its place across a rotation instead of being
    /// refused at `start`. A provider retired for good (or a slot its new
    /// epoch no longer has) has no such lease: the old one stays, and
    /// `start` refuses `retired` as before. The admission span's `epoch`
    /// follows the new lease.
    pub(super) fn current_lease(&self, lease: ClientLease, watch: &AdmitWatch<'_>) -> ClientLease {
        if !lease.is_retired() {
            return lease;
        }
        match self.client(lease.provider(), &lease.typed_slot(), lease.kind()) {
            Ok(fresh) => {
                watch.record_epoch(fresh.epoch().get());
                fresh
            }
            Err(_) => lease,
        }
    }

    /// A fresh dispatch: asks `authority` whether `plan` may call `provider`
    /// now, and binds the provider's current epoch.
    ///
    /// # Errors
    ///
    /// [`AdmitError::Revoked`] when the authority denies,
    /// [`AdmitError::Unavailable`] when the provider has no current epoch,
    /// [`AdmitError::Closed`] after retirement.
    pub fn dispatch(
        &self,
        authority: &dyn DispatchAuthority,
        plan: &ExecutionPlan,
        provider: &ProviderId,
    ) -> Result<ProviderCall, AdmitError> {
        let span = tracing::debug_span!(
            spans::DISPATCH,
            provider = provider.as_str(),
            epoch = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let decided = self.decide_dispatch(authority, plan, provider);
        match &decided {
            Ok(call) => {
                span.record("epoch", call.epoch.get());
                span.record("outcome", "dispatched");
            }
            Err(err) => {
                span.record("epoch", 0u64);
                span.record("outcome", err.code());
            }
        }
        decided
    }

    fn decide_dispatch(
        &self,
        authority: &dyn DispatchAuthority,
        plan: &ExecutionPlan,
        provider: &ProviderId,
    ) -> Result<ProviderCall, AdmitError> {
        if !self.is_open() {
            return Err(AdmitError::Closed);
        }
        authority
            .authorize(plan, provider)
            .map_err(AdmitError::Revoked)?;
        let epoch = self
            .inner
            .directory
            .current_epoch(provider)
            .ok_or_else(|| AdmitError::Unavailable {
                provider: provider.clone(),
            })?;
        Ok(ProviderCall {
            session: plan.session(),
            ledger: plan.ledger(),
            provider: provider.clone(),
            epoch,
            generation: self.inner.generation.id(),
            sequence: self.inner.accounts.next_sequence(),
        })
    }
}
