//! The NATS JetStream adapter against a real nats-server 2.15 with
//! JetStream: publish with acknowledgement, pull consumption with explicit
//! acknowledgement, key-value get and put, not-found answers, size limits.

mod support;

use std::time::Duration;

use bytes::Bytes;
use provider_pools_actors::Limits;
use provider_pools_adapters::nats::{
    fetch, kv_get, kv_put, publish, ConsumerName, KvKey, Missing, NatsDialer, NatsError,
    NatsLimits, Subject,
};
use provider_pools_test_peers::Nats;
use support::nats::{admin, assert_clean, install, install_over, outstanding, prepare, running};
use support::{bounded, eventually, start};

fn subject(text: &str) -> Subject {
    Subject::parse(text).expect("subject")
}

fn key(text: &str) -> KvKey {
    KvKey::parse(text).expect("key")
}

fn work() -> ConsumerName {
    ConsumerName::parse("work").expect("consumer")
}

#[tokio::test]
async fn publish_is_acknowledged_by_the_stream_and_one_client_is_reused() {
    let peer = Nats::start();
    let url = format!("nats://{}", peer.addr());
    let js = admin(&url).await;
    prepare(&js).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &url, b"").await;
    let dialer = NatsDialer::new(pools.clone());

    for (i, body) in ["one", "two", "three"].into_iter().enumerate() {
        let running = running(&pools, &receipt, i as u64 + 1).await;
        let ack = bounded(
            "publish",
            publish(
                &pools,
                &running,
                &dialer,
                &subject("orders.created"),
                Bytes::from(body),
                NatsLimits::default(),
            ),
        )
        .await
        .expect("acknowledged");
        assert_eq!((ack.stream.as_str(), ack.sequence), ("EV", i as u64 + 1));
        assert!(!ack.duplicate);
        drop(running);
        eventually("the client is parked", || {
            let snapshot = pools.snapshot();
            snapshot.connections.idle == 1 && snapshot.running_requests == 0
        })
        .await;
    }
    assert_eq!(dialer.dials(), 1, "one client served every publish");
    assert_eq!(pools.snapshot().drivers, 1, "its driver runs while idle");

    let stream = js.get_stream("EV").await.expect("stream");
    let stored = stream.get_raw_message(2).await.expect("message 2");
    assert_eq!(stored.subject.as_str(), "ev.orders.created");
    assert_eq!(stored.payload.as_ref(), b"two");

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}

#[tokio::test]
async fn fetched_messages_are_charged_and_acknowledged_explicitly() {
    let peer = Nats::start();
    let url = format!("nats://{}", peer.addr());
    let js = admin(&url).await;
    prepare(&js).await;
    for body in ["a", "b", "c"] {
        js.publish("ev.jobs", Bytes::from(body))
            .await
            .expect("publish")
            .await
            .expect("stored");
    }
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &url, b"").await;
    let dialer = NatsDialer::new(pools.clone());
    let idle_metadata = pools.snapshot().metadata_bytes;

    let running1 = running(&pools, &receipt, 1).await;
    let mut batch = bounded(
        "fetch",
        fetch(
            &pools,
            &running1,
            &dialer,
            &work(),
            10,
            Duration::from_millis(500),
            NatsLimits::default(),
        ),
    )
    .await
    .expect("fetched");
    drop(running1);
    let bodies: Vec<_> = batch.iter().map(|m| m.payload().bytes().clone()).collect();
    assert_eq!(bodies, ["a", "b", "c"].map(Bytes::from));
    assert_eq!(batch[0].subject(), "ev.jobs");
    assert_eq!(batch[2].delivery().stream_sequence, 3);
    assert_eq!(batch[0].delivery().delivered, 1);
    let held = pools.snapshot();
    assert_eq!(held.connections.active, 1, "the batch keeps its connection");
    assert_eq!(
        held.running_requests, 1,
        "and its request, after the caller"
    );
    assert!(
        held.metadata_bytes >= idle_metadata + 3,
        "payloads are charged"
    );

    let third = batch.pop().expect("third");
    bounded("nak", third.nak(None))
        .await
        .expect("nak confirmed");
    for message in batch {
        bounded("ack", message.ack()).await.expect("ack confirmed");
    }
    eventually("the acknowledged batch parks its connection", || {
        let snapshot = pools.snapshot();
        snapshot.connections.idle == 1 && snapshot.running_requests == 0
    })
    .await;

    let running2 = running(&pools, &receipt, 2).await;
    let again = bounded(
        "fetch again",
        fetch(
            &pools,
            &running2,
            &dialer,
            &work(),
            10,
            Duration::from_millis(500),
            NatsLimits::default(),
        ),
    )
    .await
    .expect("fetched again");
    drop(running2);
    assert_eq!(again.len(), 1, "only the refused message comes back");
    assert_eq!(again[0].payload().bytes().as_ref(), b"c");
    assert_eq!(again[0].delivery().delivered, 2);
    for message in again {
        bounded("ack", message.ack()).await.expect("ack confirmed");
    }
    assert_eq!(
        outstanding(&js, "work").await,
        (0, 0),
        "nothing left to deliver or ack"
    );
    assert_eq!(dialer.dials(), 1);

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}

