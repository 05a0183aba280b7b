//! One node of the cluster example (and of the cluster tests): a registry
//! started from a node file with a `[cluster]` section, its cluster
//! agent, and closed-loop workers calling the shared origin.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use provider_pools::cluster::{ClusterAgent, ClusterStatus};
use provider_pools::node::{Node, NodeConfig};
use provider_pools::{
    BrokerGeneration, Bytes, ExecutionPlan, LedgerId, PolicyTable, PoolsConfig, ProviderId,
    ProviderPools, SessionId, Snapshot, TenantId,
};
use provider_pools_adapters::http_origin::{BodyLimits, HttpService};
use tokio::time::Instant;
use tower_service::Service;

use crate::origin::BoxError;

/// A call's request: a GET, without a body.
type Get = hyper::Request<http_body_util::Empty<Bytes>>;

/// The provider every node calls.
pub(crate) const PROVIDER: &str = "api";

/// The knobs of a cluster run.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The provider's running ceiling for the whole cluster.
    pub(crate) global: u32,
    /// Each member's floor.
    pub(crate) floor: u32,
    /// Each node's startup `running_per_provider` (and running ceilings).
    pub(crate) per_node: u32,
    pub(crate) lease_ttl_ms: u64,
    pub(crate) period_ms: u64,
    pub(crate) drain_ms: u64,
    /// The provider's rate for the whole cluster, if it has one.
    pub(crate) rate: Option<ClusterRate>,
}

/// A provider's rate for the whole cluster, and each node's.
#[derive(Debug, Clone)]
pub(crate) struct ClusterRate {
    /// Requests per period for the whole cluster.
    pub(crate) requests: u32,
    pub(crate) period_ms: u64,
    /// Each member's floor, requests per period.
    pub(crate) floor: u32,
    /// Each node's configured rate, requests per period: the most its
    /// share can reach.
    pub(crate) per_node: u32,
    /// Each node's burst.
    pub(crate) burst: u32,
}

impl Settings {
    /// The figures the tests and the example use: leases of 2 s (etcd's
    /// smallest by default), a period of 250 ms, requests that end within
    /// 500 ms (the origin answers in 20).
    pub(crate) fn quick(global: u32) -> Self {
        Self {
            global,
            floor: 0,
            per_node: global,
            lease_ttl_ms: 2_000,
            period_ms: 250,
            drain_ms: 500,
            rate: None,
        }
    }
}

