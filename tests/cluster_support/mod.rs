//! Test support for the cluster tests: a real etcd cluster, the counting
//! origin and nodes of `examples/cluster`, workers per node, and bounded
//! waits that say what they waited for.

#![allow(dead_code, reason = "each cluster test binary uses a part")]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use provider_pools_test_peers::EtcdCluster;
use tokio::task::JoinSet;
use tokio::time::Instant;

#[allow(unused_imports, reason = "each cluster test binary uses a part")]
pub(crate) use crate::node::{jain, ClusterNode, ClusterRate, Settings};
pub(crate) use crate::origin::{start as start_origin, Origin};

/// The provider's global ceiling in these tests.
pub(crate) const GLOBAL: u32 = 12;
/// One lease period (the settings' time to live).
pub(crate) const LEASE: Duration = Duration::from_millis(2_000);

/// Cluster tests run one at a time: each starts etcd, an origin and
/// nodes, and convergence times mean little on a machine they share.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A multi-threaded runtime of two workers.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// One node and the workers calling through it.
pub(crate) struct Running {
    pub(crate) node: Arc<ClusterNode>,
    stop: Arc<AtomicBool>,
    workers: JoinSet<(u64, u64)>,
}

impl Running {
    /// Starts `name` with `workers` closed-loop workers per tenant of
    /// `tenants`.
    pub(crate) async fn start(
        name: &str,
        members: &[&str],
        etcd: &EtcdCluster,
        origin: &Origin,
        tenants: &[&str],
        workers: usize,
    ) -> Self {
        let settings = Settings::quick(GLOBAL);
        Self::start_with(name, members, etcd, origin, tenants, workers, &settings).await
    }

    /// [`Self::start`] with other `settings`.
    pub(crate) async fn start_with(
        name: &str,
        members: &[&str],
        etcd: &EtcdCluster,
        origin: &Origin,
        tenants: &[&str],
        workers: usize,
        settings: &Settings,
    ) -> Self {
        let node = ClusterNode::start(
            name,
            members,
            &etcd.endpoints(),
            &origin.url,
            settings,
            tenants,
        )
        .await
        .unwrap_or_else(|error| panic!("node {name} starts: {error}"));
        let node = Arc::new(node);
        let stop = Arc::new(AtomicBool::new(false));
        let mut set = JoinSet::new();
        for tenant in tenants {
            for _ in 0..workers {
                set.spawn(Arc::clone(&node).work((*tenant).to_owned(), Arc::clone(&stop)));
            }
        }
        Self {
            node,
            stop,
            workers: set,
        }
    }

    /// Stops the workers, then the node (it leaves the cluster); answers
    /// whether it left cleanly and shut down clean, and how many calls
    /// failed.
    pub(crate) async fn stop(mut self) -> (bool, bool, u64) {
        self.stop.store(true, Ordering::Release);
        let mut failed = 0;
        while let Some(done) = self.workers.join_next().await {
            failed += done.expect("a worker ends").1;
        }
        let node = Arc::into_inner(self.node).expect("no worker holds the node");
        let (status, report) = node.stop().await.expect("the node stops");
        (status.left, report.is_clean(), failed)
    }
}

/// Stops every node; each must leave cleanly, shut down clean, and have
/// seen no failed call.
pub(crate) async fn stop_all(nodes: Vec<Running>) {
    for running in nodes {
        let name = running.node.name.clone();
        let (left, clean, failed) = running.stop().await;
        assert!(
            left && clean && failed == 0,
            "{name}: left {left}, clean {clean}, failed {failed}"
        );
    }
}

/// Polls `condition` every 20 ms until it holds; fails after `limit`
/// naming `what` and the last `state`. Answers the time it took.
pub(crate) async fn within(
    limit: Duration,
    what: &str,
    mut condition: impl FnMut() -> Result<(), String>,
) -> Duration {
    let started = Instant::now();
    loop {
        match condition() {
            Ok(()) => return started.elapsed(),
            Err(state) if started.elapsed() >= limit => {
                panic!("{what}: not within {limit:?}; last seen: {state}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Each node's dynamic share in force, by node.
pub(crate) fn in_force(nodes: &[&ClusterNode]) -> BTreeMap<String, u32> {
    nodes
        .iter()
        .map(|n| {
            let share = n.status().providers.values().map(|p| p.in_force).sum();
            (n.name.clone(), share)
        })
        .collect()
}

/// `Ok` when the nodes' shares in force are exactly `expected`.
pub(crate) fn shares_are(nodes: &[&ClusterNode], expected: &[(&str, u32)]) -> Result<(), String> {
    let seen = in_force(nodes);
    let wanted: BTreeMap<String, u32> = expected
        .iter()
        .map(|(n, s)| ((*n).to_owned(), *s))
        .collect();
    if seen == wanted {
        Ok(())
    } else {
        let detail: Vec<String> = nodes
            .iter()
            .map(|n| {
                let status = n.status();
                format!(
                    "{}: {:?} error {:?}",
                    n.name, status.providers, status.last_error
                )
            })
            .collect();
        Err(format!("{seen:?}, want {wanted:?}; {}", detail.join("; ")))
    }
}

/// Samples the origin's per-tenant requests in flight every 10 ms for
/// `span`; answers each tenant's average.
pub(crate) async fn average_shares(origin: &Origin, tenants: &[&str], span: Duration) -> Vec<f64> {
    let started = Instant::now();
    let mut sums = vec![0u64; tenants.len()];
    let mut samples = 0u64;
    while started.elapsed() < span {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = origin.counts.tenants();
        for (sum, tenant) in sums.iter_mut().zip(tenants) {
            *sum += u64::from(*now.get(*tenant).unwrap_or(&0));
        }
        samples += 1;
    }
    sums.iter()
        .map(|&s| s as f64 / samples.max(1) as f64)
        .collect()
}

/// The environment a child node reads its etcd endpoints from.
const CHILD_ENDPOINTS: &str = "CLUSTER_CHILD_ENDPOINTS";
/// The environment a child node reads its origin from.
const CHILD_ORIGIN: &str = "CLUSTER_CHILD_ORIGIN";

/// Starts the test binary's ignored `child_node` test in a child process
/// on `etcd` and `origin`; returns once it said `child node ready`.
pub(crate) fn spawn_child(etcd: &EtcdCluster, origin: &str) -> std::process::Child {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args(["child_node", "--exact", "--include-ignored", "--nocapture"])
        .env(CHILD_ENDPOINTS, etcd.endpoints().join(","))
        .env(CHILD_ORIGIN, origin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the child node starts");
    let stdout = child.stdout.take().expect("the child's stdout");
    let mut lines = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok);
    let ready = lines.any(|line| line.contains("child node ready"));
    assert!(ready, "the child node never said it was ready");
    // Keep reading, so the child's last lines never meet a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    child
}

/// In the child process: the etcd endpoints and the origin
/// [`spawn_child`] passed; `None` when run as an ordinary test.
pub(crate) fn child_env() -> Option<(Vec<String>, String)> {
    let (Ok(endpoints), Ok(origin)) = (std::env::var(CHILD_ENDPOINTS), std::env::var(CHILD_ORIGIN))
    else {
        return None;
    };
    Some((endpoints.split(',').map(str::to_owned).collect(), origin))
}

/// Sends `signal` to `child`.
pub(crate) fn signal(child: &std::process::Child, signal: rustix::process::Signal) {
    use rustix::process::{kill_process, Pid};
    kill_process(Pid::from_child(child), signal).expect("the child is signalled");
}
