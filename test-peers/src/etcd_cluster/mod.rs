//! [`EtcdCluster`]: N etcd members forming one cluster on loopback, for
//! tests of what a leader change or a lost member does to a cluster-wide
//! feature.
//!
//! Invariants:
//! - All 2×N ports (a client and a peer port per member) are chosen before
//!   the first member starts: every member's `--initial-cluster` names
//!   every member's peer URL.
//! - A start in which a member exits before the cluster answers (most
//!   likely a port taken between [`free_port`] and etcd's bind) is retried
//!   whole, on fresh ports under a fresh cluster token, at most three times.
//! - Ready means every member answers `/v3/maintenance/status` from one
//!   cluster (the same `cluster_id`, distinct member ids) and they agree on
//!   a leader: a probe that reached a foreign process does not count.
//! - Every wait is bounded; its failure says what each member answered
//!   and ends with the members' logs.
//! - Each member is a [`Peer`] with its own data directory: dropping the
//!   cluster kills and reaps every member before its directory is removed.

use std::fmt;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::peer::{free_port, Peer, PeerCommand};
use crate::peers::ETCD_MEMBER_ARGS;

mod status;

use status::{leader_among, one_cluster, status, Answer};

/// How long a fresh cluster may take to answer and elect a leader.
const READY_WITHIN: Duration = Duration::from_secs(30);
/// How many times a whole cluster is started again on other ports when a
/// member exited before the cluster answered.
const START_ATTEMPTS: usize = 3;
/// How many of each member's last log lines a failure message carries.
const LOG_LINES: usize = 15;
/// Raft's heartbeat, in milliseconds: half etcd's default (100), keeping
/// its default ratio of ten heartbeats per election timeout.
const HEARTBEAT_MS: u32 = 50;
/// Raft's election timeout, in milliseconds: half etcd's default (1000);
/// etcd refuses one under five heartbeats. Followers notice a killed
/// leader after 500 ms to 1 s (raft randomises the timeout up to twice
/// this), then elect a new one within a round trip on loopback.
const ELECTION_MS: u32 = 500;

/// N etcd members (Debian's etcd-server 3.4) forming one cluster on
/// loopback, each with its own client port, peer port and data directory.
/// Member `i` is named `m<i>`; its client URL is [`EtcdCluster::endpoint`].
pub struct EtcdCluster {
    /// The members, in index order; each [`Peer`]'s address is its client
    /// URL's. A lock only so that [`EtcdCluster::is_running`] can reap an
    /// exited process through `&self`.
    members: Vec<Mutex<Peer>>,
    clients: Vec<SocketAddr>,
    /// Each member's raft id, as its status names it.
    ids: Vec<u64>,
}

impl EtcdCluster {
    /// Starts `members` etcd members as one new cluster and waits (at most
    /// 30 s) until every member answers and they agree on a leader.
    ///
    /// # Panics
    ///
    /// When `members` is 0, etcd is not installed, a member exits before
    /// the cluster answers three starts in a row, or the cluster does not
    /// answer in time; the message says what each member answered and
    /// ends with their logs.
    pub fn start(members: usize) -> Self {
        assert!(members > 0, "an etcd cluster needs at least one member");
        let mut last_failure = String::new();
        for _ in 0..START_ATTEMPTS {
            match Self::try_start(members) {
                Ok(cluster) => return cluster,
                Err(failure) => last_failure = failure,
            }
        }
        panic!(
            "test peer etcd cluster of {members}: a member exited before the cluster answered, \
             {START_ATTEMPTS} times; the last time:\n{last_failure}"
        );
    }

