//! The cluster agent on one node, on tokio's paused clock, over
//! an in-memory control plane that can be cut off: the share lapses by
//! the node's own clock before its registration can, and comes back with
//! the control plane. A provider's cluster rate likewise lapses to its
//! floor rate, and two nodes on one control plane share it between the
//! tenants waiting, wherever they wait: equally, or by the weights set on
//! their nodes.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use provider_pools::cluster::{
    CeilingSection, ClusterAgent, ClusterError, ClusterSection, RateSection,
};
use provider_pools::{
    AdmitError, InstallReceipt, Limits, PoolReady, ProviderId, ProviderPools, RateLimit,
};
use provider_pools_control_plane::{
    Board, BoxFuture, CallResult, ControlPlane, ControlPlaneError, FencedRecord, LeaseGrant,
    LeaseKey, LeaseRequest, LeaseState, MemoryClient, Post, PresenceKey, Registration,
    ServiceGroup, TopicName,
};
use support::{bounded, plan, request, running, with_mem};

type Admit = Pin<Box<dyn Future<Output = Result<PoolReady, AdmitError>> + Send>>;

/// The in-memory control plane, or `Offline` for every call once cut.
#[derive(Debug, Default)]
struct Cuttable {
    inner: MemoryClient,
    cut: AtomicBool,
}

impl Cuttable {
    fn gate<'a, T: Send + 'a>(
        &'a self,
        call: BoxFuture<'a, CallResult<T>>,
    ) -> BoxFuture<'a, CallResult<T>> {
        if self.cut.load(Ordering::SeqCst) {
            Box::pin(async { Err(ControlPlaneError::Offline) })
        } else {
            call
        }
    }
}

impl ControlPlane for Cuttable {
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>> {
        self.gate(self.inner.register(registration))
    }
    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.gate(self.inner.heartbeat(key))
    }
    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.gate(self.inner.deregister(key))
    }
    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        self.gate(self.inner.discover(service))
    }
    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.gate(self.inner.acquire(request))
    }
    fn renew(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.gate(self.inner.renew(grant))
    }
    fn release(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        self.gate(self.inner.release(grant))
    }
    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        self.gate(self.inner.read_lease(key))
    }
}

impl Board for Cuttable {
    fn post(
        &self,
        key: PresenceKey,
        topic: TopicName,
        value: Vec<u8>,
    ) -> BoxFuture<'_, CallResult<()>> {
        self.gate(self.inner.post(key, topic, value))
    }
    fn read_posts(
        &self,
        service: ServiceGroup,
        topic: TopicName,
    ) -> BoxFuture<'_, CallResult<Vec<Post>>> {
        self.gate(self.inner.read_posts(service, topic))
    }
    fn write_fenced(&self, grant: LeaseGrant, value: Vec<u8>) -> BoxFuture<'_, CallResult<()>> {
        self.gate(self.inner.write_fenced(grant, value))
    }
    fn read_fenced(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<FencedRecord>>> {
        self.gate(self.inner.read_fenced(key))
    }
}

/// Node `a` of members `a` and `b`: provider `mem`, 8 for the cluster,
/// floor 2 each, so a alone may take the 4 left. Leases of 3 s, margin
/// 500 ms, a period of 500 ms.
fn section() -> ClusterSection {
    ClusterSection {
        node: "a".into(),
        members: vec!["a".into(), "b".into()],
        endpoints: vec!["http://127.0.0.1:2379".into()],
        service: None,
        prefix: None,
        lease_ttl_ms: Some(3_000),
        period_ms: Some(500),
        skew_margin_ms: Some(500),
        drain_ms: Some(1_000),
        ceilings: vec![CeilingSection {
            provider: "mem".into(),
            running: 8,
            floor: 2,
        }],
        rates: Vec::new(),
    }
}

async fn started() -> (ProviderPools, InstallReceipt, Arc<Cuttable>, ClusterAgent) {
    let limits = Limits {
        running_per_provider: 8,
        ..Limits::DEFAULT
    };
    let (pools, receipt) = with_mem(limits).await;
    let board = Arc::new(Cuttable::default());
    let config = section().check().expect("a valid section");
    let agent = ClusterAgent::start(
        pools.clone(),
        Arc::clone(&board) as Arc<dyn Board>,
        config,
        &tokio::runtime::Handle::current(),
    )
    .expect("the agent starts");
    (pools, receipt, board, agent)
}

