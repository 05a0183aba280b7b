//! The in-memory board within the store's bounds: posts and fenced
//! records count as records and estimated bytes, a flood is refused with
//! `LimitExceeded` and changes nothing, the bytes of a post go with its
//! registration, and expired registrations are swept to make room.

use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::clock::ManualClock;
use provider_pools_control_plane::store::PRESENCE_OVERHEAD_BYTES;
use provider_pools_control_plane::{
    Board, ControlPlane, ControlPlaneError, LeaseKey, LeaseName, LeaseRequest, MemoryClient,
    NodeId, PresenceKey, Registration, ServiceGroup, StoreLimits, TopicName,
};

const TTL: Duration = Duration::from_secs(10);

fn limited(max_records: usize, max_bytes: u64) -> (MemoryClient, ManualClock) {
    let clock = ManualClock::starting_at(0);
    let limits = StoreLimits {
        max_records,
        max_bytes,
    }
    .within(StoreLimits::MEMORY)
    .expect("tighter");
    (
        MemoryClient::with_clock(limits, Arc::new(clock.clone())),
        clock,
    )
}

fn registration(node: &str, ttl: Duration) -> Registration {
    Registration::new(
        ServiceGroup::new("billing").expect("service"),
        NodeId::new(node).expect("node"),
        "10.0.0.1:80",
        ttl,
    )
    .expect("registration")
}

fn topic(index: usize) -> TopicName {
    TopicName::new(format!("topic-{index}")).expect("topic")
}

fn assert_limit(result: Result<(), ControlPlaneError>, expected: &'static str) {
    match result {
        Err(ControlPlaneError::LimitExceeded { limit }) if limit == expected => {}
        other => panic!("expected the {expected} limit, got {other:?}"),
    }
}

#[tokio::test]
async fn a_flood_of_posts_is_refused_at_the_record_limit_and_changes_nothing() {
    let (client, _clock) = limited(10, 1024 * 1024);
    let a = registration("node-a", TTL);
    client.register(a.clone()).await.expect("registered");
    for index in 0..9 {
        client
            .post(a.key().clone(), topic(index), b"v".to_vec())
            .await
            .expect("within ten records");
    }
    let before = client.stats();
    assert_eq!((before.registrations, before.posts), (1, 9));
    assert_limit(
        client.post(a.key().clone(), topic(9), b"v".to_vec()).await,
        "records",
    );
    // Replacing a post adds no record, so it still fits.
    client
        .post(a.key().clone(), topic(0), b"w".to_vec())
        .await
        .expect("a replacement");
    let after = client.stats();
    assert_eq!(
        (after.posts, after.rejections, after.current_bytes),
        (9, 1, before.current_bytes)
    );
    assert!(client
        .read_posts(a.service().clone(), topic(9))
        .await
        .expect("read")
        .is_empty());
}

#[tokio::test]
async fn fenced_records_count_and_a_refused_one_keeps_the_last() {
    let (client, _clock) = limited(2, 1024 * 1024);
    let key = LeaseKey::Global(LeaseName::new("planner").expect("name"));
    let grant = client
        .acquire(
            LeaseRequest::new(key.clone(), NodeId::new("node-a").expect("node"), TTL)
                .expect("request"),
        )
        .await
        .expect("acquired");
    client
        .write_fenced(grant.clone(), b"one".to_vec())
        .await
        .expect("the second record");
    assert_eq!(client.stats().fenced_records, 1);
    let other = LeaseKey::Global(LeaseName::new("other").expect("name"));
    let error = client
        .acquire(
            LeaseRequest::new(other, NodeId::new("node-a").expect("node"), TTL).expect("request"),
        )
        .await
        .expect_err("a third record");
    assert!(
        matches!(error, ControlPlaneError::LimitExceeded { limit: "records" }),
        "{error:?}"
    );
    client
        .write_fenced(grant.clone(), b"two".to_vec())
        .await
        .expect("a replacement adds no record");
    let record = client
        .read_fenced(key)
        .await
        .expect("read")
        .expect("written");
    assert_eq!(record.value, b"two");
}

#[tokio::test]
async fn posts_over_the_byte_limit_are_refused() {
    let a = registration("node-a", TTL);
    let registration_bytes = PRESENCE_OVERHEAD_BYTES + a.text_bytes() as u64;
    let (client, _clock) = limited(1_000, registration_bytes + 100 * 1024);
    client.register(a.clone()).await.expect("registered");
    let mut posted = 0;
    let refused = loop {
        match client
            .post(a.key().clone(), topic(posted), vec![0; 16 * 1024])
            .await
        {
            Ok(()) => posted += 1,
            Err(error) => break error,
        }
        assert!(posted < 100, "100 posts of 16 KiB fitted in 100 KiB");
    };
    assert!(
        matches!(
            refused,
            ControlPlaneError::LimitExceeded {
                limit: "retained bytes"
            }
        ),
        "{refused:?}"
    );
    assert_eq!(posted, 6);
    let stats = client.stats();
    assert!(
        stats.current_bytes <= registration_bytes + 100 * 1024,
        "{stats:?}"
    );
    assert_eq!((stats.posts, stats.rejections), (6, 1));
}

#[tokio::test]
async fn the_bytes_of_posts_go_with_their_registration() {
    let client = MemoryClient::new();
    let a = registration("node-a", TTL);
    client.register(a.clone()).await.expect("registered");
    let registered = client.stats().current_bytes;
    for index in 0..3 {
        client
            .post(a.key().clone(), topic(index), vec![1; 1_000])
            .await
            .expect("posted");
    }
    assert!(client.stats().current_bytes > registered + 3_000);
    client.register(a.clone()).await.expect("replaced");
    let replaced = client.stats();
    assert_eq!((replaced.current_bytes, replaced.posts), (registered, 0));
    client
        .post(a.key().clone(), topic(0), vec![1; 1_000])
        .await
        .expect("posted");
    client
        .deregister(a.key().clone())
        .await
        .expect("deregistered");
    let gone = client.stats();
    assert_eq!(
        (gone.current_bytes, gone.posts, gone.registrations),
        (0, 0, 0)
    );
}

#[tokio::test]
async fn expired_registrations_are_swept_to_make_room_for_a_post() {
    let (client, clock) = limited(3, 1024 * 1024);
    let short = registration("node-a", Duration::from_secs(1));
    client.register(short.clone()).await.expect("registered");
    client
        .post(short.key().clone(), topic(0), b"a".to_vec())
        .await
        .expect("posted");
    let b = registration("node-b", TTL);
    client.register(b.clone()).await.expect("registered");
    assert_limit(
        client.post(b.key().clone(), topic(0), b"b".to_vec()).await,
        "records",
    );
    clock.advance_ms(1_000);
    client
        .post(b.key().clone(), topic(0), b"b".to_vec())
        .await
        .expect("room made by sweeping node-a and its post");
    let stats = client.stats();
    assert_eq!((stats.registrations, stats.posts), (1, 1));
    let key = PresenceKey {
        service: b.service().clone(),
        node: NodeId::new("node-a").expect("node"),
    };
    assert!(matches!(
        client.post(key, topic(1), b"a".to_vec()).await,
        Err(ControlPlaneError::NotRegistered)
    ));
}
