//! Fencing-token and expiry arithmetic fail closed on overflow: the call is
//! refused and the state file is left byte for byte.

mod file_support;

use std::fs;

use file_support::{global, node, registration, request, Place, TTL};
use provider_pools_control_plane::{ControlPlane, ControlPlaneError, FencingToken, LeaseGrant};

#[tokio::test]
async fn an_exhausted_token_is_never_reused_after_release_or_expiry() {
    let place = Place::new();
    // Two leases at the last token, held by node-a until 5,000 ms.
    fs::write(
        &place.path,
        format!(
            r#"{{"version":1,"registrations":[],"leases":[
                {{"key":{{"scope":"global","name":"released"}},"holder":"node-a","token":{max},"expires_at_ms":5000}},
                {{"key":{{"scope":"global","name":"expired"}},"holder":"node-a","token":{max},"expires_at_ms":5000}}]}}"#,
            max = u64::MAX
        ),
    )
    .expect("state file written");
    let client = place.open();
    client
        .release(LeaseGrant {
            key: global("released"),
            holder: node("node-a"),
            token: FencingToken(u64::MAX),
            ttl: TTL,
        })
        .await
        .expect("the holder releases");
    place.clock.set_ms(5_000);
    let before = place.bytes();

    for name in ["released", "expired"] {
        let error = client
            .acquire(request(&global(name), "node-b"))
            .await
            .expect_err("no token is left");
        assert!(
            matches!(error, ControlPlaneError::EpochExhausted),
            "{name}: {error:?}"
        );
        let lease = client
            .read_lease(global(name))
            .await
            .expect("read")
            .expect("present");
        assert_eq!((lease.holder, lease.token), (None, FencingToken(u64::MAX)));
    }
    assert!(place.bytes() == before, "the state file is unchanged");
    assert_eq!(place.leftovers(&[]), Vec::<String>::new());
}

#[tokio::test]
async fn expiry_overflow_fails_closed_and_keeps_the_state() {
    let place = Place::new();
    let client = place.open();
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    let grant = client
        .acquire(request(&global("scheduler"), "node-a"))
        .await
        .expect("acquired");
    let before = place.bytes();
    let stats = client.stats();

    place.clock.set_ms(u64::MAX - 1_000);
    let error = client
        .acquire(request(&global("other"), "node-a"))
        .await
        .expect_err("expiry past u64::MAX");
    assert!(
        matches!(
            error,
            ControlPlaneError::Overflow {
                what: "lease expiry"
            }
        ),
        "{error:?}"
    );
    let error = client
        .register(registration("billing", "node-b", "10.0.0.2:8443"))
        .await
        .expect_err("expiry past u64::MAX");
    assert!(
        matches!(
            error,
            ControlPlaneError::Overflow {
                what: "registration expiry"
            }
        ),
        "{error:?}"
    );
    assert!(place.bytes() == before, "the state file is unchanged");
    assert_eq!(client.stats().lease_slots, stats.lease_slots);
    assert_eq!(client.stats().registrations, stats.registrations);
    assert_eq!(
        client.read_lease(global("other")).await.expect("read"),
        None
    );
    let lease = client
        .read_lease(global("scheduler"))
        .await
        .expect("read")
        .expect("present");
    assert_eq!(lease.token, grant.token);
}