/// Advances the paused clock a period at a time until `ceiling` is in
/// force, at most `periods` periods.
async fn ceiling_becomes(agent: &ClusterAgent, ceiling: u32, periods: u32) {
    for _ in 0..periods {
        let status = agent.status();
        if status.providers.values().all(|p| p.ceiling == ceiling) && status.periods > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("the ceiling never became {ceiling}: {:?}", agent.status());
}

async fn admit_once(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &str,
    session: u64,
) -> Option<Admit> {
    let admitting = pools.clone();
    let admit = request(pools, plan(tenant, session), receipt, b"");
    let mut future: Admit = Box::pin(async move { admitting.admit(admit).await });
    match std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await {
        Poll::Pending => Some(future),
        Poll::Ready(answer) => {
            drop(answer.expect("granted"));
            None
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_node_that_loses_the_control_plane_falls_to_its_floor_before_its_registration_can_lapse()
{
    let (pools, receipt, board, agent) = started().await;
    // Alone, a takes the whole dynamic pool: floor 2 + 4.
    ceiling_becomes(&agent, 6, 10).await;
    let before = agent.status();
    let until = before.contact_until.expect("in contact");
    board.cut.store(true, Ordering::SeqCst);
    let held: Vec<_> = futures_held(&pools, &receipt, 6).await;

    // Up to the contact deadline, the share stands; then it lapses, with
    // the registration still live in the store.
    tokio::time::sleep_until(until - Duration::from_millis(1)).await;
    assert_eq!(
        agent
            .status()
            .providers
            .values()
            .map(|p| p.ceiling)
            .sum::<u32>(),
        6
    );
    tokio::time::sleep_until(until).await;
    let live = board
        .inner
        .discover(ServiceGroup::new("provider-pools").expect("valid"))
        .await
        .expect("the store answers");
    assert_eq!(live.len(), 1, "a's registration outlives its share");

    // Past the deadline the engine grants only the floor, whatever ran.
    drop(held);
    let _first = running(&pools, &receipt, "t", 100).await;
    let _second = running(&pools, &receipt, "t", 101).await;
    let third = admit_once(&pools, &receipt, "t", 102).await;
    assert!(third.is_some(), "a third request waits: the floor is 2");
    drop(third);
    drop(agent.stop(Duration::ZERO).await);
}

#[tokio::test(start_paused = true)]
async fn the_share_comes_back_with_the_control_plane_under_a_new_incarnation() {
    let (_pools, _receipt, board, agent) = started().await;
    ceiling_becomes(&agent, 6, 10).await;
    let first = agent.status().incarnation;
    board.cut.store(true, Ordering::SeqCst);
    // Long enough for the registration and the leadership to lapse.
    tokio::time::sleep(Duration::from_secs(4)).await;
    ceiling_becomes(&agent, 2, 1).await;
    board.cut.store(false, Ordering::SeqCst);
    ceiling_becomes(&agent, 6, 10).await;
    let status = agent.status();
    assert!(status.incarnation > first, "registered again: {status:?}");
    let stopped = bounded("the agent stops", agent.stop(Duration::from_secs(1))).await;
    assert!(stopped.expect("stops").left, "it leaves cleanly once back");
}

/// `n` requests of tenant `t` held running.
async fn futures_held(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    n: u64,
) -> Vec<provider_pools::RunningRequest> {
    let mut held = Vec::new();
    for session in 0..n {
        held.push(running(pools, receipt, "t", session).await);
    }
    held
}

#[tokio::test(start_paused = true)]
async fn a_members_unreadable_report_stalls_no_one_else() {
    let (_pools, _receipt, board, agent) = started().await;
    // Member b registers and posts something that is not a report.
    let b = Registration::new(
        ServiceGroup::new("provider-pools").expect("valid"),
        provider_pools_control_plane::NodeId::new("b").expect("valid"),
        "b",
        Duration::from_secs(30),
    )
    .expect("valid");
    board.inner.register(b.clone()).await.expect("b registers");
    let topic = TopicName::new("demand.mem").expect("valid");
    board
        .inner
        .post(b.key().clone(), topic, b"not json".to_vec())
        .await
        .expect("b posts");
    // a still leads and takes the whole dynamic pool: b is counted at
    // nothing it never held.
    ceiling_becomes(&agent, 6, 10).await;
    let status = agent.status();
    let error = status.last_error.expect("the bad report is reported");
    assert!(error.contains("b's report"), "{error}");
    drop(agent.stop(Duration::ZERO).await);
}

#[tokio::test(start_paused = true)]
async fn a_floor_below_what_runs_refuses_the_start_and_leaves_no_ceiling() {
    let limits = Limits {
        running_per_provider: 8,
        ..Limits::DEFAULT
    };
    let (pools, receipt) = with_mem(limits).await;
    let _held: Vec<_> = futures_held(&pools, &receipt, 3).await;
    let config = section().check().expect("a valid section");
    let refused = ClusterAgent::start(
        pools.clone(),
        Arc::new(Cuttable::default()) as Arc<dyn Board>,
        config,
        &tokio::runtime::Handle::current(),
    )
    .expect_err("3 run, the floor is 2");
    assert!(
        matches!(
            refused,
            provider_pools::cluster::ClusterError::Engine(provider_pools::LowerError::InUse {
                used: 3,
                ..
            })
        ),
        "{refused:?}"
    );
    // No ceiling was left behind: a fourth request runs at once.
    let _fourth = running(&pools, &receipt, "t", 50).await;
}

/// `section()` with a cluster rate on `mem`: 40 per second for the
/// cluster, a floor of 5 each, so a alone may take the 30 left.
fn rate_section() -> ClusterSection {
    ClusterSection {
        rates: vec![RateSection {
            provider: "mem".into(),
            requests: 40,
            period_ms: 1_000,
            floor: 5,
        }],
        ..section()
    }
}

/// `mem`'s requests per second in force now, by the engine's clock.
fn rate_now(pools: &ProviderPools) -> u32 {
    let mem = ProviderId::new("mem").expect("valid");
    let reading = pools.provider_rate(&mem).expect("mem has a rate");
    assert_eq!(reading.rate.period, Duration::from_secs(1));
    reading.rate.requests
}

#[tokio::test(start_paused = true)]
async fn a_nodes_rate_share_lapses_to_its_floor_rate_at_its_contact_deadline() {
    let limits = Limits {
        running_per_provider: 8,
        ..Limits::DEFAULT
    };
    let (pools, _receipt) = with_mem(limits).await;
    let mem = ProviderId::new("mem").expect("valid");
    pools
        .configure_provider_rate(&mem, RateLimit::new(100, Duration::from_secs(1), 4))
        .expect("a rate");
    let board = Arc::new(Cuttable::default());
    let config = rate_section().check().expect("a valid section");
    let agent = ClusterAgent::start(
        pools.clone(),
        Arc::clone(&board) as Arc<dyn Board>,
        config,
        &tokio::runtime::Handle::current(),
    )
    .expect("the agent starts");
    assert_eq!(rate_now(&pools), 5, "the floor rate is in force at start");

    // Alone, a takes the whole dynamic pool: 5 + 30 per second, with the
    // burst configured on the node.
    for _ in 0..10 {
        if rate_now(&pools) == 35 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let reading = pools.provider_rate(&mem).expect("mem has a rate");
    assert_eq!(
        reading.rate,
        RateLimit::new(35, Duration::from_secs(1), 4),
        "{:?}",
        agent.status()
    );
    assert_eq!(agent.status().rates.get(&mem).map(|r| r.in_force), Some(30));

    // Cut off, the share stands up to the contact deadline and lapses at
    // it, by the engine's clock alone.
    let until = agent.status().contact_until.expect("in contact");
    board.cut.store(true, Ordering::SeqCst);
    tokio::time::sleep_until(until - Duration::from_millis(1)).await;
    assert_eq!(rate_now(&pools), 35);
    tokio::time::sleep_until(until).await;
    assert_eq!(rate_now(&pools), 5, "the floor rate once contact lapsed");

    // Back in contact, the share comes back.
    board.cut.store(false, Ordering::SeqCst);
    for _ in 0..20 {
        if rate_now(&pools) == 35 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(rate_now(&pools), 35, "{:?}", agent.status());
    let stopped = bounded("the agent stops", agent.stop(Duration::from_secs(1))).await;
    assert!(stopped.expect("stops").left, "it leaves cleanly");
    assert_eq!(rate_now(&pools), 5, "leaving puts the floor rate back");
}

#[tokio::test(start_paused = true)]
async fn a_cluster_rate_needs_a_rate_configured_on_the_node() {
    let (pools, _receipt) = with_mem(Limits::DEFAULT).await;
    let config = rate_section().check().expect("a valid section");
    let refused = ClusterAgent::start(
        pools,
        Arc::new(Cuttable::default()) as Arc<dyn Board>,
        config,
        &tokio::runtime::Handle::current(),
    );
    match refused {
        Err(ClusterError::Config { key, message }) => {
            assert_eq!(key, "cluster.rate.provider");
            assert!(message.contains("no rate configured"), "{message}");
        }
        other => panic!("not refused as expected: {other:?}"),
    }
}

/// One node of [`two_rate_nodes`]: its registry, its agent and its
/// tenants' requests, waiting or granted (and held running).
type RateNode = (ProviderPools, ClusterAgent, Vec<Result<PoolReady, Admit>>);

/// Starts an admission for `tenant` and polls it once: the grant if it
/// came at once (held, so it keeps running), else the waiting admission.
async fn admit_and_hold(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &str,
    session: u64,
) -> Result<PoolReady, Admit> {
    let admitting = pools.clone();
    let admit = request(pools, plan(tenant, session), receipt, b"");
    let mut future: Admit = Box::pin(async move { admitting.admit(admit).await });
    match std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await {
        Poll::Pending => Err(future),
        Poll::Ready(answer) => Ok(answer.expect("granted")),
    }
}

/// Two nodes on one control plane under `rate_section`'s cluster rate,
/// `mem` at 100 a second on each: x and y wait on a, z on b, with z of
/// weight `z_weight` on b. Grants are held, so every tenant keeps requests
/// waiting throughout (behind the node's running ceiling).
async fn two_rate_nodes(z_weight: u32) -> Vec<RateNode> {
    let mem = ProviderId::new("mem").expect("valid");
    let board = Arc::new(Cuttable::default());
    let mut nodes = Vec::new();
    for (name, tenants) in [("a", &[("x", 6), ("y", 6)][..]), ("b", &[("z", 15)][..])] {
        let limits = Limits {
            running_per_provider: 8,
            ..Limits::DEFAULT
        };
        let (pools, receipt) = with_mem(limits).await;
        pools
            .configure_provider_rate(&mem, RateLimit::new(100, Duration::from_secs(1), 4))
            .expect("a rate");
        if name == "b" {
            let z = provider_pools::TenantId::new("z").expect("valid");
            pools.set_tenant_weight(&z, z_weight).expect("a weight");
        }
        let section = ClusterSection {
            node: name.into(),
            ..rate_section()
        };
        let agent = ClusterAgent::start(
            pools.clone(),
            Arc::clone(&board) as Arc<dyn Board>,
            section.check().expect("a valid section"),
            &tokio::runtime::Handle::current(),
        )
        .expect("the agent starts");
        let mut held = Vec::new();
        for (tenant, count) in tenants {
            for session in 0..*count {
                held.push(admit_and_hold(&pools, &receipt, tenant, session).await);
            }
        }
        nodes.push((pools, agent, held));
    }
    nodes
}

/// Advances the paused clock a period at a time, at most 20, until the
/// nodes' rate shares above their floors are `expected`, and checks that
/// they stay so for 6 more periods (the division converged there, not on
/// its way elsewhere) while requests still wait on both nodes.
async fn rate_shares_become(nodes: &[RateNode], expected: [u32; 2]) {
    let mem = ProviderId::new("mem").expect("valid");
    let shares = || -> Vec<u32> {
        nodes
            .iter()
            .map(|(_, agent, _)| agent.status().rates.get(&mem).map_or(0, |r| r.in_force))
            .collect()
    };
    for _ in 0..20 {
        if shares() == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for _ in 0..6 {
        assert_eq!(shares(), expected, "{:?}", nodes[0].1.status());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(shares(), expected, "{:?}", nodes[0].1.status());
    let waiting: Vec<u32> = nodes
        .iter()
        .map(|(pools, _, _)| pools.provider_demand(&mem).iter().map(|d| d.pending).sum())
        .collect();
    assert!(
        waiting.iter().all(|&w| w > 0),
        "requests still wait on both nodes: {waiting:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_rate_is_shared_equally_by_the_tenants_waiting_wherever_they_wait() {
    // The 30 above the floors go 10 to each tenant: a holds 20, b 10,
    // whatever the number of requests each tenant has waiting.
    let nodes = two_rate_nodes(1).await;
    rate_shares_become(&nodes, [20, 10]).await;
    assert_eq!(rate_now(&nodes[0].0), 25, "a's rate in force");
    assert_eq!(rate_now(&nodes[1].0), 15, "b's rate in force");
}

#[tokio::test(start_paused = true)]
async fn a_tenants_weight_set_on_its_node_weights_its_share_of_the_cluster_rate() {
    // z of weight 2 against x and y of weight 1: the 30 above the floors
    // go 7.5 : 7.5 : 15, the half unit to y (the later served), so a
    // holds 15 and b 15.
    let nodes = two_rate_nodes(2).await;
    rate_shares_become(&nodes, [15, 15]).await;
    assert_eq!(rate_now(&nodes[0].0), 20, "a's rate in force");
    assert_eq!(rate_now(&nodes[1].0), 20, "b's rate in force");
}
