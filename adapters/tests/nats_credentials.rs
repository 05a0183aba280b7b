//! NATS credentials against a real nats-server: a refused token is denied
//! and backs off without ever being shown; a rotation moves new calls to
//! the new credential — proven by the server's per-user permissions — while
//! a call accepted on the old epoch finishes on it.

mod support;

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer;
use bytes::Bytes;
use provider_pools_actors::{ConnectError, DialErrorKind, Epoch, Limits};
use provider_pools_adapters::nats::{
    fetch, publish, ConsumerName, NatsDialer, NatsError, NatsLimits, Subject,
};
use provider_pools_test_peers::Nats;
use support::nats::{admin_with, assert_clean, install, install_over, prepare, running};
use support::{bounded, eventually, start, task};

fn subject(text: &str) -> Subject {
    Subject::parse(text).expect("subject")
}

#[tokio::test]
async fn a_refused_token_is_denied_backs_off_and_is_never_shown() {
    let peer = Nats::start_with_token("right-token");
    let url = format!("nats://{}", peer.addr());
    let js = admin_with(
        &url,
        async_nats::ConnectOptions::with_token("right-token".into()),
    )
    .await;
    prepare(&js).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &url, b"wrong-token-7f3a").await;
    let dialer = NatsDialer::new(pools.clone());
    let limits = NatsLimits::default();

    let running1 = running(&pools, &receipt, 1).await;
    let denied = publish(
        &pools,
        &running1,
        &dialer,
        &subject("x"),
        Bytes::from("p"),
        limits,
    )
    .await;
    let Err(denied) = denied else {
        panic!("a wrong token published: {denied:?}");
    };
    assert!(matches!(denied, NatsError::Denied), "{denied:?}");
    assert_eq!(denied.code(), "denied");
    for shown in [
        denied.to_string(),
        format!("{denied:?}"),
        format!("{dialer:?}"),
    ] {
        assert!(!shown.contains("7f3a"), "the credential shows in {shown}");
    }
    eventually("the refused client's job ends", || {
        let snapshot = pools.snapshot();
        snapshot.drivers == 0 && snapshot.connections == Default::default()
    })
    .await;

    let again = publish(
        &pools,
        &running1,
        &dialer,
        &subject("x"),
        Bytes::from("p"),
        limits,
    )
    .await;
    assert!(
        matches!(
            again,
            Err(NatsError::Connect(ConnectError::Unavailable {
                kind: DialErrorKind::Handshake,
                ..
            }))
        ),
        "the client backs off: {again:?}"
    );
    assert_eq!(dialer.dials(), 1, "nothing was retried");
    drop(running1);

    let receipt = install_over(&pools, &url, support::nats::SETTINGS, b"right-token", 1).await;
    let running2 = running(&pools, &receipt, 2).await;
    let ack = publish(
        &pools,
        &running2,
        &dialer,
        &subject("x"),
        Bytes::from("p"),
        limits,
    )
    .await
    .expect("the rotated token is accepted");
    assert_eq!(ack.sequence, 1);
    drop(running2);

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}

/// Users `a` and `b` may each publish to one subject of their own; `admin`
/// may do anything.
const USERS: &str = r#"
authorization {
  users = [
    { user: admin, password: admin-pw }
    { user: a, password: a-pw, permissions: {
        publish: { allow: ["ev.a", "$JS.API.>", "$JS.ACK.>"] }
        subscribe: { allow: ["_INBOX.>"] } } }
    { user: b, password: b-pw, permissions: {
        publish: { allow: ["ev.b", "$JS.API.>", "$JS.ACK.>"] }
        subscribe: { allow: ["_INBOX.>"] } } }
  ]
}
"#;

#[tokio::test]
async fn a_rotation_moves_new_calls_to_the_new_user_while_an_old_call_finishes() {
    let dir = tempfile::tempdir().expect("config dir");
    let config = dir.path().join("users.conf");
    std::fs::write(&config, USERS).expect("config written");
    let peer = Nats::start_with_config(&config);
    let url = format!("nats://{}", peer.addr());
    let js = admin_with(
        &url,
        async_nats::ConnectOptions::with_user_and_password("admin".into(), "admin-pw".into()),
    )
    .await;
    prepare(&js).await;
    let stream = js.get_stream("EV").await.expect("stream");
    stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some("only-b".to_owned()),
            filter_subject: "ev.b".to_owned(),
            ack_policy: consumer::AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .expect("consumer");
    let settings = [
        ("subject_prefix", "ev"),
        ("stream", "EV"),
        ("kv_bucket", "cfg"),
        ("auth", "user_password"),
    ];
    let pools = start(Limits::DEFAULT).await;
    let receipt = install_over(&pools, &url, &settings, b"a:a-pw", 0).await;
    let dialer = Arc::new(NatsDialer::new(pools.clone()));
    let limits = NatsLimits::default();

    // Epoch 1 is user a: ev.a yes, ev.b no.
    let early = running(&pools, &receipt, 1).await;
    publish(
        &pools,
        &early,
        &dialer,
        &subject("a"),
        Bytes::from("a1"),
        limits,
    )
    .await
    .expect("user a publishes to ev.a");
    let refused = publish(
        &pools,
        &early,
        &dialer,
        &subject("b"),
        Bytes::from("x"),
        limits,
    )
    .await;
    assert!(matches!(refused, Err(NatsError::Denied)), "{refused:?}");
    drop(early);

    // A long poll accepted on epoch 1 waits for ev.b.
    let old = running(&pools, &receipt, 2).await;
    assert_eq!(old.client().epoch(), Epoch::new(1));
    let waiting = {
        let (pools, dialer) = (pools.clone(), Arc::clone(&dialer));
        task(async move {
            let only_b = ConsumerName::parse("only-b").expect("name");
            let mut batch = fetch(
                &pools,
                &old,
                &dialer,
                &only_b,
                1,
                Duration::from_secs(4),
                limits,
            )
            .await
            .expect("the old epoch's fetch finishes");
            let message = batch.pop().expect("one message");
            let seen = (message.payload().bytes().clone(), message.delivery());
            message
                .ack()
                .await
                .expect("acked on the old epoch's client");
            seen
        })
    };
    bounded("the long poll reaches the server", async {
        loop {
            let mut only_b: consumer::PullConsumer =
                stream.get_consumer("only-b").await.expect("consumer");
            if only_b.info().await.expect("info").num_waiting == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;

    // Epoch 2 is user b: ev.b yes, ev.a no.
    let receipt = install_over(&pools, &url, &settings, b"b:b-pw", 1).await;
    let new = running(&pools, &receipt, 3).await;
    assert_eq!(new.client().epoch(), Epoch::new(2));
    let ack = publish(
        &pools,
        &new,
        &dialer,
        &subject("b"),
        Bytes::from("from-b"),
        limits,
    )
    .await
    .expect("user b publishes to ev.b");
    let refused = publish(
        &pools,
        &new,
        &dialer,
        &subject("a"),
        Bytes::from("x"),
        limits,
    )
    .await;
    assert!(matches!(refused, Err(NatsError::Denied)), "{refused:?}");
    drop(new);

    let (payload, delivery) = bounded("the old call", waiting).await.expect("task");
    assert_eq!(payload.as_ref(), b"from-b");
    assert_eq!(delivery.stream_sequence, ack.sequence);

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}