/// The node file of `name`.
pub(crate) fn node_file(
    name: &str,
    members: &[&str],
    endpoints: &[String],
    origin: &str,
    settings: &Settings,
) -> String {
    let quoted = |items: &mut dyn Iterator<Item = String>| {
        items
            .map(|i| format!("{i:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let members = quoted(&mut members.iter().map(|m| m.to_string()));
    let endpoints = quoted(&mut endpoints.iter().cloned());
    let Settings {
        global,
        floor,
        per_node,
        lease_ttl_ms,
        period_ms,
        drain_ms,
        rate,
    } = settings;
    let (provider_rate, cluster_rate) = match rate {
        Some(rate) => (
            format!(
                "rate = {{ requests = {}, period_ms = {}, burst = {} }}",
                rate.per_node, rate.period_ms, rate.burst
            ),
            format!(
                "[[cluster.rate]]\nprovider = \"{PROVIDER}\"\nrequests = {}\nperiod_ms = {}\nfloor = {}\n",
                rate.requests, rate.period_ms, rate.floor
            ),
        ),
        None => (String::new(), String::new()),
    };
    format!(
        r#"
[limits]
running_requests = {per_node}
running_per_tenant = {per_node}
running_per_provider = {per_node}
pending_requests = 512
requests_per_tenant = 256
requests_per_provider = 512
queue_age_ms = 30000
provider_workers = 128
workers_per_tenant = 64
# Each running request holds a connection: a tenant may use them all.
connections_per_client = 64
connections_per_tenant = 64

[[provider]]
id = "{PROVIDER}"
kind = "http"
service = "api/v1"
authority = "{origin}"
origins = ["{origin}"]
{provider_rate}

[cluster]
node = "{name}"
members = [{members}]
endpoints = [{endpoints}]
lease_ttl_ms = {lease_ttl_ms}
period_ms = {period_ms}
drain_ms = {drain_ms}

[[cluster.ceiling]]
provider = "{PROVIDER}"
running = {global}
floor = {floor}

{cluster_rate}"#
    )
}

/// A started node.
pub(crate) struct ClusterNode {
    pub(crate) name: String,
    pub(crate) pools: ProviderPools,
    agent: ClusterAgent,
    service: HttpService,
    sessions: AtomicU64,
    drain: Duration,
}

impl ClusterNode {
    /// Starts the node `name` from its node file; `tenants` may call.
    pub(crate) async fn start(
        name: &str,
        members: &[&str],
        endpoints: &[String],
        origin: &str,
        settings: &Settings,
        tenants: &[&str],
    ) -> Result<Self, BoxError> {
        let text = node_file(name, members, endpoints, origin, settings);
        let config = NodeConfig::parse(&text)?;
        let cluster = config
            .cluster()?
            .ok_or("the node file has a cluster section")?;
        let Node { pools, receipts } = config
            .start(PoolsConfig::new(
                tokio::runtime::Handle::current(),
                BrokerGeneration::new(),
            ))
            .await?;
        let provider = ProviderId::new(PROVIDER)?;
        let receipt = receipts.get(&provider).ok_or("api installed")?.clone();
        let agent =
            ClusterAgent::connect(pools.clone(), cluster, &tokio::runtime::Handle::current())?;
        let policy = PolicyTable::new();
        for tenant in tenants {
            policy.allow(TenantId::new(*tenant)?, provider.clone());
        }
        let service = HttpService::new(
            &pools,
            &receipt.provider,
            receipt.slots[0],
            Arc::new(policy),
            BodyLimits::default(),
        );
        Ok(Self {
            name: name.to_owned(),
            pools,
            agent,
            service,
            sessions: AtomicU64::new(0),
            drain: Duration::from_millis(settings.drain_ms),
        })
    }

    /// The agent's view.
    pub(crate) fn status(&self) -> ClusterStatus {
        self.agent.status()
    }

    /// One call of `tenant`: `GET /work` through the buffered adapter's
    /// tower service (admission, dispatch, an owned connection).
    pub(crate) async fn call(&self, tenant: &str) -> Result<(), &'static str> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let session = self.sessions.fetch_add(1, Ordering::Relaxed);
        let plan = ExecutionPlan::seal(
            TenantId::new(tenant).map_err(|_| "tenant")?,
            SessionId::new(session),
            LedgerId::new(1),
            deadline,
            deadline,
        );
        let mut request = hyper::Request::get(format!("/work?tenant={tenant}"))
            .body(http_body_util::Empty::<Bytes>::new())
            .map_err(|_| "request")?;
        request.extensions_mut().insert(plan);
        let mut service = self.service.clone();
        std::future::poll_fn(|cx| Service::<Get>::poll_ready(&mut service, cx))
            .await
            .map_err(|e| e.code())?;
        // The response's body holds the running request: dropped here.
        service.call(request).await.map_err(|e| e.code())?;
        Ok(())
    }

    /// Closed-loop workers of `tenant` until `stop`: answers how many calls
    /// succeeded and failed.
    pub(crate) async fn work(self: Arc<Self>, tenant: String, stop: Arc<AtomicBool>) -> (u64, u64) {
        let (mut ok, mut failed) = (0, 0);
        while !stop.load(Ordering::Acquire) {
            match self.call(&tenant).await {
                Ok(()) => ok += 1,
                Err(_) => failed += 1,
            }
        }
        (ok, failed)
    }

    /// Leaves the cluster (drains its share), then shuts the registry
    /// down; answers the agent's last status and the shutdown report.
    pub(crate) async fn stop(self) -> Result<(ClusterStatus, Snapshot), BoxError> {
        let status = self.agent.stop(self.drain).await?;
        let report = self
            .pools
            .shutdown(Instant::now() + Duration::from_secs(10))
            .await;
        Ok((status, report))
    }
}

/// Jain's fairness index over `shares`: 1.0 when all are equal.
pub(crate) fn jain(shares: &[f64]) -> f64 {
    let sum: f64 = shares.iter().sum();
    let squares: f64 = shares.iter().map(|s| s * s).sum();
    if squares == 0.0 {
        return 1.0;
    }
    sum * sum / (shares.len() as f64 * squares)
}
