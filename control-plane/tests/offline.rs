//! The offline client answers every call with the offline error.

use std::time::Duration;

use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, FencingToken, LeaseGrant, LeaseKey, LeaseName, LeaseRequest,
    NodeId, OfflineClient, Registration, ServiceGroup,
};

#[tokio::test]
async fn every_call_answers_offline() {
    let client = OfflineClient;
    let service = ServiceGroup::new("billing").expect("service");
    let node = NodeId::new("node-a").expect("node");
    let key = LeaseKey::Global(LeaseName::new("leader").expect("lease"));
    let ttl = Duration::from_secs(1);
    let registration =
        Registration::new(service.clone(), node.clone(), "10.0.0.1:80", ttl).expect("registration");
    let grant = LeaseGrant {
        key: key.clone(),
        holder: node.clone(),
        token: FencingToken(1),
        ttl,
    };
    let request = LeaseRequest::new(key.clone(), node, ttl).expect("request");
    let results = [
        (
            "register",
            client.register(registration.clone()).await.err(),
        ),
        (
            "heartbeat",
            client.heartbeat(registration.key().clone()).await.err(),
        ),
        (
            "deregister",
            client.deregister(registration.key().clone()).await.err(),
        ),
        ("discover", client.discover(service).await.err()),
        ("acquire", client.acquire(request).await.err()),
        ("renew", client.renew(grant.clone()).await.err()),
        ("release", client.release(grant).await.err()),
        ("read_lease", client.read_lease(key).await.err()),
    ];
    for (call, error) in results {
        assert!(
            matches!(error, Some(ControlPlaneError::Offline)),
            "{call}: {error:?}"
        );
    }
}
