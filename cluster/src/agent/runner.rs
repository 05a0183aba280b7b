//! The agent's loop: presence and the node's side, every period (see the
//! parent module for the order and its invariants); the leader's side is
//! in `lead`, leaving the cluster in `leave`.

mod lead;
mod leave;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use provider_pools_actors::ProviderPools;
use provider_pools_actors::{ProviderId, RateLimit, TenantId};
use provider_pools_control_plane::{
    Board, ControlPlaneError, LeadershipGuard, LeaseKey, LeaseName, NameError, PresenceKey,
    Registration, TopicName,
};
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

use super::status::{ClusterStatus, ProviderStatus, RateStatus};
use crate::config::{ClusterConfig, GlobalRate};
use crate::error::ClusterError;
use crate::share::Holding;
use crate::wire::{Report, Table, MAX_REPORTED_TENANTS};

/// What one division bounds on the engine.
#[derive(Debug, Clone, Copy)]
enum Bound {
    /// The provider's running requests: its own ceiling.
    Running,
    /// The provider's rate: requests per `period`, with the burst of the
    /// rate configured on this node (`configured`, given back on a start
    /// that fails).
    Rate {
        period: Duration,
        configured: RateLimit,
    },
}

/// One provider's division (of its running ceiling or of its rate), as
/// this node tracks it. The two divisions of one provider are apart:
/// their own lease, table and reports.
struct Tracked {
    provider: ProviderId,
    bound: Bound,
    /// Kept without the control plane.
    floor: u32,
    /// What the leader divides: the global value less every floor.
    pool: u32,
    lease: LeaseKey,
    topic: TopicName,
    /// The most share this node can hold: its startup ceiling (or its
    /// configured rate, per the cluster's period) less the floor.
    cap: u32,
    holding: Holding,
    /// The last table read.
    table: Option<Table>,
    guard: Option<LeadershipGuard>,
    /// The engine ceiling (or requests per period) in force.
    set: u32,
}

impl Tracked {
    fn new(
        provider: &ProviderId,
        bound: Bound,
        floor: u32,
        pool: u32,
        cap: u32,
    ) -> Result<Self, ClusterError> {
        let (lease, topic, key) = match bound {
            Bound::Running => ("shares", "demand", "cluster.ceiling.provider"),
            Bound::Rate { .. } => ("rates", "rate-demand", "cluster.rate.provider"),
        };
        let named = |error: NameError| ClusterError::config(key, error.to_string());
        Ok(Self {
            provider: provider.clone(),
            bound,
            floor,
            pool,
            lease: LeaseKey::Global(LeaseName::new(format!("{lease}.{provider}")).map_err(named)?),
            topic: TopicName::new(format!("{topic}.{provider}")).map_err(named)?,
            cap,
            holding: Holding::default(),
            table: None,
            guard: None,
            set: floor,
        })
    }
}

/// The rate configured on this node for `global`'s provider, and its
/// requests per the cluster's period (rounded down); `None` when the
/// provider has no rate here.
fn node_rate(pools: &ProviderPools, global: &GlobalRate) -> Option<(RateLimit, u32)> {
    let configured = pools.provider_rate(&global.provider)?.configured;
    let per_period = u128::from(configured.requests) * global.period.as_nanos()
        / configured.period.as_nanos().max(1);
    Some((configured, u32::try_from(per_period).unwrap_or(u32::MAX)))
}

pub(super) struct Runner {
    pools: ProviderPools,
    board: Arc<dyn Board>,
    config: ClusterConfig,
    presence: PresenceKey,
    providers: Vec<Tracked>,
    incarnation: u64,
    registered: bool,
    contact_until: Option<Instant>,
    /// Tenant ceilings this agent set, to clear when a tenant has no share.
    tenant_ceilings: BTreeMap<TenantId, u32>,
    /// Tables a departed node's bound stays reserved for.
    quarantine: u64,
    status: Arc<Mutex<ClusterStatus>>,
    periods: u64,
    last_error: Option<String>,
    /// Set by [`Self::leave`]: reports say so, and every target is zero.
    leaving: bool,
}

