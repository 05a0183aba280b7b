//! How the etcd backend reports a lease write that may have applied: a
//! relay between the client and a real etcd forwards a chosen request, then
//! withholds etcd's answer (closing the connection, or holding it past the
//! client's deadline). Such a write is `OutcomeUnknown`, never replayed,
//! and reading the lease back settles it; a write that never left (no
//! connection) is a plain transport error.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use provider_pools_control_plane::client::acquire_guarded;
use provider_pools_control_plane::etcd::{EtcdClient, EtcdConfig};
use provider_pools_control_plane::lease::SkewMargin;
use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, ErrorCode, LeaseKey, LeaseName, LeaseRequest, NodeId,
    ServiceGroup,
};
use provider_pools_test_peers::{free_port, Etcd, SharedPeer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

static ETCD: SharedPeer = SharedPeer::new(Etcd::start);

/// What the relay does to the next request whose request line holds the
/// path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Withhold {
    /// Forward it, then close the connection once etcd answered.
    Close,
    /// Forward it and never answer.
    Stall,
}

#[derive(Clone, Default)]
struct Fault(Arc<Mutex<Option<(&'static str, Withhold)>>>);

impl Fault {
    fn arm(&self, path: &'static str, withhold: Withhold) {
        *self.0.lock().expect("fault") = Some((path, withhold));
    }

    /// The armed fault, disarmed, if `bytes` start a request for its path.
    fn take_if_hit(&self, bytes: &[u8]) -> Option<Withhold> {
        let mut armed = self.0.lock().expect("fault");
        let (path, withhold) = (*armed)?;
        let line = format!("POST {path} ");
        let hit = bytes
            .windows(line.len())
            .any(|window| window == line.as_bytes());
        hit.then(|| {
            *armed = None;
            withhold
        })
    }
}

/// A TCP relay to etcd on a loopback port, injecting `fault`.
#[allow(clippy::disallowed_methods, reason = "tests own their tasks")]
async fn relay(etcd: SocketAddr, fault: Fault) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(relay_one(client, etcd, fault.clone()));
        }
    });
    addr
}

#[allow(clippy::disallowed_methods, reason = "tests own their tasks")]
async fn relay_one(client: TcpStream, etcd: SocketAddr, fault: Fault) {
    let Ok(upstream) = TcpStream::connect(etcd).await else {
        return;
    };
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_etcd, mut to_etcd) = upstream.into_split();
    let withheld: Arc<Mutex<Option<Withhold>>> = Arc::default();
    let answered = Arc::new(AtomicBool::new(false));
    let down = {
        let withheld = withheld.clone();
        let answered = answered.clone();
        tokio::spawn(async move {
            let mut buffer = vec![0; 16 * 1024];
            while let Ok(read) = from_etcd.read(&mut buffer).await {
                if read == 0 {
                    break;
                }
                match *withheld.lock().expect("withheld") {
                    // etcd answered, so the write applied: close on the
                    // client without a byte of the answer.
                    Some(Withhold::Close) => {
                        answered.store(true, Ordering::SeqCst);
                        return;
                    }
                    Some(Withhold::Stall) => continue,
                    None => {}
                }
                if to_client.write_all(&buffer[..read]).await.is_err() {
                    break;
                }
            }
            drop(to_client);
        })
    };
    let mut buffer = vec![0; 64 * 1024];
    while let Ok(read) = from_client.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        if let Some(withhold) = fault.take_if_hit(&buffer[..read]) {
            *withheld.lock().expect("withheld") = Some(withhold);
        }
        if to_etcd.write_all(&buffer[..read]).await.is_err() {
            break;
        }
    }
    let _ = down.await;
}

fn client(addr: SocketAddr, prefix: &str, timeout: Duration) -> EtcdClient {
    EtcdClient::new(
        EtcdConfig::new(format!("http://{addr}"))
            .with_prefix(prefix)
            .with_request_timeout(timeout),
    )
    .expect("valid config")
}

fn request(name: &str, holder: &str) -> LeaseRequest {
    LeaseRequest::new(
        LeaseKey::Global(LeaseName::new(name).expect("valid")),
        NodeId::new(holder).expect("valid"),
        Duration::from_secs(10),
    )
    .expect("valid request")
}

