//! The conformance suite and its board part against the etcd backend, on a real etcd
//! (Debian's etcd-server, installed by `scripts/peers`) in real time: etcd
//! expires leases itself, so `elapse` sleeps.
//!
//! Cases that run at the same time share one etcd (stopped when the last
//! of them ends); each backend has its own key prefix, so no case sees
//! another's keys.

mod conformance;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use conformance::board::BoardBackend;
use conformance::Backend;
use provider_pools_control_plane::etcd::{EtcdClient, EtcdConfig};
use provider_pools_control_plane::{Board, BoxFuture, ControlPlane};
use provider_pools_test_peers::{Etcd, Peer, SharedPeer};

static ETCD: SharedPeer = SharedPeer::new(Etcd::start);
static NEXT_PREFIX: AtomicUsize = AtomicUsize::new(0);

struct EtcdBackend {
    config: EtcdConfig,
    _etcd: Arc<Peer>,
}

impl EtcdBackend {
    async fn start() -> Self {
        let etcd = tokio::task::block_in_place(|| ETCD.get());
        let prefix = format!(
            "/conformance-{}-{}/",
            std::process::id(),
            NEXT_PREFIX.fetch_add(1, Ordering::Relaxed)
        );
        let config = EtcdConfig::new(format!("http://{}", etcd.addr())).with_prefix(prefix);
        Self {
            config,
            _etcd: etcd,
        }
    }
}

impl Backend for EtcdBackend {
    fn client(&self) -> Arc<dyn ControlPlane> {
        // A new client per call: two clients are two nodes sharing etcd.
        Arc::new(EtcdClient::new(self.config.clone()).expect("valid config"))
    }

    fn ttl(&self) -> Duration {
        // etcd's minimum lease TTL with the default 100 ms heartbeat and
        // 1 s election timeout is 1.5 s, granted as 2 whole seconds.
        Duration::from_secs(2)
    }

    fn elapse(&self, by: Duration) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(by))
    }

    fn expiry_slack(&self) -> Duration {
        // etcd looks for expired leases every 500 ms, then revokes them
        // through raft.
        Duration::from_secs(5)
    }
}

impl BoardBackend for EtcdBackend {
    fn board(&self) -> Arc<dyn Board> {
        Arc::new(EtcdClient::new(self.config.clone()).expect("valid config"))
    }
}

conformance_suite!(async { EtcdBackend::start().await });
board_suite!(async { EtcdBackend::start().await });
