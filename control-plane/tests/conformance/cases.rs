//! The cases of the conformance suite, one behaviour each.

use std::time::Duration;

use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, LeaseGrant, LeaseKey, LeaseName, LeaseRequest, NodeId,
    PresenceKey, Registration, ServiceGroup,
};

use super::Backend;

pub fn node(name: &str) -> NodeId {
    NodeId::new(name).expect("valid node")
}

pub fn service(name: &str) -> ServiceGroup {
    ServiceGroup::new(name).expect("valid service")
}

pub fn global(name: &str) -> LeaseKey {
    LeaseKey::Global(LeaseName::new(name).expect("valid lease"))
}

pub fn registration(backend: &impl Backend, service_name: &str, node_name: &str) -> Registration {
    Registration::new(
        service(service_name),
        node(node_name),
        format!("10.0.0.1:{}", node_name.len() + 8000),
        backend.ttl(),
    )
    .expect("valid registration")
}

pub fn request(backend: &impl Backend, key: &LeaseKey, holder: &str) -> LeaseRequest {
    LeaseRequest::new(key.clone(), node(holder), backend.ttl()).expect("valid request")
}

fn nodes(found: &[Registration]) -> Vec<&str> {
    found
        .iter()
        .map(|registration| registration.node().as_str())
        .collect()
}

/// Waits out `ttl` plus the backend's slack, polling `expired` until it
/// holds; panics naming `what` if it never does.
pub async fn expire<B: Backend, F, Fut>(backend: &B, what: &str, mut expired: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    backend
        .elapse(backend.ttl() + Duration::from_millis(1))
        .await;
    let slack = backend.expiry_slack();
    let step = Duration::from_millis(100);
    let mut waited = Duration::ZERO;
    while !expired().await {
        assert!(
            waited < slack,
            "{what} did not expire within the ttl plus {slack:?}"
        );
        backend.elapse(step).await;
        waited += step;
    }
}

pub async fn registration_is_discovered_ordered_by_node(backend: &impl Backend) {
    let client = backend.client();
    for name in ["node-c", "node-a", "node-b"] {
        client
            .register(registration(backend, "billing", name))
            .await
            .expect("registered");
    }
    let found = client
        .discover(service("billing"))
        .await
        .expect("discovered");
    assert_eq!(nodes(&found), ["node-a", "node-b", "node-c"]);
    assert_eq!(found[0], registration(backend, "billing", "node-a"));
}

pub async fn discovery_is_scoped_to_its_service(backend: &impl Backend) {
    let client = backend.client();
    client
        .register(registration(backend, "billing", "node-a"))
        .await
        .expect("registered");
    client
        .register(registration(backend, "billing-eu", "node-b"))
        .await
        .expect("registered");
    client
        .register(registration(backend, "bill", "node-c"))
        .await
        .expect("registered");
    let found = client
        .discover(service("billing"))
        .await
        .expect("discovered");
    assert_eq!(nodes(&found), ["node-a"]);
    assert!(client
        .discover(service("search"))
        .await
        .expect("discovered")
        .is_empty());
}

pub async fn registering_again_replaces_the_instance(backend: &impl Backend) {
    let client = backend.client();
    client
        .register(registration(backend, "billing", "node-a"))
        .await
        .expect("registered");
    let replacement = Registration::new(
        service("billing"),
        node("node-a"),
        "10.9.9.9:1",
        backend.ttl(),
    )
    .and_then(|registration| registration.with_metadata("zone", "eu-1"))
    .expect("valid");
    client
        .register(replacement.clone())
        .await
        .expect("replaced");
    let found = client
        .discover(service("billing"))
        .await
        .expect("discovered");
    assert_eq!(found, vec![replacement]);
}

pub async fn a_heartbeat_extends_a_live_registration(backend: &impl Backend) {
    let client = backend.client();
    let registration = registration(backend, "billing", "node-a");
    client
        .register(registration.clone())
        .await
        .expect("registered");
    let two_thirds = backend.ttl() * 2 / 3;
    backend.elapse(two_thirds).await;
    client
        .heartbeat(registration.key().clone())
        .await
        .expect("heartbeat");
    backend.elapse(two_thirds).await;
    let found = client
        .discover(service("billing"))
        .await
        .expect("discovered");
    assert_eq!(
        nodes(&found),
        ["node-a"],
        "alive past its first ttl thanks to the heartbeat"
    );
}

