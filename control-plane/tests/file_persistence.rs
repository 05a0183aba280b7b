//! The file client keeps registrations, leases and their fencing tokens
//! across a reopen, in a version-2 document with its checksum.

mod file_support;

use file_support::{addresses, global, node, registration, request, service, Place, TTL};
use provider_pools_control_plane::{ControlPlane, PresenceKey};
use sha2::Digest as _;

#[tokio::test]
async fn registrations_leases_and_tokens_survive_a_reopen() {
    let place = Place::new();
    let client = place.open();
    let zoned = registration("billing", "node-b", "10.0.0.2:8443")
        .with_metadata("zone", "eu-1")
        .expect("metadata");
    client.register(zoned.clone()).await.expect("registered");
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    let grant = client
        .acquire(request(&global("scheduler"), "node-a"))
        .await
        .expect("acquired");
    drop(client);

    let client = place.open();
    let found = client
        .discover(service("billing"))
        .await
        .expect("discovered");
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].address(), "10.0.0.1:8443");
    assert_eq!(found[1], zoned);
    let lease = client
        .read_lease(global("scheduler"))
        .await
        .expect("read")
        .expect("present");
    assert!(lease.is_held_by(&node("node-a"), grant.token));
    assert_eq!(lease.remaining, Some(TTL));
    let renewed = client
        .renew(grant.clone())
        .await
        .expect("the grant still holds");
    assert_eq!(renewed.token, grant.token);
}

#[tokio::test]
async fn tokens_keep_increasing_after_a_reopen() {
    let place = Place::new();
    let key = global("scheduler");
    let client = place.open();
    let first = client
        .acquire(request(&key, "node-a"))
        .await
        .expect("acquired");
    client.release(first.clone()).await.expect("released");
    drop(client);

    let client = place.open();
    let second = client
        .acquire(request(&key, "node-b"))
        .await
        .expect("acquired");
    assert!(second.token > first.token, "{second:?} after {first:?}");
    drop(client);

    // Expired while the process was down: the next holder gets a larger
    // token still.
    place.clock.advance_ms(61_000);
    let client = place.open();
    let third = client
        .acquire(request(&key, "node-c"))
        .await
        .expect("acquired");
    assert!(third.token > second.token, "{third:?} after {second:?}");
    assert_eq!(
        [first.token.get(), second.token.get(), third.token.get()],
        [1, 2, 3]
    );
}

#[tokio::test]
async fn a_missing_file_is_an_empty_state_created_on_the_first_change() {
    let place = Place::new();
    let client = place.open();
    assert!(addresses(&client, "billing").await.is_empty());
    assert_eq!(
        client.read_lease(global("scheduler")).await.expect("read"),
        None
    );
    let absent = PresenceKey {
        service: service("billing"),
        node: node("node-a"),
    };
    client.deregister(absent).await.expect("idempotent");
    assert!(!place.path.exists(), "nothing changed, nothing written");

    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    assert!(place.path.exists(), "the first change creates the file");
    assert_eq!(place.leftovers(&[]), Vec::<String>::new());
}

#[tokio::test]
async fn the_state_file_is_a_version_2_document_ending_with_its_checksum() {
    let place = Place::new();
    let client = place.open();
    client
        .register(registration("billing", "node-a", "10.0.0.1:8443"))
        .await
        .expect("registered");
    client
        .acquire(request(&global("scheduler"), "node-a"))
        .await
        .expect("acquired");
    let bytes = place.bytes();
    let mut document: serde_json::Value =
        serde_json::from_slice(&bytes).expect("the state file is JSON");
    // The checksum is the last field: the SHA-256 of every byte before it.
    let trailer = bytes
        .windows(br#","sha256":""#.len())
        .rposition(|window| window == br#","sha256":""#)
        .expect("a checksum trailer");
    let digest = sha2::Sha256::digest(&bytes[..trailer]);
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    assert_eq!(bytes.len() - trailer, br#","sha256":""}"#.len() + 64);
    assert_eq!(
        document
            .as_object_mut()
            .expect("an object")
            .remove("sha256"),
        Some(serde_json::Value::String(hex))
    );
    assert_eq!(
        document,
        serde_json::json!({
            "version": 2,
            "registrations": [{
                "registration": {
                    "service": "billing",
                    "node": "node-a",
                    "address": "10.0.0.1:8443",
                    "metadata": {},
                    "ttl_ms": 60_000,
                },
                "expires_at_ms": 61_000,
            }],
            "leases": [{
                "key": {"scope": "global", "name": "scheduler"},
                "holder": "node-a",
                "token": 1,
                "expires_at_ms": 61_000,
            }],
        })
    );
}