impl Runner {
    pub(super) fn new(
        pools: ProviderPools,
        board: Arc<dyn Board>,
        config: ClusterConfig,
        status: Arc<Mutex<ClusterStatus>>,
    ) -> Result<Self, ClusterError> {
        let startup = pools.limits().running_per_provider;
        let members = config.members.len();
        let mut providers = Vec::with_capacity(config.ceilings.len() + config.rates.len());
        for ceiling in &config.ceilings {
            providers.push(Tracked::new(
                &ceiling.provider,
                Bound::Running,
                ceiling.floor,
                ceiling.dynamic_pool(members),
                startup.saturating_sub(ceiling.floor),
            )?);
        }
        for rate in &config.rates {
            let Some((configured, here)) = node_rate(&pools, rate) else {
                return Err(ClusterError::config(
                    "cluster.rate.provider",
                    format!("{} has no rate configured on this node", rate.provider),
                ));
            };
            if here < rate.floor {
                return Err(ClusterError::config(
                    "cluster.rate.floor",
                    format!(
                        "{}: a floor of {} is above this node's configured rate of {} per period",
                        rate.provider, rate.floor, here
                    ),
                ));
            }
            providers.push(Tracked::new(
                &rate.provider,
                Bound::Rate {
                    period: rate.period,
                    configured,
                },
                rate.floor,
                rate.dynamic_pool(members),
                here - rate.floor,
            )?);
        }
        let presence = PresenceKey {
            service: config.service.clone(),
            node: config.node.clone(),
        };
        let quarantine = quarantine(config.drain, config.period);
        Ok(Self {
            pools,
            board,
            config,
            presence,
            providers,
            incarnation: 0,
            registered: false,
            contact_until: None,
            tenant_ceilings: BTreeMap::new(),
            quarantine,
            status,
            periods: 0,
            last_error: None,
            leaving: false,
        })
    }

    /// Each rate division's floor and the rate configured before it, for
    /// the agent's start to put in force (and give back on a refusal).
    pub(super) fn rate_floors(&self) -> Vec<(ProviderId, RateLimit, RateLimit)> {
        self.providers
            .iter()
            .filter_map(|tracked| match tracked.bound {
                Bound::Rate { period, configured } => Some((
                    tracked.provider.clone(),
                    RateLimit::new(tracked.floor, period, configured.burst),
                    configured,
                )),
                Bound::Running => None,
            })
            .collect()
    }

    /// Runs a period at every tick until asked to stop, then leaves.
    pub(super) async fn run(mut self, mut stopping: watch::Receiver<Option<Duration>>) {
        let mut ticks = tokio::time::interval(self.config.period);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let drain = loop {
            tokio::select! {
                biased;
                changed = stopping.changed() => {
                    let asked = *stopping.borrow();
                    match (changed, asked) {
                        (Ok(()), Some(drain)) => break drain,
                        (Ok(()), None) => continue,
                        // The handle was dropped: leave without waiting.
                        (Err(_), _) => break Duration::ZERO,
                    }
                }
                _ = ticks.tick() => self.period().await,
            }
        };
        self.leave(drain).await;
    }

    async fn period(&mut self) {
        self.periods += 1;
        self.keep_presence().await;
        let mut shares: BTreeMap<TenantId, u32> = BTreeMap::new();
        for at in 0..self.providers.len() {
            self.lead(at).await;
            self.follow(at).await;
            let tracked = &self.providers[at];
            if !matches!(tracked.bound, Bound::Running) {
                continue;
            }
            if let Some(row) = self.own_row(tracked) {
                for (tenant, &share) in &row.tenants {
                    let entry = shares.entry(tenant.clone()).or_default();
                    *entry = entry.saturating_add(share.saturating_add(tracked.floor));
                }
            }
        }
        self.set_tenant_ceilings(shares);
        self.publish();
    }

    fn in_contact(&self, now: Instant) -> bool {
        self.registered && self.contact_until.is_some_and(|until| now < until)
    }

    fn counted_until(&self, sent: Instant) -> Instant {
        sent + self
            .config
            .lease_ttl
            .saturating_sub(self.config.skew_margin)
    }

    /// Registers (a new incarnation) or heartbeats.
    async fn keep_presence(&mut self) {
        let sent = Instant::now();
        if self.registered {
            match self.board.heartbeat(self.presence.clone()).await {
                Ok(()) => self.contact_until = Some(self.counted_until(sent)),
                Err(ControlPlaneError::NotRegistered) => {
                    self.registered = false;
                    self.contact_until = None;
                }
                Err(error) => self.note("heartbeat", &error),
            }
            return;
        }
        let incarnation = next_incarnation(self.incarnation);
        let registration = Registration::new(
            self.config.service.clone(),
            self.config.node.clone(),
            self.config.node.as_str(),
            self.config.lease_ttl,
        )
        .and_then(|r| r.with_metadata("incarnation", incarnation.to_string()));
        let registration = match registration {
            Ok(registration) => registration,
            Err(error) => return self.note("register", &error),
        };
        match self.board.register(registration).await {
            Ok(()) => {
                self.incarnation = incarnation;
                self.registered = true;
                self.contact_until = Some(self.counted_until(sent));
            }
            Err(error) => self.note("register", &error),
        }
    }

