//! The etcd backend's bounds and time-to-live handling, on a real etcd:
//! discovery and reading posts never truncate silently, responses are bounded, insecure
//! endpoints are refused, and a renewal with another time to live rebinds
//! the lease without changing its token.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use provider_pools_control_plane::etcd::{EtcdClient, EtcdConfig};
use provider_pools_control_plane::{
    Board, ControlPlane, ControlPlaneError, ErrorCode, LeaseGrant, LeaseKey, LeaseName,
    LeaseRequest, NodeId, Registration, ServiceGroup, TopicName,
};
use provider_pools_test_peers::{Etcd, SharedPeer};

static ETCD: SharedPeer = SharedPeer::new(Etcd::start);
static NEXT_PREFIX: AtomicUsize = AtomicUsize::new(0);

fn config(etcd: &provider_pools_test_peers::Peer) -> EtcdConfig {
    let prefix = format!(
        "/bounds-{}-{}/",
        std::process::id(),
        NEXT_PREFIX.fetch_add(1, Ordering::Relaxed)
    );
    EtcdConfig::new(format!("http://{}", etcd.addr())).with_prefix(prefix)
}

fn registration(node: &str, metadata_bytes: usize) -> Registration {
    let registration = Registration::new(
        ServiceGroup::new("billing").expect("valid"),
        NodeId::new(node).expect("valid"),
        "10.0.0.1:8443",
        Duration::from_secs(30),
    )
    .expect("valid");
    if metadata_bytes == 0 {
        return registration;
    }
    registration
        .with_metadata("padding", "x".repeat(metadata_bytes))
        .expect("valid")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_over_its_instance_bound_is_refused_not_truncated() {
    let etcd = tokio::task::block_in_place(|| ETCD.get());
    let client = EtcdClient::new(config(&etcd).with_max_discovered(2)).expect("valid");
    let billing = ServiceGroup::new("billing").expect("valid");
    for node in ["node-a", "node-b"] {
        client
            .register(registration(node, 0))
            .await
            .expect("registered");
    }
    assert_eq!(
        client.discover(billing.clone()).await.expect("two").len(),
        2
    );
    client
        .register(registration("node-c", 0))
        .await
        .expect("registered");
    let error = client.discover(billing).await.expect_err("three");
    assert!(
        matches!(
            error,
            ControlPlaneError::LimitExceeded {
                limit: "discovered instances"
            }
        ),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_posts_over_the_instance_bound_is_refused_not_truncated() {
    let etcd = tokio::task::block_in_place(|| ETCD.get());
    let client = EtcdClient::new(config(&etcd).with_max_discovered(2)).expect("valid");
    let demand = TopicName::new("demand").expect("valid");
    let read = || client.read_posts(ServiceGroup::new("billing").expect("valid"), demand.clone());
    for node in ["node-a", "node-b", "node-c"] {
        let registration = registration(node, 0);
        client
            .register(registration.clone())
            .await
            .expect("registered");
        client
            .post(registration.key().clone(), demand.clone(), node.into())
            .await
            .expect("posted");
        if node == "node-b" {
            assert_eq!(read().await.expect("two").len(), 2);
        }
    }
    let error = read().await.expect_err("three");
    assert!(
        matches!(
            error,
            ControlPlaneError::LimitExceeded {
                limit: "discovered instances"
            }
        ),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_over_the_byte_bound_is_refused() {
    let etcd = tokio::task::block_in_place(|| ETCD.get());
    let client = EtcdClient::new(config(&etcd).with_max_response_bytes(1024)).expect("valid");
    for node in ["node-a", "node-b", "node-c"] {
        client
            .register(registration(node, 400))
            .await
            .expect("registered");
    }
    let error = client
        .discover(ServiceGroup::new("billing").expect("valid"))
        .await
        .expect_err("over 1 KiB");
    assert!(
        matches!(
            error,
            ControlPlaneError::TooLarge {
                what: "etcd response",
                limit: 1024
            }
        ),
        "{error:?}"
    );
}

#[test]
fn an_insecure_endpoint_is_refused_before_any_request() {
    for endpoint in [
        "http://10.0.0.7:2379",
        "https://root:secret@etcd.example:2379",
    ] {
        let error = EtcdClient::new(EtcdConfig::new(endpoint)).expect_err(endpoint);
        assert_eq!(error.code(), ErrorCode::InsecureEndpoint, "{endpoint}");
        assert!(!error.to_string().contains("secret"), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_with_another_ttl_rebinds_the_lease_and_keeps_its_token() {
    let etcd = tokio::task::block_in_place(|| ETCD.get());
    let client = EtcdClient::new(config(&etcd)).expect("valid");
    let key = LeaseKey::Global(LeaseName::new("leader").expect("valid"));
    let node = NodeId::new("node-a").expect("valid");
    let grant = client
        .acquire(
            LeaseRequest::new(key.clone(), node.clone(), Duration::from_secs(2)).expect("valid"),
        )
        .await
        .expect("acquired");
    let longer = LeaseGrant {
        ttl: Duration::from_secs(20),
        ..grant.clone()
    };
    assert_eq!(
        client.renew(longer).await.expect("renewed").token,
        grant.token
    );
    let state = client
        .read_lease(key.clone())
        .await
        .expect("read")
        .expect("held");
    assert!(state.is_held_by(&node, grant.token), "{state:?}");
    let remaining = state.remaining.expect("held");
    assert!(
        remaining > Duration::from_secs(2) && remaining <= Duration::from_secs(20),
        "the server keeps the lease for the new time to live: {remaining:?}"
    );
    // Back to the short time to live by re-acquiring: same token again.
    let again = client
        .acquire(
            LeaseRequest::new(key.clone(), node.clone(), Duration::from_secs(2)).expect("valid"),
        )
        .await
        .expect("re-acquired");
    assert_eq!(again.token, grant.token);
    let remaining = client
        .read_lease(key)
        .await
        .expect("read")
        .and_then(|state| state.remaining)
        .expect("held");
    assert!(remaining <= Duration::from_secs(2), "{remaining:?}");
}