#[tokio::test]
async fn kv_put_then_get_returns_the_value_and_its_revision() {
    let peer = Nats::start();
    let url = format!("nats://{}", peer.addr());
    let js = admin(&url).await;
    prepare(&js).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &url, b"").await;
    let dialer = NatsDialer::new(pools.clone());
    let limits = NatsLimits::default();

    let running = running(&pools, &receipt, 1).await;
    let first = kv_put(
        &pools,
        &running,
        &dialer,
        &key("feature/x"),
        Bytes::from("on"),
        limits,
    )
    .await
    .expect("put");
    let second = kv_put(
        &pools,
        &running,
        &dialer,
        &key("feature/x"),
        Bytes::from("off"),
        limits,
    )
    .await
    .expect("put again");
    assert!(second > first, "revisions grow: {first} then {second}");
    let entry = kv_get(&pools, &running, &dialer, &key("feature/x"), limits)
        .await
        .expect("get");
    assert_eq!(entry.value.bytes().as_ref(), b"off");
    assert_eq!(entry.revision, second);
    drop((entry, running));

    let store = js.get_key_value("cfg").await.expect("bucket");
    let seen = store.get("feature/x").await.expect("read").expect("value");
    assert_eq!(seen.as_ref(), b"off");
    assert_eq!(dialer.dials(), 1);

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}

#[tokio::test]
async fn missing_streams_consumers_buckets_and_keys_are_not_found() {
    let peer = Nats::start();
    let url = format!("nats://{}", peer.addr());
    let js = admin(&url).await;
    prepare(&js).await;
    let pools = start(Limits::DEFAULT).await;
    let limits = NatsLimits::default();
    let settings = [
        ("subject_prefix", "nowhere"),
        ("stream", "EV"),
        ("kv_bucket", "missing"),
    ];
    let receipt = install_over(&pools, &url, &settings, b"", 0).await;
    let dialer = NatsDialer::new(pools.clone());
    let running = running(&pools, &receipt, 1).await;

    let published = publish(
        &pools,
        &running,
        &dialer,
        &subject("x"),
        Bytes::from("p"),
        limits,
    )
    .await;
    assert!(
        matches!(published, Err(NatsError::NotFound(Missing::Stream))),
        "{published:?}"
    );
    let nobody = ConsumerName::parse("nobody").expect("name");
    let fetched = fetch(
        &pools,
        &running,
        &dialer,
        &nobody,
        1,
        Duration::from_millis(100),
        limits,
    )
    .await;
    assert!(
        matches!(fetched, Err(NatsError::NotFound(Missing::Consumer))),
        "{fetched:?}"
    );
    let got = kv_get(&pools, &running, &dialer, &key("k"), limits).await;
    assert!(
        matches!(got, Err(NatsError::NotFound(Missing::Bucket))),
        "{got:?}"
    );
    let put = kv_put(
        &pools,
        &running,
        &dialer,
        &key("k"),
        Bytes::from("v"),
        limits,
    )
    .await;
    assert!(
        matches!(put, Err(NatsError::NotFound(Missing::Bucket))),
        "{put:?}"
    );
    drop(running);

    let receipt = install_over(&pools, &url, support::nats::SETTINGS, b"", 1).await;
    let running = support::nats::running(&pools, &receipt, 2).await;
    let got = kv_get(&pools, &running, &dialer, &key("never-put"), limits).await;
    assert!(
        matches!(got, Err(NatsError::NotFound(Missing::Key))),
        "{got:?}"
    );
    assert_eq!(got.map(drop).expect_err("not found").code(), "not_found");
    drop(running);
    assert_eq!(dialer.dials(), 2, "a not-found answer keeps its connection");

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}

#[tokio::test]
async fn oversized_payloads_and_values_are_refused_before_any_dial() {
    let peer = Nats::start();
    let url = format!("nats://{}", peer.addr());
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &url, b"").await;
    let dialer = NatsDialer::new(pools.clone());
    let limits = NatsLimits {
        max_payload: 8,
        max_value: 8,
        ..NatsLimits::default()
    };
    let running = running(&pools, &receipt, 1).await;
    let big = Bytes::from(vec![b'x'; 9]);

    let published = publish(
        &pools,
        &running,
        &dialer,
        &subject("x"),
        big.clone(),
        limits,
    )
    .await;
    assert!(
        matches!(
            published,
            Err(NatsError::TooLarge {
                what: "payload",
                len: 9,
                max: 8
            })
        ),
        "{published:?}"
    );
    let put = kv_put(&pools, &running, &dialer, &key("k"), big, limits).await;
    assert!(
        matches!(
            put,
            Err(NatsError::TooLarge {
                what: "value",
                len: 9,
                max: 8
            })
        ),
        "{put:?}"
    );
    assert_eq!(dialer.dials(), 0, "nothing was dialed");
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.connections, Default::default());
    assert_eq!(snapshot.drivers, 0, "no driver was started");
    drop(running);

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}