    /// The node's side for provider `at`: read, choose, put in force,
    /// report. While leaving, it aims at zero whatever the table says.
    async fn follow(&mut self, at: usize) {
        let lease = self.providers[at].lease.clone();
        match self.board.read_fenced(lease).await {
            Ok(Some(record)) => match Table::decode(&record.value) {
                Ok(table) => self.providers[at].table = Some(table),
                Err(error) => self.last_error = Some(error.to_string()),
            },
            Ok(None) => {}
            Err(error) => self.note("read table", &error),
        }
        let now = Instant::now();
        let contact = self.in_contact(now);
        let until = self.contact_until.filter(|_| contact).unwrap_or(now);
        let tracked = &self.providers[at];
        let (epoch, target) = tracked.holding.target(
            tracked.table.as_ref(),
            &self.config.node,
            self.incarnation,
            contact,
            self.leaving,
        );
        let floor = tracked.floor;
        let wanted = floor.saturating_add(target.min(tracked.cap));
        match self.put_in_force(tracked, wanted, until) {
            Ok(set) => {
                let tracked = &mut self.providers[at];
                tracked.set = set;
                tracked.holding = Holding {
                    epoch,
                    in_force: set.saturating_sub(floor),
                };
            }
            Err(error) => {
                self.last_error = Some(match std::error::Error::source(&error) {
                    Some(cause) => format!("{error}: {cause}"),
                    None => error.to_string(),
                });
            }
        }
        if self.registered {
            self.report(at).await;
        }
    }

    /// Sets `wanted` as the provider's ceiling (or rate) until `until`,
    /// falling back to the floor by the engine's own clock.
    ///
    /// A ceiling below use drains: this answers what the node may run from
    /// now on until it sets another, the larger of the ceiling and what
    /// runs now (no grant happens above the ceiling, so what runs only
    /// falls). A rate is in force at once (grants already made stand, and
    /// the tokens they spent count against it): this answers `wanted`.
    fn put_in_force(
        &self,
        tracked: &Tracked,
        wanted: u32,
        until: Instant,
    ) -> Result<u32, ClusterError> {
        let provider = &tracked.provider;
        match tracked.bound {
            Bound::Running => {
                self.pools
                    .set_provider_running_until(provider, wanted, until, tracked.floor)?;
                let running: u32 = self
                    .pools
                    .provider_demand(provider)
                    .iter()
                    .map(|d| d.running)
                    .sum();
                Ok(wanted.max(running))
            }
            Bound::Rate { period, configured } => {
                let rate = RateLimit::new(wanted, period, configured.burst);
                let floor = RateLimit::new(tracked.floor, period, configured.burst);
                self.pools
                    .set_provider_rate_until(provider, rate, until, floor)?;
                Ok(wanted)
            }
        }
    }

    /// Posts provider `at`'s report.
    async fn report(&mut self, at: usize) {
        let tracked = &self.providers[at];
        let mut demand = self.pools.provider_demand(&tracked.provider);
        if demand.len() > MAX_REPORTED_TENANTS {
            demand.sort_by_key(|d| std::cmp::Reverse(d.pending.saturating_add(d.running)));
            demand.truncate(MAX_REPORTED_TENANTS);
        }
        let tenants: BTreeMap<TenantId, u32> = demand
            .into_iter()
            .map(|d| {
                let backlog = match tracked.bound {
                    Bound::Running => d.pending.saturating_add(d.running),
                    // A rate's demand is not a count of requests: a
                    // tenant with requests waiting could use all this
                    // node can hold, one without uses what the
                    // headroom leaves.
                    Bound::Rate { .. } if d.pending > 0 => tracked.cap,
                    Bound::Rate { .. } => 0,
                };
                (d.tenant, backlog)
            })
            .filter(|(_, backlog)| *backlog > 0)
            .collect();
        let weights = tenants
            .keys()
            .map(|tenant| (tenant.clone(), self.pools.tenant_weight(tenant)))
            .filter(|(_, weight)| *weight != 1)
            .collect();
        let report = Report {
            incarnation: self.incarnation,
            epoch: tracked.holding.epoch,
            in_force: tracked.holding.in_force,
            cap: tracked.cap,
            tenants,
            weights,
            leaving: self.leaving,
        };
        let bytes = match report.encode() {
            Ok(bytes) => bytes,
            Err(error) => {
                self.last_error = Some(error.to_string());
                return;
            }
        };
        let topic = tracked.topic.clone();
        match self.board.post(self.presence.clone(), topic, bytes).await {
            Ok(()) => {}
            Err(ControlPlaneError::NotRegistered) => {
                self.registered = false;
                self.contact_until = None;
            }
            Err(error) => self.note("post", &error),
        }
    }