    /// One start on fresh ports; `Err` when a member exited early (the
    /// caller tries again), a panic when the cluster does not answer in
    /// time.
    fn try_start(members: usize) -> Result<Self, String> {
        static CLUSTERS: AtomicU64 = AtomicU64::new(0);
        let token = format!(
            "pp-test-{}-{}",
            std::process::id(),
            CLUSTERS.fetch_add(1, Ordering::Relaxed)
        );
        let ports: Vec<(u16, u16)> = (0..members).map(|_| (free_port(), free_port())).collect();
        let initial_cluster = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = Self {
            members: Vec::with_capacity(members),
            clients: Vec::with_capacity(members),
            ids: Vec::new(),
        };
        for (i, &(client, peer)) in ports.iter().enumerate() {
            let member = member_command(i, &initial_cluster, &token).spawn(client, peer);
            cluster.clients.push(member.addr());
            cluster.members.push(Mutex::new(member));
        }
        let until = Instant::now() + READY_WITHIN;
        loop {
            if let Some(i) = (0..members).find(|&i| !cluster.is_running(i)) {
                return Err(format!(
                    "member m{i} exited; its log ends:\n{}",
                    cluster.member(i).log_tail()
                ));
            }
            let answers = cluster.answers();
            if let Some(ids) = one_cluster(&answers) {
                cluster.ids = ids;
                if leader_among(&cluster.ids, &answers).is_some() {
                    return Ok(cluster);
                }
            }
            if Instant::now() >= until {
                panic!(
                    "test peer etcd cluster of {members} did not answer with a leader within \
                     {READY_WITHIN:?}; {}",
                    cluster.describe(&answers)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Each member's client URL, `http://127.0.0.1:<port>`, in index order.
    pub fn endpoints(&self) -> Vec<String> {
        (0..self.clients.len()).map(|i| self.endpoint(i)).collect()
    }

    /// Member `i`'s client URL, `http://127.0.0.1:<port>`.
    ///
    /// # Panics
    ///
    /// When the cluster has no member `i`.
    pub fn endpoint(&self, i: usize) -> String {
        format!("http://{}", self.client(i))
    }

    /// The index of the current leader: the live member that names itself
    /// leader at the highest raft term, when every live member that
    /// answers names it too. `None` while an election is under way (or a
    /// killed leader is still named by followers that have not noticed).
    pub fn leader(&self) -> Option<usize> {
        leader_among(&self.ids, &self.answers())
    }

    /// Waits (at most `timeout`) until the live members agree on a leader
    /// (see [`EtcdCluster::leader`]) and returns its index.
    ///
    /// # Panics
    ///
    /// When they do not in time; the message says what each member
    /// answered last and ends with their logs.
    pub fn wait_for_leader(&self, timeout: Duration) -> usize {
        let until = Instant::now() + timeout;
        loop {
            let answers = self.answers();
            if let Some(leader) = leader_among(&self.ids, &answers) {
                return leader;
            }
            if Instant::now() >= until {
                panic!(
                    "test peer etcd cluster: no leader among the live members within {timeout:?}; {}",
                    self.describe(&answers)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills member `i` with SIGKILL and waits for it to exit; its data
    /// directory stays until the cluster drops. Killing a dead member does
    /// nothing.
    ///
    /// # Panics
    ///
    /// When the cluster has no member `i`.
    pub fn kill(&mut self, i: usize) {
        self.member(i).kill();
    }

    /// True while member `i`'s process runs.
    ///
    /// # Panics
    ///
    /// When the cluster has no member `i`.
    pub fn is_running(&self, i: usize) -> bool {
        !self.member(i).has_exited()
    }

    fn client(&self, i: usize) -> SocketAddr {
        *self.clients.get(i).unwrap_or_else(|| self.no_member(i))
    }

    fn member(&self, i: usize) -> MutexGuard<'_, Peer> {
        self.members
            .get(i)
            .unwrap_or_else(|| self.no_member(i))
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn no_member(&self, i: usize) -> ! {
        panic!(
            "the etcd cluster has {} members, no member {i}",
            self.members.len()
        )
    }

    /// Each member's status, or why there is none.
    fn answers(&self) -> Vec<Answer> {
        (0..self.clients.len())
            .map(|i| {
                if self.is_running(i) {
                    status(self.clients[i])
                } else {
                    Err("not running".to_owned())
                }
            })
            .collect()
    }

    /// What each member answered, then each member's log.
    fn describe(&self, answers: &[Answer]) -> String {
        let mut text = String::from("the members answered:\n");
        for (i, answer) in answers.iter().enumerate() {
            let _ = match answer {
                Ok(s) => writeln!(
                    text,
                    "  m{i} ({}): member {}, leader {}, term {}, cluster {}",
                    self.client(i),
                    s.member_id,
                    s.leader,
                    s.raft_term,
                    s.cluster_id
                ),
                Err(why) => writeln!(text, "  m{i} ({}): {why}", self.client(i)),
            };
        }
        for i in 0..self.clients.len() {
            let log = self.member(i).log_tail();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(LOG_LINES)..].join("\n");
            let _ = write!(text, "m{i}'s log ends:\n{tail}\n");
        }
        text
    }
}

impl fmt::Debug for EtcdCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdCluster")
            .field("clients", &self.clients)
            .finish_non_exhaustive()
    }
}

/// Member `i`'s start line; `{port}` is its client port, `{port2}` its
/// peer port.
fn member_command(i: usize, initial_cluster: &str, token: &str) -> PeerCommand {
    PeerCommand::new("etcd")
        .args(["--name".to_owned(), format!("m{i}")])
        .args(ETCD_MEMBER_ARGS)
        .args(["--initial-cluster-state", "new"])
        .args([
            "--initial-cluster".to_owned(),
            initial_cluster.to_owned(),
            "--initial-cluster-token".to_owned(),
            token.to_owned(),
            format!("--heartbeat-interval={HEARTBEAT_MS}"),
            format!("--election-timeout={ELECTION_MS}"),
        ])
}
