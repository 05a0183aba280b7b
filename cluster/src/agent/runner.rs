//! The agent's loop: presence and the node's side, every period (see the
//! parent module for the order and its invariants); the leader's side is
//! in `lead`, leaving the cluster in `leave`.

mod lead;
mod leave;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use provider_pools_actors::{LowerError, ProviderPools};
use provider_pools_actors::{ProviderId, TenantId};
use provider_pools_control_plane::{
    Board, ControlPlaneError, LeadershipGuard, LeaseKey, LeaseName, PresenceKey, Registration,
    TopicName,
};
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

use super::status::{ClusterStatus, ProviderStatus};
use crate::config::{ClusterConfig, GlobalCeiling};
use crate::error::ClusterError;
use crate::share::Holding;
use crate::wire::{Report, Table, MAX_REPORTED_TENANTS};

/// One ceilinged provider, as this node tracks it.
struct Tracked {
    ceiling: GlobalCeiling,
    lease: LeaseKey,
    topic: TopicName,
    /// The most share this node can hold: its startup ceiling less the floor.
    cap: u32,
    holding: Holding,
    /// The last table read.
    table: Option<Table>,
    guard: Option<LeadershipGuard>,
    /// The engine ceiling in force.
    set: u32,
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
        let mut providers = Vec::with_capacity(config.ceilings.len());
        for ceiling in &config.ceilings {
            let named = |error: ControlPlaneError| {
                ClusterError::config("cluster.ceiling.provider", error.to_string())
            };
            providers.push(Tracked {
                ceiling: ceiling.clone(),
                lease: LeaseKey::Global(
                    LeaseName::new(format!("shares.{}", ceiling.provider)).map_err(named)?,
                ),
                topic: TopicName::new(format!("demand.{}", ceiling.provider)).map_err(named)?,
                cap: startup.saturating_sub(ceiling.floor),
                holding: Holding::default(),
                table: None,
                guard: None,
                set: ceiling.floor,
            });
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
            if let Some(row) = self.own_row(tracked) {
                for (tenant, &share) in &row.tenants {
                    let entry = shares.entry(tenant.clone()).or_default();
                    *entry = entry.saturating_add(share.saturating_add(tracked.ceiling.floor));
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
        let floor = tracked.ceiling.floor;
        let wanted = floor.saturating_add(target.min(tracked.cap));
        match self.put_in_force(&tracked.ceiling.provider, wanted, until, floor) {
            Ok(set) => {
                let tracked = &mut self.providers[at];
                tracked.set = set;
                tracked.holding = Holding {
                    epoch,
                    in_force: set.saturating_sub(floor),
                };
            }
            Err(error) => self.last_error = Some(format!("engine: {error}")),
        }
        if self.registered {
            self.report(at).await;
        }
    }

    /// Sets `wanted` as the provider's ceiling until `until`, falling back
    /// to `floor`; a ceiling below use drains. Answers what this node may
    /// run from now on until it sets another: the larger of the ceiling and
    /// what runs now (no grant happens above the ceiling, so what runs
    /// only falls).
    fn put_in_force(
        &self,
        provider: &ProviderId,
        wanted: u32,
        until: Instant,
        floor: u32,
    ) -> Result<u32, LowerError> {
        self.pools
            .set_provider_running_until(provider, wanted, until, floor)?;
        let running: u32 = self
            .pools
            .provider_demand(provider)
            .iter()
            .map(|d| d.running)
            .sum();
        Ok(wanted.max(running))
    }

    /// Posts provider `at`'s report.
    async fn report(&mut self, at: usize) {
        let tracked = &self.providers[at];
        let mut demand = self.pools.provider_demand(&tracked.ceiling.provider);
        if demand.len() > MAX_REPORTED_TENANTS {
            demand.sort_by_key(|d| std::cmp::Reverse(d.pending.saturating_add(d.running)));
            demand.truncate(MAX_REPORTED_TENANTS);
        }
        let report = Report {
            incarnation: self.incarnation,
            epoch: tracked.holding.epoch,
            in_force: tracked.holding.in_force,
            cap: tracked.cap,
            tenants: demand
                .into_iter()
                .map(|d| (d.tenant, d.pending.saturating_add(d.running)))
                .collect(),
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
        let providers = self
            .providers
            .iter()
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
                (tracked.ceiling.provider.clone(), status)
            })
            .collect();
        let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        status.periods = self.periods;
        status.incarnation = self.incarnation;
        status.registered = self.registered;
        status.contact_until = self.contact_until;
        status.providers = providers;
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
