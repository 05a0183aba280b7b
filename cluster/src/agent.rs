//! [`ClusterAgent`]: the task on every node that keeps its share of each
//! cluster-ceilinged provider (and of each provider with a cluster rate)
//! — presence, reports, leadership, tables, and the engine's ceilings and
//! rates.
//!
//! Every period, in order:
//! 1. presence: register (a new incarnation) or heartbeat; a heartbeat
//!    sent at `t` that succeeded means the registration lives until at
//!    least `t + ttl`, so the node counts on it until `t + ttl − margin`
//!    (its *contact* deadline);
//! 2. per provider, leadership: campaign for (or renew) the provider's
//!    lease; while its guard is safe, read every report and the last table,
//!    compute [`next_table`](crate::plan::next_table) and write it fenced
//!    by the lease's token;
//! 3. per provider, the node's side: read the table, choose the share with
//!    [`Holding::target`](crate::share::Holding::target), put `floor +
//!    share` in force **until the contact deadline** (the engine falls back
//!    to the floor at that instant by itself), then post the report;
//! 4. tenants: each tenant with shares gets their sum (plus floors) as its
//!    running ceiling on the node.
//!
//! A provider's rate is divided the same way, as its own division: its
//! own lease (`rates.<provider>`), reports and table, in requests per the
//! cluster rate's period; the node puts `floor + share` in force as the
//! provider's rate until the contact deadline
//! (`set_provider_rate_until`), falling back to the floor rate by the
//! engine's clock (see docs/decisions/0091-a-cluster-rate-is-a-second-division.md).
//!
//! Invariants:
//! - A provider's engine ceiling never exceeds `floor + share`, and the
//!   share part lapses by the node's own clock before the registration can
//!   expire: no timer has to fire for it (a stopped process resumes at its
//!   floor).
//! - A report is posted only after the share it names is in force.
//! - A failed call changes nothing held: the next period tries again, and
//!   the contact deadline bounds how long an unconfirmed share lasts.

mod runner;
mod status;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use provider_pools_actors::{ProviderId, ProviderPools};
use provider_pools_control_plane::{Board, EtcdClient, EtcdConfig};
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use status::{ClusterStatus, ProviderStatus, RateStatus};

use crate::config::ClusterConfig;
use crate::error::ClusterError;
use crate::failover::Failover;
use runner::Runner;

/// The running agent of one node.
#[derive(Debug)]
pub struct ClusterAgent {
    status: Arc<Mutex<ClusterStatus>>,
    stop: watch::Sender<Option<Duration>>,
    task: JoinHandle<()>,
}

impl ClusterAgent {
    /// Checks everything, puts every ceilinged provider at its floor (all
    /// or none: a refusal clears the ones already set), then starts the
    /// agent's task on `runtime`. Start it before the node takes work.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Engine`] when the engine refuses a floor (below
    /// what already runs, past its table of own ceilings, or the registry
    /// is closed); [`ClusterError::Rate`] when it refuses a floor rate;
    /// [`ClusterError::Config`] when a floor is above the startup
    /// `running_per_provider`, or a cluster rate's provider has no rate
    /// configured on this node, or one below the rate's floor.
    pub fn start(
        pools: ProviderPools,
        board: Arc<dyn Board>,
        config: ClusterConfig,
        runtime: &Handle,
    ) -> Result<Self, ClusterError> {
        let startup = pools.limits().running_per_provider;
        if let Some(ceiling) = config.ceilings.iter().find(|c| c.floor > startup) {
            return Err(ClusterError::config(
                "cluster.ceiling.floor",
                format!(
                    "{}: a floor of {} is above this node's running_per_provider of {startup}",
                    ceiling.provider, ceiling.floor
                ),
            ));
        }
        let floors: Vec<_> = config
            .ceilings
            .iter()
            .map(|c| (c.provider.clone(), c.floor))
            .collect();
        let status = Arc::new(Mutex::new(ClusterStatus::default()));
        let (stop, stopping) = watch::channel(None);
        let runner = Runner::new(pools.clone(), board, config, Arc::clone(&status))?;
        let rate_floors = runner.rate_floors();
        // Every check passed: the floors go in force, all or none.
        let clear_ceilings = |set: &[(ProviderId, u32)]| {
            for (provider, _) in set {
                let _ = pools.set_provider_running(provider, None);
            }
        };
        for (at, (provider, floor)) in floors.iter().enumerate() {
            if let Err(error) = pools.set_provider_running(provider, Some(*floor)) {
                clear_ceilings(&floors[..at]);
                return Err(error.into());
            }
        }
        for (at, (provider, floor, _)) in rate_floors.iter().enumerate() {
            if let Err(error) = pools.set_provider_rate(provider, *floor) {
                clear_ceilings(&floors);
                for (provider, _, configured) in &rate_floors[..at] {
                    let _ = pools.set_provider_rate(provider, *configured);
                }
                return Err(error.into());
            }
        }
        #[allow(
            clippy::disallowed_methods,
            reason = "the agent keeps its runner's join handle"
        )]
        let task = runtime.spawn(runner.run(stopping));
        Ok(Self { status, stop, task })
    }

    /// [`start`](Self::start) over etcd: one client per endpoint of
    /// `config`, tried in turn ([`Failover`]), each call bounded by the
    /// period.
    ///
    /// # Errors
    ///
    /// [`ClusterError::ControlPlane`] for an endpoint the etcd client
    /// refuses (not `https` or loopback `http`, userinfo, a bad prefix);
    /// then as [`start`](Self::start).
    pub fn connect(
        pools: ProviderPools,
        config: ClusterConfig,
        runtime: &Handle,
    ) -> Result<Self, ClusterError> {
        let mut clients: Vec<Arc<dyn Board>> = Vec::with_capacity(config.endpoints.len());
        for endpoint in &config.endpoints {
            let mut etcd = EtcdConfig::new(endpoint.as_str()).with_request_timeout(config.period);
            if let Some(prefix) = &config.prefix {
                etcd = etcd.with_prefix(prefix.as_str());
            }
            clients.push(Arc::new(EtcdClient::new(etcd)?));
        }
        let board = Arc::new(Failover::new(clients)?);
        Self::start(pools, board, config, runtime)
    }

    /// What the agent holds and knows, as of its last period.
    pub fn status(&self) -> ClusterStatus {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Gives every share back and leaves the cluster: each provider drops
    /// to its floor; once what runs above the floors drained (or `drain`
    /// passed) the node posts its last reports, resigns its leases and
    /// deregisters. If requests still ran above a floor at the deadline it
    /// does not deregister: its registration lapses on its own, after
    /// which the leader keeps its share reserved for the drain time.
    ///
    /// # Cancel safety
    ///
    /// Dropping this future leaves the agent stopping on its own task.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Stopped`] when the agent's task had ended already
    /// (it panicked).
    pub async fn stop(self, drain: Duration) -> Result<ClusterStatus, ClusterError> {
        let _ = self.stop.send(Some(drain));
        self.task.await.map_err(|_| ClusterError::Stopped)?;
        Ok(self
            .status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone())
    }
}
