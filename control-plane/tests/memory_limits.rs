//! The in-memory client's bounds: 65,536 records and 16 MiB by default,
//! `with_limits` only tightens, `stats` reports current and peak bytes and
//! rejections, and a refused replacement leaves the previous value.

use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::clock::ManualClock;
use provider_pools_control_plane::store::{LEASE_OVERHEAD_BYTES, PRESENCE_OVERHEAD_BYTES};
use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, LeaseKey, LeaseName, LeaseRequest, MemoryClient, NodeId,
    Registration, ServiceGroup, StoreLimits,
};

const TTL: Duration = Duration::from_secs(10);

fn lease(index: usize) -> LeaseRequest {
    LeaseRequest::new(
        LeaseKey::Global(LeaseName::new(format!("lease-{index}")).expect("name")),
        NodeId::new("node-a").expect("node"),
        TTL,
    )
    .expect("request")
}

fn big_registration(node: &str, value_bytes: usize) -> Registration {
    let mut registration = Registration::new(
        ServiceGroup::new("billing").expect("service"),
        NodeId::new(node).expect("node"),
        "10.0.0.1:80",
        TTL,
    )
    .expect("registration");
    for entry in 0..32 {
        registration = registration
            .with_metadata(format!("key-{entry:02}"), "v".repeat(value_bytes))
            .expect("metadata");
    }
    registration
}

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

#[tokio::test]
async fn the_default_store_admits_exactly_65536_records() {
    let client = MemoryClient::new();
    for index in 0..65_536 {
        client
            .acquire(lease(index))
            .await
            .expect("within the default");
    }
    let error = client
        .acquire(lease(65_536))
        .await
        .expect_err("one too many");
    assert!(
        matches!(error, ControlPlaneError::LimitExceeded { limit: "records" }),
        "{error:?}"
    );
    let stats = client.stats();
    assert_eq!(
        (stats.lease_slots, stats.registrations, stats.rejections),
        (65_536, 0, 1)
    );
    let registration = Registration::new(
        ServiceGroup::new("billing").expect("service"),
        NodeId::new("node-a").expect("node"),
        "10.0.0.1:80",
        TTL,
    )
    .expect("registration");
    let error = client
        .register(registration)
        .await
        .expect_err("registrations share the cap");
    assert!(
        matches!(error, ControlPlaneError::LimitExceeded { limit: "records" }),
        "{error:?}"
    );
    assert_eq!(client.stats().rejections, 2);
}

#[tokio::test]
async fn the_default_store_stops_at_16_mib_of_estimated_bytes() {
    let client = MemoryClient::new();
    let one = big_registration("node-0", 1_024);
    let each = PRESENCE_OVERHEAD_BYTES + one.text_bytes() as u64;
    let fit = (16 * 1024 * 1024) / each;
    for index in 0..fit {
        client
            .register(big_registration(&format!("node-{index}"), 1_024))
            .await
            .expect("within 16 MiB");
    }
    let error = client
        .register(big_registration("node-last", 1_024))
        .await
        .expect_err("over 16 MiB");
    assert!(
        matches!(
            error,
            ControlPlaneError::LimitExceeded {
                limit: "retained bytes"
            }
        ),
        "{error:?}"
    );
    let stats = client.stats();
    assert!(stats.current_bytes <= 16 * 1024 * 1024, "{stats:?}");
    assert_eq!(stats.current_bytes, stats.peak_bytes);
    assert_eq!(stats.rejections, 1);
}

#[test]
fn with_limits_only_tightens() {
    assert!(MemoryClient::with_limits(StoreLimits {
        max_records: 10,
        max_bytes: 4_096
    })
    .is_ok());
    for (limits, field) in [
        (
            StoreLimits {
                max_records: 65_537,
                max_bytes: 1,
            },
            "max_records",
        ),
        (
            StoreLimits {
                max_records: 0,
                max_bytes: 1,
            },
            "max_records",
        ),
        (
            StoreLimits {
                max_records: 1,
                max_bytes: 16 * 1024 * 1024 + 1,
            },
            "max_bytes",
        ),
    ] {
        let error = MemoryClient::with_limits(limits).expect_err("refused");
        assert!(
            matches!(error, ControlPlaneError::Invalid { field: f, .. } if f == field),
            "{error:?}"
        );
    }
}

