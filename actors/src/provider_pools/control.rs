//! Installation, lookups, observation, limits and shutdown.

use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::epoch::{ClientLease, TypedSlot};
use crate::error::{InstallError, LookupError, LowerError};
use crate::identity::{OriginKind, ProviderId};
use crate::install::{InstallReceipt, Installation, ProviderDescriptor};
use crate::limits::Limits;
use crate::observe::spans;
use crate::provider_pools::ProviderPools;
use crate::snapshot::{ControlState, Held, Snapshot, Usage};
use crate::workers::WaitError;

/// How many times a lookup re-reads the directory when the epoch it found
/// was retired under it by a concurrent rotation.
const LOOKUP_ATTEMPTS: usize = 4;

/// How long control operations without a deadline of their own wait for
/// room in the registry's mailbox and for its answer.
const CONTROL_WAIT: Duration = Duration::from_secs(5);

impl ProviderPools {
    /// Installs a provider's first epoch (`expected` zero) or replaces its
    /// current one (`expected` the installed epoch), publishing atomically.
    ///
    /// # Cancel safety
    ///
    /// Once the request is queued, dropping the future does not undo it: the
    /// installation completes or is refused, and only the answer is lost.
    /// [`ProviderPools::describe`] tells which epoch is installed.
    ///
    /// # Errors
    ///
    /// Every [`InstallError`]; on any of them the previous epoch, if any,
    /// stays installed and usable.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{
    ///     Authority, BrokerGeneration, Credential, Epoch, InstallError, Installation, OriginKind,
    ///     OriginSlot, PoolsConfig, ProviderConfig, ProviderId, ProviderPools, ServiceName,
    /// };
    ///
    /// fn installation(expected: Epoch, token: &[u8]) -> Result<Installation, Box<dyn std::error::Error>> {
    ///     Ok(Installation {
    ///         provider: ProviderId::new("weather")?,
    ///         authority: Authority::new("https://api.weather.example")?,
    ///         expected,
    ///         credential: Credential::new(token.to_vec())?,
    ///         config: ProviderConfig::new(ServiceName::new("weather/v1")?).with_origin(
    ///             OriginSlot::new(0),
    ///             OriginKind::Http,
    ///             "https://api.weather.example:443",
    ///         ),
    ///     })
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    ///
    /// // Creation expects epoch zero and installs epoch 1.
    /// let first = pools.install(installation(Epoch::ZERO, b"token-1")?).await?;
    /// assert_eq!(first.epoch, Epoch::new(1));
    ///
    /// // A rotation names the epoch it replaces: a stale expectation is
    /// // refused and epoch 1 stays installed.
    /// let stale = pools.install(installation(Epoch::ZERO, b"token-2")?).await;
    /// assert!(matches!(stale, Err(InstallError::EpochMismatch { .. })));
    /// let second = pools.install(installation(first.epoch, b"token-2")?).await?;
    /// assert_eq!(second.epoch, Epoch::new(2));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn install(
        &self,
        installation: Installation,
    ) -> Result<InstallReceipt, InstallError> {
        if !self.is_open() {
            return Err(InstallError::Closed);
        }
        self.inner.registry.install(installation).await
    }

    /// Leases the configured client of `slot` on `provider`'s current epoch,
    /// without a message hop. The same slot always reaches the same client.
    ///
    /// # Errors
    ///
    /// [`LookupError::ForeignSlot`] for a slot minted by another
    /// installation, [`LookupError::KindMismatch`] when the slot is
    /// configured for another protocol, and the other [`LookupError`]s.
    pub fn client(
        &self,
        provider: &ProviderId,
        slot: &TypedSlot,
        kind: OriginKind,
    ) -> Result<ClientLease, LookupError> {
        for _ in 0..LOOKUP_ATTEMPTS {
            if !self.is_open() {
                return Err(LookupError::Closed);
            }
            let epoch = self.inner.directory.current(provider).ok_or_else(|| {
                LookupError::UnknownProvider {
                    provider: provider.clone(),
                }
            })?;
            match epoch.lease(slot, kind) {
                Err(LookupError::Retired { .. }) => continue,
                other => return other,
            }
        }
        Err(LookupError::Retired {
            provider: provider.clone(),
        })
    }

    /// The public description of `provider`'s current epoch.
    pub fn describe(&self, provider: &ProviderId) -> Option<ProviderDescriptor> {
        self.inner
            .directory
            .current(provider)
            .map(|epoch| ProviderDescriptor::of(&epoch))
    }

    /// Aggregate counts of everything the pools own.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{BrokerGeneration, ControlState, PoolsConfig, ProviderPools};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    ///
    /// let snapshot = pools.snapshot();
    /// assert_eq!(snapshot.control, ControlState::Running);
    /// assert!(snapshot.owns_nothing());
    ///
    /// pools.retire().await;
    /// assert_eq!(pools.snapshot().control, ControlState::Retiring);
    /// # Ok(())
    /// # }
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = self.inner.ledger.snapshot();
        if self.registry_lost() {
            snapshot.control = ControlState::Failed;
        }
        snapshot
    }

    /// Every tenant's and every provider's queued and running requests
    /// now: the per-key view behind per-tenant gauges. It reads the
    /// admission queue under its lock in O(tenants + providers with live
    /// work), so it suits a scrape, not every request. Keys with nothing
    /// queued or running are absent.
    pub fn usage(&self) -> Usage {
        let (tenants, providers) = self.inner.admission.usage();
        let held = |pending, running| Held { pending, running };
        Usage {
            tenants: tenants
                .into_iter()
                .map(|(tenant, pending, running)| (tenant, held(pending, running)))
                .collect(),
            providers: providers
                .into_iter()
                .map(|(provider, pending, running)| (provider, held(pending, running)))
                .collect(),
        }
    }

    /// Closes admission at once and retires every installed epoch; work
    /// already accepted finishes on its epoch.
    ///
    /// # Cancel safety
    ///
    /// Admission is closed on the first poll; dropping the future later may
    /// leave epochs unretired until the next `retire` or `shutdown`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use provider_pools_actors::{BrokerGeneration, JobError, PoolsConfig, ProviderPools};
    /// use tokio::time::Instant;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    /// let accepted = pools.spawn(|| async { 40 + 2 }).await?;
    ///
    /// pools.retire().await;
    /// // New work is refused; accepted work still finishes.
    /// assert!(matches!(
    ///     pools.spawn(|| async {}).await,
    ///     Err(JobError::Closed)
    /// ));
    /// assert_eq!(accepted.join().await?, 42);
    /// let report = pools.shutdown(Instant::now() + Duration::from_secs(5)).await;
    /// assert!(report.is_clean(), "{report:?}");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn retire(&self) {
        self.inner.ledger.close();
        self.inner
            .registry
            .retire(Instant::now() + CONTROL_WAIT)
            .await;
    }

    /// Retires, then waits until `deadline` for every retained epoch, request,
    /// provider job and cleanup to be really released — jobs joined, never
    /// aborted — and returns what remains.
    ///
    /// The returned snapshot is clean only if everything was released and
    /// the registry completed; on timeout it reports what is still owned,
    /// and a later call may still complete.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future stops only the waiting; admission
    /// stays closed and the drain goes on.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use provider_pools_actors::{BrokerGeneration, ControlState, PoolsConfig, ProviderPools};
    /// use tokio::time::Instant;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    /// // A job still running when shutdown begins is joined, never aborted.
    /// let _job = pools
    ///     .spawn(|| tokio::time::sleep(Duration::from_millis(10)))
    ///     .await?;
    ///
    /// let report = pools.shutdown(Instant::now() + Duration::from_secs(5)).await;
    /// assert!(report.is_clean(), "{report:?}");
    /// assert_eq!(report.control, ControlState::Completed);
    /// assert_eq!(report.workers, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn shutdown(&self, deadline: Instant) -> Snapshot {
        let span = tracing::info_span!(spans::SHUTDOWN, outcome = tracing::field::Empty);
        self.drain_in_phases(deadline)
            .instrument(span.clone())
            .await;
        let report = self.snapshot();
        span.record(
            "outcome",
            if report.is_clean() {
                "clean"
            } else {
                "unclean"
            },
        );
        report
    }

    /// The shutdown's phases, each in its own `pools.shutdown.phase` span.
    async fn drain_in_phases(&self, deadline: Instant) {
        let retire = phase_span("retire");
        self.inner.ledger.close();
        self.inner.workers.close();
        let done = self
            .inner
            .registry
            .shutdown(deadline)
            .instrument(retire.clone())
            .await;
        phase_end(retire, if done.is_some() { "done" } else { "closed" });
        let Some(done) = done else {
            return;
        };
        // Jobs may still hand resources to cleanup until they are joined.
        let workers = phase_span("workers");
        let workers_idle = self
            .inner
            .workers
            .when_idle(deadline)
            .instrument(workers.clone())
            .await;
        phase_end(workers, wait_outcome(&workers_idle));
        let workers_idle = workers_idle.is_ok();
        if workers_idle {
            let cleanup = phase_span("cleanup");
            self.inner.cleanup.close();
            let cleanup_idle = self
                .inner
                .cleanup
                .when_idle(deadline)
                .instrument(cleanup.clone())
                .await;
            phase_end(cleanup, wait_outcome(&cleanup_idle));
            if cleanup_idle.is_ok() {
                self.inner.registry.control_idle(deadline).await;
            }
        }
        let registry = phase_span("registry");
        let stopped = async {
            let answered = tokio::time::timeout_at(deadline, done).await.is_ok();
            self.inner.registry.stopped(deadline).await;
            answered
        }
        .instrument(registry.clone())
        .await;
        phase_end(registry, if stopped { "done" } else { "timeout" });
    }

    /// Lowers limits for the rest of the generation.
    ///
    /// Never raises above the startup limits, never changes the dial
    /// backoff, and never lowers a limit below what is in use now —
    /// counting retired epochs, clients retained by old calls, queued and
    /// running requests. Shorter queue and idle ages apply to future
    /// admissions and idle reuse; admitted requests keep their deadlines.
    /// All or nothing: a refusal changes no limit.
    ///
    /// # Cancel safety
    ///
    /// Once queued the change is applied or refused as a whole; dropping the
    /// future loses only the answer.
    ///
    /// # Errors
    ///
    /// [`LowerError::Limits`] for invalid, raised or fixed fields,
    /// [`LowerError::InUse`] naming the field and its current use,
    /// [`LowerError::Busy`] and [`LowerError::Closed`].
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{
    ///     BrokerGeneration, LimitField, Limits, LimitsError, LowerError, PoolsConfig, ProviderPools,
    /// };
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    ///
    /// // Halve each tenant's share of connections.
    /// pools
    ///     .lower_limits(Limits {
    ///         connections_per_tenant: 2,
    ///         ..Limits::DEFAULT
    ///     })
    ///     .await?;
    ///
    /// // Nothing is ever raised above its startup value.
    /// let raised = pools
    ///     .lower_limits(Limits {
    ///         connections_per_tenant: 5,
    ///         ..Limits::DEFAULT
    ///     })
    ///     .await;
    /// assert!(matches!(
    ///     raised,
    ///     Err(LowerError::Limits(LimitsError::Raised {
    ///         field: LimitField::ConnectionsPerTenant,
    ///         ..
    ///     }))
    /// ));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lower_limits(&self, lowered: Limits) -> Result<(), LowerError> {
        self.inner.limits.check_lowering(&lowered)?;
        if !self.is_open() {
            return Err(LowerError::Closed);
        }
        self.inner.registry.lower_limits(lowered).await
    }
}

/// The span of one shutdown phase (`pools.shutdown.phase`).
fn phase_span(phase: &'static str) -> tracing::Span {
    tracing::info_span!(
        spans::SHUTDOWN_PHASE,
        phase,
        outcome = tracing::field::Empty
    )
}

/// A pool wait's phase outcome: `stopped` when the pool actor had already
/// stopped (the registry stops it once nothing is left).
fn wait_outcome(waited: &Result<(), WaitError>) -> &'static str {
    match waited {
        Ok(()) => "done",
        Err(WaitError::Timeout) => "timeout",
        Err(WaitError::Busy) => "busy",
        Err(WaitError::Closed) => "stopped",
    }
}

/// Records a phase's outcome and closes its span.
fn phase_end(span: tracing::Span, outcome: &'static str) {
    span.record("outcome", outcome);
}