fn assert_unknown(result: Result<impl std::fmt::Debug, ControlPlaneError>, operation: &str) {
    match result {
        Err(ControlPlaneError::OutcomeUnknown { operation: named }) => {
            assert_eq!(named, operation)
        }
        other => panic!("expected an unknown {operation} outcome, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquisition_cut_after_sending_is_unknown_and_reading_back_settles_it() {
    let etcd = tokio::task::block_in_place(|| ETCD.get());
    let fault = Fault::default();
    let addr = relay(etcd.addr(), fault.clone()).await;
    let client = client(addr, "/outcomes-acquire/", Duration::from_secs(5));

    fault.arm("/v3/kv/txn", Withhold::Close);
    assert_unknown(client.acquire(request("cut", "node-a")).await, "acquire");
    let state = client
        .read_lease(request("cut", "node-a").key)
        .await
        .expect("read back")
        .expect("the acquisition applied");
    assert_eq!(state.holder.as_ref().map(NodeId::as_str), Some("node-a"));

    // The guarded acquisition settles the same way, by reading back.
    fault.arm("/v3/kv/txn", Withhold::Close);
    let guard = acquire_guarded(
        &client,
        request("guarded", "node-a"),
        SkewMargin(Duration::from_millis(500)),
    )
    .await
    .expect("settled as held");
    let state = client
        .read_lease(request("guarded", "node-a").key)
        .await
        .expect("read back")
        .expect("held");
    assert!(state.is_held_by(&NodeId::new("node-a").expect("valid"), guard.token()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_or_release_cut_after_sending_is_unknown_and_was_applied() {
    let etcd = tokio::task::block_in_place(|| ETCD.get());
    let fault = Fault::default();
    let addr = relay(etcd.addr(), fault.clone()).await;
    let client = client(addr, "/outcomes-renew/", Duration::from_secs(5));
    let grant = client
        .acquire(request("leader", "node-a"))
        .await
        .expect("acquired");

    fault.arm("/v3/lease/keepalive", Withhold::Close);
    assert_unknown(client.renew(grant.clone()).await, "renew");
    let state = client
        .read_lease(grant.key.clone())
        .await
        .expect("read back")
        .expect("exists");
    assert!(state.is_held_by(&grant.holder, grant.token), "{state:?}");

    fault.arm("/v3/kv/txn", Withhold::Close);
    assert_unknown(client.release(grant.clone()).await, "release");
    let state = client
        .read_lease(grant.key.clone())
        .await
        .expect("read back")
        .expect("the slot keeps its token");
    assert_eq!((state.holder, state.token), (None, grant.token));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_lease_write_is_unknown_and_a_stalled_read_times_out() {
    let etcd = tokio::task::block_in_place(|| ETCD.get());
    let fault = Fault::default();
    let addr = relay(etcd.addr(), fault.clone()).await;
    let client = client(addr, "/outcomes-stall/", Duration::from_millis(500));

    fault.arm("/v3/kv/txn", Withhold::Stall);
    assert_unknown(
        client.acquire(request("stalled", "node-a")).await,
        "acquire",
    );

    fault.arm("/v3/kv/range", Withhold::Stall);
    let error = client
        .discover(ServiceGroup::new("billing").expect("valid"))
        .await
        .expect_err("stalled");
    assert!(matches!(error, ControlPlaneError::Timeout), "{error:?}");
}

#[tokio::test]
async fn an_unreachable_etcd_is_a_transport_error_even_for_lease_writes() {
    let nothing = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let client = client(nothing, "/outcomes-unreachable/", Duration::from_secs(2));
    let error = client
        .acquire(request("leader", "node-a"))
        .await
        .expect_err("unreachable");
    assert_eq!(error.code(), ErrorCode::Transport, "{error:?}");
    assert!(error.to_string().contains("connect"), "{error}");
    let grant = provider_pools_control_plane::LeaseGrant {
        key: request("leader", "node-a").key,
        holder: NodeId::new("node-a").expect("valid"),
        token: provider_pools_control_plane::FencingToken(1),
        ttl: Duration::from_secs(10),
    };
    for error in [
        client.renew(grant.clone()).await.expect_err("unreachable"),
        client
            .release(grant)
            .await
            .map(|_| ())
            .expect_err("unreachable"),
    ] {
        assert_eq!(error.code(), ErrorCode::Transport, "{error:?}");
    }
}
