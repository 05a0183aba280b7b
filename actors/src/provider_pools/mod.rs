//! [`ProviderPools`], the registry handle: the only public face of the
//! registry and scheduler actors.
//!
//! Its methods, by concern, and where each is:
//!
//! | concern | methods | file |
//! | --- | --- | --- |
//! | start and supervision | `start`, `start_linked`, `generation`, `registry_cell`; with feature `testing`: `scheduler_cell`, `control_cells` | `mod.rs` |
//! | providers: install, rotate, look up | `install`, `rotate`, `client`, `describe` | `providers.rs` |
//! | admission of a request | `stage_input`, `admit`, `dispatch` | `admit.rs` (its future, which charges and queues it: `admit_future.rs`) |
//! | requests from outside (ingress) | `ingress` | `inbound.rs` |
//! | metadata paid ahead of a request | `prepay` | `prepay.rs` |
//! | connections and streams | `reserve_connection`; `reserve_stream` | `connections.rs`; `streams.rs` |
//! | provider jobs, drivers and closes | `spawn`, `spawn_blocking`, `spawn_blocking_for`, `control_blocking`, `spawn_driver`, `close_connection`, `retry_close` | `jobs.rs` |
//! | limits | `limits`, `limits_in_force`, `lower_limits` | `limits.rs` |
//! | running ceilings of tenants and providers | `set_tenant_running`, `set_tenant_running_draining`, `set_provider_running`, `set_provider_running_until`, `provider_demand` | `own_running.rs` |
//! | rates | `configure_provider_rate`, `set_provider_rate`, `set_provider_rate_until`, `provider_rate`, `provider_rates`, `configure_tenant_rate`, `set_tenant_rate`, `tenant_rate` | `rate.rs` |
//! | tenant weights | `set_tenant_weight`, `tenant_weight`, `MAX_TENANT_WEIGHT` | `weights.rs` |
//! | observation | `snapshot`, `usage`, `observe_admissions`; with feature `testing`: `wait_quiescent` | `observation.rs`; `quiescence.rs` |
//! | retirement and shutdown | `retire`, `shutdown` | `shutdown.rs` |
//!
//! Invariants:
//! - One registry per [`BrokerGeneration`], ever: the claim is never undone.
//! - Admission is closed as soon as `retire` or `shutdown` is called, a
//!   control actor fails, or the registry is gone without completing.
//! - Everything runs on the tokio runtime the host supplied.

mod admit;
mod admit_future;
mod connections;
mod inbound;
mod jobs;
mod limits;
mod observation;
mod own_running;
mod prepay;
mod providers;
#[cfg(feature = "testing")]
mod quiescence;
mod rate;
mod shutdown;
mod streams;
mod weights;

use std::sync::Arc;

use ractor::{ActorCell, ActorStatus};
use tokio::runtime::Handle;

use crate::accounts::Accounts;
use crate::cleanup::CleanupPool;
use crate::error::StartError;
use crate::fairness::Fairness;
use crate::identity::BrokerGeneration;
use crate::limits::Limits;
use crate::observe::ObserverSlot;
use crate::priority::MinShares;
use crate::registry::{Directory, RegistryHandle, RegistrySpec};
use crate::scheduler;
use crate::snapshot::ControlState;
use crate::supervision::RestartPolicy;
use crate::workers::WorkerPool;

pub use prepay::Prepaid;
#[cfg(feature = "testing")]
pub use quiescence::NotQuiescent;
pub use rate::{RateError, RateInForce, RateLimit};
pub use weights::WeightError;

/// What a registry is started with.
#[derive(Debug, Clone)]
pub struct PoolsConfig {
    /// The runtime every actor and job of the pools runs on.
    pub runtime: Handle,
    /// The broker generation this registry serves; claimed at start.
    pub generation: BrokerGeneration,
    /// The startup limits. `lower_limits` never raises a limit: every
    /// field must be at most the limit in force, so a later lowering never
    /// undoes an earlier one.
    pub limits: Limits,
    /// How often a panicking epoch actor is restarted.
    pub restart: RestartPolicy,
    /// Which backlogged tenant is granted the next running slot:
    /// [`Fairness::Rotation`] by default.
    pub fairness: Fairness,
    /// Each priority class's minimum share of the running slots:
    /// [`MinShares::DEFAULT`] by default.
    pub min_shares: MinShares,
}