#[tokio::test]
async fn an_oversized_registration_replacement_leaves_the_previous_one() {
    let small = big_registration("node-a", 10);
    let small_bytes = PRESENCE_OVERHEAD_BYTES + small.text_bytes() as u64;
    let (client, _clock) = limited(10, small_bytes + 100);
    client.register(small.clone()).await.expect("fits");
    let error = client
        .register(big_registration("node-a", 20))
        .await
        .expect_err("replacement too large");
    assert!(
        matches!(
            error,
            ControlPlaneError::LimitExceeded {
                limit: "retained bytes"
            }
        ),
        "{error:?}"
    );
    let found = client
        .discover(small.service().clone())
        .await
        .expect("discover");
    assert_eq!(found, vec![small]);
    let stats = client.stats();
    assert_eq!((stats.current_bytes, stats.rejections), (small_bytes, 1));
}

#[tokio::test]
async fn an_oversized_lease_takeover_leaves_the_previous_lease() {
    let key = LeaseKey::Global(LeaseName::new("leader").expect("name"));
    let short = NodeId::new("a").expect("node");
    let long = NodeId::new("b".repeat(200)).expect("node");
    let lease_bytes = LEASE_OVERHEAD_BYTES + 6 + 1;
    let (client, clock) = limited(10, lease_bytes + 50);
    let grant = client
        .acquire(LeaseRequest::new(key.clone(), short.clone(), TTL).expect("request"))
        .await
        .expect("fits");
    clock.advance_ms(20_000);
    let error = client
        .acquire(LeaseRequest::new(key.clone(), long, TTL).expect("request"))
        .await
        .expect_err("the longer holder does not fit");
    assert!(
        matches!(error, ControlPlaneError::LimitExceeded { .. }),
        "{error:?}"
    );
    let state = client
        .read_lease(key.clone())
        .await
        .expect("read")
        .expect("slot");
    assert_eq!(
        (state.holder, state.token),
        (None, grant.token),
        "expired, unchanged, token kept"
    );
    let again = client
        .acquire(LeaseRequest::new(key, short, TTL).expect("request"))
        .await
        .expect("a holder that fits");
    assert_eq!(again.token.get(), grant.token.get() + 1);
}

#[tokio::test]
async fn stats_keep_the_peak_after_records_leave() {
    let (client, _clock) = limited(10, 1_000_000);
    let registration = big_registration("node-a", 100);
    client.register(registration.clone()).await.expect("fits");
    let peak = client.stats().current_bytes;
    client
        .deregister(registration.key().clone())
        .await
        .expect("removed");
    let stats = client.stats();
    assert_eq!(
        (stats.current_bytes, stats.peak_bytes, stats.registrations),
        (0, peak, 0)
    );
}

#[tokio::test]
async fn expired_registrations_are_swept_when_room_is_short() {
    let (client, clock) = limited(1, 1_000_000);
    client
        .register(big_registration("node-a", 1))
        .await
        .expect("fits");
    clock.advance_ms(TTL.as_millis() as u64);
    client
        .register(big_registration("node-b", 1))
        .await
        .expect("the expired one made room");
    let stats = client.stats();
    assert_eq!((stats.registrations, stats.rejections), (1, 0));
}

#[tokio::test]
async fn expiry_arithmetic_fails_closed_on_overflow() {
    let (client, clock) = limited(10, 1_000_000);
    let key = LeaseKey::Global(LeaseName::new("leader").expect("name"));
    let grant = client.acquire(lease(0)).await.expect("acquired");
    clock.set_ms(u64::MAX - 5);
    let error = client.acquire(lease(1)).await.expect_err("overflow");
    assert!(
        matches!(
            error,
            ControlPlaneError::Overflow {
                what: "lease expiry"
            }
        ),
        "{error:?}"
    );
    let error = client.renew(grant).await.expect_err("overflow or expired");
    assert!(
        matches!(error, ControlPlaneError::Overflow { .. }),
        "{error:?}"
    );
    let error = client
        .register(big_registration("node-a", 1))
        .await
        .expect_err("overflow");
    assert!(
        matches!(
            error,
            ControlPlaneError::Overflow {
                what: "registration expiry"
            }
        ),
        "{error:?}"
    );
    assert_eq!(client.read_lease(key).await.expect("read"), None);
    assert_eq!(client.stats().lease_slots, 1);
}