    fn own_row<'a>(&self, tracked: &'a Tracked) -> Option<&'a crate::wire::Row> {
        if !self.in_contact(Instant::now()) {
            return None;
        }
        let table = tracked.table.as_ref()?;
        (table.epoch == tracked.holding.epoch)
            .then(|| table.rows.get(&self.config.node))
            .flatten()
            .filter(|row| row.incarnation == self.incarnation)
    }

    /// Each tenant with shares gets their sum as its ceiling here; the
    /// others this agent capped get the node-wide share back.
    fn set_tenant_ceilings(&mut self, shares: BTreeMap<TenantId, u32>) {
        let startup = self.pools.limits().running_per_tenant;
        let gone: Vec<TenantId> = self
            .tenant_ceilings
            .keys()
            .filter(|t| !shares.contains_key(*t))
            .cloned()
            .collect();
        for tenant in gone {
            if self
                .pools
                .set_tenant_running_draining(&tenant, None)
                .is_ok()
            {
                self.tenant_ceilings.remove(&tenant);
            }
        }
        for (tenant, share) in shares {
            let ceiling = share.min(startup);
            if self.tenant_ceilings.get(&tenant) == Some(&ceiling) {
                continue;
            }
            match (self.pools).set_tenant_running_draining(&tenant, Some(ceiling)) {
                Ok(()) => {
                    self.tenant_ceilings.insert(tenant, ceiling);
                }
                Err(error) => self.last_error = Some(format!("tenant {tenant}: {error}")),
            }
        }
    }

    fn note(&mut self, what: &str, error: &ControlPlaneError) {
        tracing::debug!(what, %error, "cluster agent call failed");
        self.last_error = Some(format!("{what}: {error}"));
    }

    fn publish(&self) {
        let rates = self
            .providers
            .iter()
            .filter(|tracked| matches!(tracked.bound, Bound::Rate { .. }))
            .map(|tracked| {
                let status = RateStatus {
                    epoch: tracked.holding.epoch,
                    in_force: tracked.holding.in_force,
                    requests: tracked.set,
                    leader: tracked.guard.as_ref().is_some_and(|g| g.check().is_ok()),
                };
                (tracked.provider.clone(), status)
            })
            .collect();
        let providers = self
            .providers
            .iter()
            .filter(|tracked| matches!(tracked.bound, Bound::Running))
            .map(|tracked| {
                let tenants = self
                    .own_row(tracked)
                    .map(|row| row.tenants.clone())
                    .unwrap_or_default();
                let status = ProviderStatus {
                    epoch: tracked.holding.epoch,
                    in_force: tracked.holding.in_force,
                    ceiling: tracked.set,
                    leader: tracked.guard.as_ref().is_some_and(|g| g.check().is_ok()),
                    tenants,
                };
                (tracked.provider.clone(), status)
            })
            .collect();
        let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        status.periods = self.periods;
        status.incarnation = self.incarnation;
        status.registered = self.registered;
        status.contact_until = self.contact_until;
        status.providers = providers;
        status.rates = rates;
        status.last_error.clone_from(&self.last_error);
    }
}

/// Tables a departed node stays reserved for: the drain time in periods,
/// rounded up, and one more for a leader that writes early.
fn quarantine(drain: Duration, period: Duration) -> u64 {
    let periods = drain.as_nanos().div_ceil(period.as_nanos().max(1));
    u64::try_from(periods).unwrap_or(u64::MAX).saturating_add(1)
}

/// A fresh incarnation: the wall clock in nanoseconds (distinct across a
/// node's restarts), and above the last one in any case.
fn next_incarnation(last: u64) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    now.max(last.saturating_add(1))
}