impl PoolsConfig {
    /// Default limits and restart policy on `runtime`, for `generation`.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{
    ///     BrokerGeneration, LimitField, Limits, PoolsConfig, ProviderPools, StartError,
    /// };
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generation = BrokerGeneration::new();
    /// let config = |limits| PoolsConfig {
    ///     limits,
    ///     ..PoolsConfig::new(tokio::runtime::Handle::current(), generation.clone())
    /// };
    ///
    /// // Invalid limits are refused before the generation is claimed...
    /// let invalid = Limits {
    ///     idle_connections: 300,
    ///     ..Limits::DEFAULT
    /// };
    /// match ProviderPools::start(config(invalid)).await {
    ///     Err(StartError::Limits(e)) => assert_eq!(e.field(), LimitField::IdleConnections),
    ///     other => panic!("expected invalid limits, got {other:?}"),
    /// }
    /// // ...so the same generation can still start with valid ones.
    /// let pools = ProviderPools::start(config(Limits {
    ///     idle_connections: 16,
    ///     ..Limits::DEFAULT
    /// }))
    /// .await?;
    /// assert_eq!(pools.limits().idle_connections, 16);
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(runtime: Handle, generation: BrokerGeneration) -> Self {
        Self {
            runtime,
            generation,
            limits: Limits::DEFAULT,
            restart: RestartPolicy::default(),
            fairness: Fairness::default(),
            min_shares: MinShares::default(),
        }
    }
}

/// The handle of one provider registry. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ProviderPools {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    registry: RegistryHandle,
    #[cfg(feature = "testing")]
    scheduler: crate::scheduler::SchedulerHandle,
    workers: WorkerPool,
    cleanup: CleanupPool,
    accounts: Arc<Accounts>,
    directory: Arc<Directory>,
    generation: BrokerGeneration,
    limits: Limits,
    /// The host-supplied runtime, where dial tasks run.
    runtime: Handle,
    /// The admission queue, driven by its callers.
    queue: Arc<scheduler::Core>,
    /// Hears every admission's outcome, once installed.
    observer: ObserverSlot,
}