pub async fn a_registration_expires_without_heartbeat(backend: &impl Backend) {
    let client = backend.client();
    let registration = registration(backend, "billing", "node-a");
    client
        .register(registration.clone())
        .await
        .expect("registered");
    expire(backend, "the registration", || async {
        client
            .discover(service("billing"))
            .await
            .expect("discovered")
            .is_empty()
    })
    .await;
    let error = client
        .heartbeat(registration.key().clone())
        .await
        .expect_err("expired");
    assert!(
        matches!(error, ControlPlaneError::NotRegistered),
        "{error:?}"
    );
}

pub async fn deregistering_removes_and_is_idempotent(backend: &impl Backend) {
    let client = backend.client();
    let registration = registration(backend, "billing", "node-a");
    client
        .register(registration.clone())
        .await
        .expect("registered");
    client
        .deregister(registration.key().clone())
        .await
        .expect("deregistered");
    assert!(client
        .discover(service("billing"))
        .await
        .expect("discovered")
        .is_empty());
    client
        .deregister(registration.key().clone())
        .await
        .expect("idempotent");
    let absent = PresenceKey {
        service: service("never"),
        node: node("node-z"),
    };
    client
        .deregister(absent.clone())
        .await
        .expect("absent is fine");
    let error = client.heartbeat(absent).await.expect_err("unknown");
    assert!(
        matches!(error, ControlPlaneError::NotRegistered),
        "{error:?}"
    );
}

pub async fn a_first_acquisition_grants_a_positive_token(backend: &impl Backend) {
    let client = backend.client();
    let key = global("scheduler");
    let grant = client
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("acquired");
    assert!(grant.token.get() > 0);
    assert_eq!(
        (grant.key.clone(), grant.holder.as_str(), grant.ttl),
        (key.clone(), "node-a", backend.ttl())
    );
    let state = client.read_lease(key).await.expect("read").expect("exists");
    assert!(state.is_held_by(&node("node-a"), grant.token), "{state:?}");
    let remaining = state.remaining.expect("held leases report time left");
    assert!(remaining <= backend.ttl(), "{remaining:?}");
}

pub async fn a_held_lease_is_refused_to_another_node_naming_the_holder(backend: &impl Backend) {
    let client = backend.client();
    let key = global("scheduler");
    let grant = client
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("acquired");
    let error = client
        .acquire(request(backend, &key, "node-b"))
        .await
        .expect_err("held");
    match error {
        ControlPlaneError::LeaseHeld { holder, token } => {
            assert_eq!((holder, token), (node("node-a"), grant.token));
        }
        other => panic!("expected LeaseHeld, got {other:?}"),
    }
}

pub async fn the_live_holder_reacquires_with_the_same_token(backend: &impl Backend) {
    let client = backend.client();
    let key = global("scheduler");
    let first = client
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("acquired");
    let again = client
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("reacquired");
    assert_eq!(again.token, first.token);
}

pub async fn renewal_keeps_the_token_and_extends_the_lease(backend: &impl Backend) {
    let client = backend.client();
    let key = global("scheduler");
    let grant = client
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("acquired");
    let two_thirds = backend.ttl() * 2 / 3;
    backend.elapse(two_thirds).await;
    let renewed = client.renew(grant.clone()).await.expect("renewed");
    assert_eq!(renewed.token, grant.token);
    backend.elapse(two_thirds).await;
    let state = client
        .read_lease(key.clone())
        .await
        .expect("read")
        .expect("exists");
    assert!(
        state.is_held_by(&node("node-a"), grant.token),
        "still held past the first ttl: {state:?}"
    );
    let error = client
        .acquire(request(backend, &key, "node-b"))
        .await
        .expect_err("held");
    assert!(
        matches!(error, ControlPlaneError::LeaseHeld { .. }),
        "{error:?}"
    );
}

pub async fn renewal_with_a_wrong_token_or_holder_is_lost(backend: &impl Backend) {
    let client = backend.client();
    let key = global("scheduler");
    let grant = client
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("acquired");
    let wrong_token = LeaseGrant {
        token: provider_pools_control_plane::FencingToken(grant.token.get() + 1000),
        ..grant.clone()
    };
    let wrong_holder = LeaseGrant {
        holder: node("node-b"),
        ..grant.clone()
    };
    for forged in [wrong_token, wrong_holder] {
        let error = client
            .renew(forged.clone())
            .await
            .expect_err("not the holder");
        assert!(
            matches!(error, ControlPlaneError::LeaseLost),
            "{forged:?}: {error:?}"
        );
    }
    let state = client.read_lease(key).await.expect("read").expect("exists");
    assert!(
        state.is_held_by(&node("node-a"), grant.token),
        "unchanged: {state:?}"
    );
}

