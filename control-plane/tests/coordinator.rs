//! The coordinator actor: elections, renewal, takeover, resignation and
//! stepping down — on the in-memory store and tokio's paused clock.

mod faults;

use std::sync::Arc;
use std::time::Duration;

use faults::{Faulty, Mode};
use provider_pools_control_plane::coordinator::{Coordinator, CoordinatorConfig, Leadership};
use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, LeaseKey, LeaseName, MemoryClient, NodeId,
};
use tokio::sync::watch;
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(6);

fn key() -> LeaseKey {
    LeaseKey::Global(LeaseName::new("scheduler").expect("name"))
}

fn node(name: &str) -> NodeId {
    NodeId::new(name).expect("node")
}

async fn start(
    client: Arc<dyn ControlPlane>,
    name: &str,
) -> (Coordinator, watch::Receiver<Leadership>) {
    let config = CoordinatorConfig::new(node(name), TTL).expect("config");
    let (coordinator, _join) = Coordinator::start(client, config).await.expect("started");
    let leadership = coordinator
        .campaign(key())
        .await
        .expect("delivered")
        .expect("campaigning");
    (coordinator, leadership)
}

fn token(leadership: &watch::Receiver<Leadership>) -> Option<u64> {
    leadership
        .borrow()
        .token_at(Instant::now())
        .map(|token| token.get())
}

#[tokio::test(start_paused = true)]
async fn two_coordinators_elect_one_leader_who_keeps_its_token_by_renewing() {
    let store = Arc::new(MemoryClient::new());
    let (_a, a) = start(store.clone(), "node-a").await;
    let (_b, b) = start(store.clone(), "node-b").await;
    assert_eq!(token(&a), Some(1));
    assert_eq!(
        *b.borrow(),
        Leadership::Follower {
            holder: Some(node("node-a"))
        }
    );
    for _ in 0..5 {
        tokio::time::sleep(TTL).await;
        assert_eq!(
            (token(&a), token(&b)),
            (Some(1), None),
            "exactly one leader, same token"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_dead_leader_is_replaced_after_expiry_with_a_larger_token() {
    let store = Arc::new(MemoryClient::new());
    let (a_coordinator, a) = start(store.clone(), "node-a").await;
    let (_b, mut b) = start(store.clone(), "node-b").await;
    let old = token(&a).expect("a leads");
    let died = Instant::now();
    a_coordinator.actor().kill();
    b.wait_for(|leadership| leadership.is_leader())
        .await
        .expect("b publishes");
    let took = Instant::now() - died;
    let config = CoordinatorConfig::new(node("node-b"), TTL).expect("config");
    assert!(
        took >= TTL - config.renew_every,
        "not before a's lease could expire: {took:?}"
    );
    assert!(
        took <= TTL + config.retry_every,
        "within one retry after expiry: {took:?}"
    );
    assert!(token(&b).expect("b leads") > old);
}

#[tokio::test(start_paused = true)]
async fn resigning_releases_and_the_follower_takes_over_on_its_next_try() {
    let store = Arc::new(MemoryClient::new());
    let (a_coordinator, a) = start(store.clone(), "node-a").await;
    let (_b, mut b) = start(store.clone(), "node-b").await;
    let old = token(&a).expect("a leads");
    a_coordinator
        .resign(key())
        .await
        .expect("delivered")
        .expect("released");
    assert_eq!(*a.borrow(), Leadership::Follower { holder: None });
    let state = store.read_lease(key()).await.expect("read").expect("slot");
    assert_eq!(state.holder, None);
    let resigned = Instant::now();
    b.wait_for(|leadership| leadership.is_leader())
        .await
        .expect("b publishes");
    let config = CoordinatorConfig::new(node("node-b"), TTL).expect("config");
    assert!(Instant::now() - resigned <= config.retry_every);
    assert_eq!(token(&b), Some(old + 1));
}

#[tokio::test(start_paused = true)]
async fn a_partitioned_leader_steps_down_at_safe_until_before_its_lease_expires() {
    let store = Arc::new(MemoryClient::new());
    let link = Faulty::new(store.clone());
    let (_a, mut a) = start(link.clone(), "node-a").await;
    let Leadership::Leader { safe_until, .. } = a.borrow().clone() else {
        panic!("a leads");
    };
    link.set(Mode::Partitioned);
    a.wait_for(|leadership| matches!(leadership, Leadership::Follower { .. }))
        .await
        .expect("a publishes");
    assert!(Instant::now() <= safe_until, "stepped down by safe_until");
    let state = store.read_lease(key()).await.expect("read").expect("slot");
    assert_eq!(
        state.holder,
        Some(node("node-a")),
        "the store has not expired it yet"
    );
    assert!(state.remaining.expect("held") > Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn stop_releases_every_held_lease() {
    let store = Arc::new(MemoryClient::new());
    let (coordinator, _a) = start(store.clone(), "node-a").await;
    let second = LeaseKey::Global(LeaseName::new("compactor").expect("name"));
    coordinator
        .campaign(second.clone())
        .await
        .expect("delivered")
        .expect("campaigning");
    let results = coordinator.stop().await.expect("delivered");
    assert_eq!(results.len(), 2);
    assert!(
        results.iter().all(|(_, result)| result.is_ok()),
        "{results:?}"
    );
    for lease in [key(), second] {
        let state = store.read_lease(lease).await.expect("read").expect("slot");
        assert_eq!(state.holder, None);
    }
}

#[tokio::test(start_paused = true)]
async fn campaigns_are_bounded() {
    let store = Arc::new(MemoryClient::new());
    let mut config = CoordinatorConfig::new(node("node-a"), TTL).expect("config");
    config.max_campaigns = 1;
    let (coordinator, _join) = Coordinator::start(store, config).await.expect("started");
    coordinator
        .campaign(key())
        .await
        .expect("delivered")
        .expect("first");
    coordinator
        .campaign(key())
        .await
        .expect("delivered")
        .expect("joining the same one");
    let error = coordinator
        .campaign(LeaseKey::Global(LeaseName::new("other").expect("name")))
        .await
        .expect("delivered")
        .expect_err("a second lease");
    assert!(
        matches!(
            error,
            ControlPlaneError::LimitExceeded { limit: "campaigns" }
        ),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_renewal_cadence_too_slow_for_the_lease_is_refused() {
    let store = Arc::new(MemoryClient::new());
    let mut config = CoordinatorConfig::new(node("node-a"), TTL).expect("config");
    config.renew_every = TTL;
    let error = Coordinator::start(store, config)
        .await
        .expect_err("refused");
    assert!(
        matches!(
            error,
            ControlPlaneError::Invalid {
                field: "renew_every",
                ..
            }
        ),
        "{error:?}"
    );
}