impl ProviderPools {
    /// Starts a standalone registry.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: call it to completion. Dropping the future after
    /// the limits were validated leaves the generation claimed (a claim is
    /// never undone), and once the registry's spawn began, the registry and
    /// its control actors keep running on `config.runtime` with no handle
    /// to reach or shut them down.
    ///
    /// # Errors
    ///
    /// [`StartError::Limits`] for invalid limits (the generation is not
    /// claimed then), [`StartError::GenerationClaimed`] if the generation
    /// already had a registry — also a retired or failed one —, and
    /// [`StartError::Spawn`] if an actor could not start.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{BrokerGeneration, PoolsConfig, ProviderPools, StartError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let generation = BrokerGeneration::new();
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), generation.clone());
    /// let pools = ProviderPools::start(config.clone()).await.expect("first registry");
    /// assert!(matches!(
    ///     ProviderPools::start(config).await,
    ///     Err(StartError::GenerationClaimed { .. })
    /// ));
    /// # let _ = pools;
    /// # }
    /// ```
    pub async fn start(config: PoolsConfig) -> Result<Self, StartError> {
        Self::launch(config, None).await
    }

    /// Starts a registry linked under the host's own supervisor, which then
    /// receives the registry's supervision events.
    ///
    /// The host must handle them: ractor's default `handle_supervisor_evt`
    /// stops the supervisor when a child terminates or fails, so a host
    /// that keeps it is stopped by a routine [`ProviderPools::shutdown`]
    /// (the registry terminates with reason `"shut down"`). Override
    /// `handle_supervisor_evt` and match the registry by
    /// [`ProviderPools::registry_cell`]'s id, as below; a host that needs
    /// no supervision events uses [`ProviderPools::start`].
    ///
    /// # Cancel safety
    ///
    /// As [`ProviderPools::start`]: not cancel safe; a dropped start may
    /// leave the generation claimed and the registry running under
    /// `supervisor` with no handle.
    ///
    /// # Errors
    ///
    /// As [`ProviderPools::start`].
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{BrokerGeneration, PoolsConfig, ProviderPools};
    /// use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
    ///
    /// /// The host's own supervisor: the registry's supervision events reach
    /// /// its `handle_supervisor_evt`.
    /// struct Host;
    ///
    /// impl Actor for Host {
    ///     type Msg = ();
    ///     type State = ();
    ///     type Arguments = ();
    ///
    ///     async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
    ///         Ok(())
    ///     }
    ///
    ///     // Not ractor's default, which would stop the host whenever the
    ///     // registry stops, a routine shutdown included.
    ///     async fn handle_supervisor_evt(
    ///         &self,
    ///         _: ActorRef<()>,
    ///         event: SupervisionEvent,
    ///         _: &mut (),
    ///     ) -> Result<(), ActorProcessingErr> {
    ///         if let SupervisionEvent::ActorFailed(cell, error) = event {
    ///             eprintln!("provider pools {} failed: {error}", cell.get_id());
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _join) = Actor::spawn(None, Host, ()).await?;
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start_linked(config, host.get_cell()).await?;
    ///
    /// let registry = pools.registry_cell().get_id();
    /// assert!(host.get_children().iter().any(|child| child.get_id() == registry));
    ///
    /// let report = pools.shutdown(tokio::time::Instant::now() + std::time::Duration::from_secs(5)).await;
    /// assert!(report.is_clean());
    /// # tokio::task::yield_now().await;
    /// assert_eq!(host.get_status(), ractor::ActorStatus::Running);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn start_linked(
        config: PoolsConfig,
        supervisor: ActorCell,
    ) -> Result<Self, StartError> {
        Self::launch(config, Some(supervisor)).await
    }

    async fn launch(
        config: PoolsConfig,
        supervisor: Option<ActorCell>,
    ) -> Result<Self, StartError> {
        let PoolsConfig {
            runtime,
            generation,
            limits,
            restart,
            fairness,
            min_shares,
        } = config;
        limits.validate()?;
        if !generation.try_claim() {
            return Err(StartError::GenerationClaimed {
                generation: generation.id(),
            });
        }
        let accounts = Accounts::new(&limits);
        let directory = Arc::new(Directory::default());
        let queue = Arc::new(scheduler::Core::new(
            scheduler::ceilings(&limits),
            Arc::clone(&accounts),
            scheduler::deferred_bound(&limits),
        ));
        queue.set_fairness(fairness);
        queue.set_min_shares(min_shares);
        let spec = RegistrySpec {
            limits,
            accounts: Arc::clone(&accounts),
            directory: Arc::clone(&directory),
            queue: Arc::clone(&queue),
            runtime: runtime.clone(),
            restart,
        };
        let (registry, controls) = RegistryHandle::spawn(spec, supervisor).await?;
        Ok(Self {
            inner: Arc::new(Inner {
                registry,
                #[cfg(feature = "testing")]
                scheduler: controls.scheduler,
                workers: controls.workers,
                cleanup: controls.cleanup,
                accounts,
                directory,
                generation,
                limits,
                runtime,
                queue,
                observer: ObserverSlot::default(),
            }),
        })
    }

    /// The broker generation this registry serves.
    pub fn generation(&self) -> &BrokerGeneration {
        &self.inner.generation
    }

    /// The registry actor, for a host that supervises or monitors it.
    pub fn registry_cell(&self) -> ActorCell {
        self.inner.registry.cell()
    }

    /// The scheduler actor (a child of the registry), for tests that stop
    /// it (feature `testing`).
    #[cfg(feature = "testing")]
    pub fn scheduler_cell(&self) -> ActorCell {
        self.inner.scheduler.cell()
    }

    /// The control actors under the registry — scheduler, worker pool,
    /// cleanup — for tests that tell them from epochs (feature `testing`);
    /// the registry's other children are epochs.
    #[cfg(feature = "testing")]
    pub fn control_cells(&self) -> [ActorCell; 3] {
        [
            self.scheduler_cell(),
            self.inner.workers.cell(),
            self.inner.cleanup.cell(),
        ]
    }

    fn is_open(&self) -> bool {
        !self.inner.accounts.is_closed() && !self.registry_lost()
    }

    /// True when the registry actor stopped without completing shutdown.
    fn registry_lost(&self) -> bool {
        let status = self.inner.registry.status();
        status >= ActorStatus::Stopping && self.inner.accounts.control() != ControlState::Completed
    }
}