pub async fn release_frees_the_lease_and_keeps_its_token(backend: &impl Backend) {
    let client = backend.client();
    let key = global("scheduler");
    let grant = client
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("acquired");
    client.release(grant.clone()).await.expect("released");
    let state = client
        .read_lease(key.clone())
        .await
        .expect("read")
        .expect("slot kept");
    assert_eq!((&state.holder, state.remaining), (&None, None));
    assert!(state.token >= grant.token, "{state:?}");
    let next = client
        .acquire(request(backend, &key, "node-b"))
        .await
        .expect("free again");
    assert!(next.token > grant.token, "{next:?} after {grant:?}");
}

pub async fn release_by_a_non_holder_is_lost(backend: &impl Backend) {
    let client = backend.client();
    let key = global("scheduler");
    let grant = client
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("acquired");
    let forged = LeaseGrant {
        holder: node("node-b"),
        ..grant.clone()
    };
    let error = client.release(forged).await.expect_err("not the holder");
    assert!(matches!(error, ControlPlaneError::LeaseLost), "{error:?}");
    let state = client.read_lease(key).await.expect("read").expect("exists");
    assert!(
        state.is_held_by(&node("node-a"), grant.token),
        "unchanged: {state:?}"
    );
}

pub async fn tokens_strictly_increase_across_release_and_expiry(backend: &impl Backend) {
    let client = backend.client();
    let key = global("scheduler");
    let first = client
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("acquired");
    client.release(first.clone()).await.expect("released");
    let second = client
        .acquire(request(backend, &key, "node-b"))
        .await
        .expect("acquired");
    assert!(second.token > first.token);
    expire(backend, "node-b's lease", || async {
        client
            .read_lease(key.clone())
            .await
            .expect("read")
            .and_then(|state| state.holder)
            .is_none()
    })
    .await;
    let third = client
        .acquire(request(backend, &key, "node-c"))
        .await
        .expect("taken over");
    assert!(third.token > second.token, "{third:?} after {second:?}");
    let again = client
        .acquire(request(backend, &key, "node-c"))
        .await
        .expect("reacquired");
    assert_eq!(again.token, third.token);
}

pub async fn an_expired_lease_cannot_be_renewed(backend: &impl Backend) {
    let client = backend.client();
    let key = global("scheduler");
    let grant = client
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("acquired");
    expire(backend, "the lease", || async {
        client
            .read_lease(key.clone())
            .await
            .expect("read")
            .and_then(|state| state.holder)
            .is_none()
    })
    .await;
    let error = client.renew(grant.clone()).await.expect_err("expired");
    assert!(matches!(error, ControlPlaneError::LeaseLost), "{error:?}");
    let error = client.release(grant).await.expect_err("expired");
    assert!(matches!(error, ControlPlaneError::LeaseLost), "{error:?}");
}

pub async fn a_never_acquired_lease_reads_as_none(backend: &impl Backend) {
    let client = backend.client();
    assert_eq!(
        client.read_lease(global("never")).await.expect("read"),
        None
    );
}

pub async fn global_and_service_leases_are_distinct(backend: &impl Backend) {
    let client = backend.client();
    let as_global = global("billing");
    let as_service = LeaseKey::Service(service("billing"));
    client
        .acquire(request(backend, &as_global, "node-a"))
        .await
        .expect("global acquired");
    let grant = client
        .acquire(request(backend, &as_service, "node-b"))
        .await
        .expect("service acquired");
    let state = client
        .read_lease(as_service)
        .await
        .expect("read")
        .expect("exists");
    assert!(state.is_held_by(&node("node-b"), grant.token));
}

pub async fn two_clients_share_one_store(backend: &impl Backend) {
    let first = backend.client();
    let second = backend.client();
    let key = global("scheduler");
    first
        .register(registration(backend, "billing", "node-a"))
        .await
        .expect("registered");
    let grant = first
        .acquire(request(backend, &key, "node-a"))
        .await
        .expect("acquired");
    let found = second
        .discover(service("billing"))
        .await
        .expect("discovered");
    assert_eq!(nodes(&found), ["node-a"]);
    let error = second
        .acquire(request(backend, &key, "node-b"))
        .await
        .expect_err("held");
    assert!(
        matches!(error, ControlPlaneError::LeaseHeld { token, .. } if token == grant.token),
        "{error:?}"
    );
}
