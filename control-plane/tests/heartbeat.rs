//! The heartbeat actor, on the in-memory store and tokio's paused clock.

mod faults;

use std::sync::Arc;
use std::time::Duration;

use faults::{Faulty, Mode};
use provider_pools_control_plane::heartbeat::{Heartbeat, HeartbeatPolicy};
use provider_pools_control_plane::{
    ActorCallError, ControlPlane, ControlPlaneError, ErrorCode, MemoryClient, NodeId, Registration,
    ServiceGroup,
};

const TTL: Duration = Duration::from_secs(4);

fn registration() -> Registration {
    Registration::new(
        ServiceGroup::new("billing").expect("service"),
        NodeId::new("node-a").expect("node"),
        "10.0.0.1:80",
        TTL,
    )
    .expect("registration")
}

async fn discovered(store: &MemoryClient) -> usize {
    store
        .discover(ServiceGroup::new("billing").expect("service"))
        .await
        .expect("discover")
        .len()
}

#[tokio::test(start_paused = true)]
async fn heartbeats_keep_a_registration_alive_for_ten_ttls() {
    let store = Arc::new(MemoryClient::new());
    let (heartbeat, _join) =
        Heartbeat::start(store.clone(), registration(), HeartbeatPolicy::for_ttl(TTL))
            .await
            .expect("started");
    // Observe between ticks, never at the instant one is due.
    tokio::time::sleep(TTL / 8).await;
    for _ in 0..10 {
        tokio::time::sleep(TTL).await;
        assert_eq!(discovered(&store).await, 1);
    }
    let status = heartbeat.status().await.expect("status");
    assert!(status.registered);
    assert_eq!(
        (status.registrations, status.beats, status.failures),
        (1, 40, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_forgotten_registration_is_registered_again_on_the_next_tick() {
    let store = Arc::new(MemoryClient::new());
    let policy = HeartbeatPolicy::for_ttl(TTL);
    let (heartbeat, _join) = Heartbeat::start(store.clone(), registration(), policy)
        .await
        .expect("started");
    tokio::time::sleep(policy.interval / 2).await;
    store
        .deregister(registration().key().clone())
        .await
        .expect("forgotten");
    assert_eq!(discovered(&store).await, 0);
    tokio::time::sleep(policy.interval).await;
    assert_eq!(discovered(&store).await, 1);
    let status = heartbeat.status().await.expect("status");
    assert_eq!((status.registrations, status.failures), (2, 0));
}

#[tokio::test(start_paused = true)]
async fn failures_are_counted_and_the_next_tick_recovers() {
    let store = Arc::new(MemoryClient::new());
    let link = Faulty::new(store.clone());
    let policy = HeartbeatPolicy::for_ttl(TTL);
    let (heartbeat, _join) = Heartbeat::start(link.clone(), registration(), policy)
        .await
        .expect("started");
    tokio::time::sleep(policy.interval / 2).await;
    link.set(Mode::Partitioned);
    tokio::time::sleep(policy.interval * 2).await;
    let status = heartbeat.status().await.expect("status");
    assert_eq!(
        (
            status.failures,
            status.consecutive_failures,
            status.last_error
        ),
        (2, 2, Some(ErrorCode::Timeout))
    );
    link.set(Mode::Healthy);
    tokio::time::sleep(policy.interval).await;
    let status = heartbeat.status().await.expect("status");
    assert_eq!((status.consecutive_failures, status.beats), (0, 1));
    assert_eq!(
        discovered(&store).await,
        1,
        "two missed beats stayed within the ttl"
    );
}

#[tokio::test(start_paused = true)]
async fn stop_deregisters_and_ends_the_actor() {
    let store = Arc::new(MemoryClient::new());
    let (heartbeat, join) =
        Heartbeat::start(store.clone(), registration(), HeartbeatPolicy::for_ttl(TTL))
            .await
            .expect("started");
    assert_eq!(discovered(&store).await, 1);
    heartbeat
        .stop()
        .await
        .expect("delivered")
        .expect("deregistered");
    join.await.expect("actor ended");
    assert_eq!(discovered(&store).await, 0);
    assert_eq!(heartbeat.status().await, Err(ActorCallError::Stopped));
}

#[tokio::test(start_paused = true)]
#[allow(clippy::disallowed_methods)] // the test spawns its own waiting callers
async fn a_full_mailbox_answers_busy_at_once() {
    let store = Arc::new(MemoryClient::new());
    let link = Faulty::new(store);
    let policy = HeartbeatPolicy {
        interval: Duration::from_secs(1),
        mailbox: 2,
    };
    let (heartbeat, _join) = Heartbeat::start(link.clone(), registration(), policy)
        .await
        .expect("started");
    link.set(Mode::Hung);
    // Past the next tick: the actor is now stuck in a heartbeat.
    tokio::time::sleep(policy.interval + policy.interval / 2).await;
    let waiting: Vec<_> = (0..2)
        .map(|_| {
            let heartbeat = heartbeat.clone();
            tokio::spawn(async move { heartbeat.status().await })
        })
        .collect();
    tokio::task::yield_now().await;
    assert_eq!(heartbeat.status().await, Err(ActorCallError::Busy));
    for call in waiting {
        assert!(
            !call.is_finished(),
            "the two queued calls are still waiting"
        );
        call.abort();
    }
}

#[tokio::test(start_paused = true)]
async fn an_interval_not_below_the_ttl_is_refused() {
    let store = Arc::new(MemoryClient::new());
    let policy = HeartbeatPolicy {
        interval: TTL,
        mailbox: 4,
    };
    let error = Heartbeat::start(store, registration(), policy)
        .await
        .expect_err("refused");
    assert!(
        matches!(
            error,
            ControlPlaneError::Invalid {
                field: "heartbeat interval",
                ..
            }
        ),
        "{error:?}"
    );
}
