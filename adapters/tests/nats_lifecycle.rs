//! The life of a pooled NATS client against a real nats-server: its job is
//! reserved before it connects, a cancelled call closes it through cleanup
//! before its charges return, and a client that lost its server is never
//! reused and stops on its own.

mod support;

use bytes::Bytes;
use provider_pools_actors::{ConnectError, DialErrorKind, InstallReceipt, Limits, ProviderPools};
use provider_pools_adapters::nats::{publish, NatsDialer, NatsError, NatsLimits, Subject};
use provider_pools_test_peers::Nats;
use support::nats::{admin, assert_clean, install, prepare, running};
use support::relay::Relay;
use support::{bounded, eventually, start};
use tokio::sync::oneshot;

fn subject(text: &str) -> Subject {
    Subject::parse(text).expect("subject")
}

/// Publishes once through `relay` (the client is parked), then starts a
/// publish whose ack the relay holds back and drops it once the server has
/// the message. Returns with the client handed to cleanup.
async fn cancel_a_publish_midway(
    pools: &ProviderPools,
    relay: &Relay,
    receipt: &InstallReceipt,
    dialer: &NatsDialer,
) {
    let limits = NatsLimits::default();
    let warm = running(pools, receipt, 1).await;
    publish(
        pools,
        &warm,
        dialer,
        &subject("warm"),
        Bytes::from("w"),
        limits,
    )
    .await
    .expect("a first publish");
    drop(warm);

    relay.hold();
    let held = running(pools, receipt, 2).await;
    let held_subject = subject("held");
    let mut call = Box::pin(publish(
        pools,
        &held,
        dialer,
        &held_subject,
        Bytes::from("h"),
        limits,
    ));
    tokio::select! {
        done = &mut call => panic!("finished while its ack was held back: {done:?}"),
        () = relay.sent("ev.held") => {}
    }
    drop(call);
    drop(held);
    // Nothing ran since the drop: the client was handed to cleanup and is
    // still charged, still holding its request and its driver job.
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.connections.active, 1, "{snapshot:?}");
    assert_eq!(snapshot.running_requests, 1, "{snapshot:?}");
    assert_eq!(snapshot.drivers, 1, "{snapshot:?}");
}

async fn everything_returns(pools: &ProviderPools) {
    eventually("everything returns once the client is gone", || {
        let snapshot = pools.snapshot();
        snapshot.connections == Default::default()
            && snapshot.running_requests == 0
            && snapshot.drivers == 0
            && snapshot.cleanup_jobs == 0
            && snapshot.failed_cleanup == 0
    })
    .await;
}

#[tokio::test]
async fn cancelling_a_publish_midway_closes_the_client_before_its_charges_return() {
    let peer = Nats::start();
    let js = admin(&format!("nats://{}", peer.addr())).await;
    prepare(&js).await;
    let mut relay = Relay::start(peer.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.url("nats"), b"").await;
    let dialer = NatsDialer::new(pools.clone());

    cancel_a_publish_midway(&pools, &relay, &receipt, &dialer).await;
    // The server answers the drain: the client stops and closes its socket.
    relay.release();
    relay.client_closed().await;
    everything_returns(&pools).await;
    assert_eq!(
        relay.accepted(),
        1,
        "the cancelled call used the parked client"
    );

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}

#[tokio::test]
async fn a_close_the_server_never_answers_still_stops_the_client() {
    let peer = Nats::start();
    let js = admin(&format!("nats://{}", peer.addr())).await;
    prepare(&js).await;
    let mut relay = Relay::start(peer.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.url("nats"), b"").await;
    let dialer = NatsDialer::new(pools.clone());

    cancel_a_publish_midway(&pools, &relay, &receipt, &dialer).await;
    // The drain's answer stays held back: past the drain wait the close
    // drops the client's handles, which stops it.
    relay.client_closed().await;
    everything_returns(&pools).await;

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}

#[tokio::test]
async fn a_client_starts_its_driver_without_a_provider_worker_slot() {
    let peer = Nats::start();
    let js = admin(&format!("nats://{}", peer.addr())).await;
    prepare(&js).await;
    let relay = Relay::start(peer.addr()).await;
    let limits = Limits {
        provider_workers: 1,
        workers_per_tenant: 1,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let receipt = install(&pools, &relay.url("nats"), b"").await;
    let dialer = NatsDialer::new(pools.clone());
    let (release, blocker) = oneshot::channel::<()>();
    let busy = pools
        .spawn(move || async move {
            let _ = blocker.await;
        })
        .await
        .expect("the only worker slot");

    let running1 = running(&pools, &receipt, 1).await;
    publish(
        &pools,
        &running1,
        &dialer,
        &subject("x"),
        Bytes::from("p"),
        NatsLimits::default(),
    )
    .await
    .expect("the client's driver needs no worker slot");
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.workers, snapshot.drivers),
        (1, 1),
        "the blocking job on the only slot, the client's driver beside it: {snapshot:?}"
    );
    assert_eq!(relay.accepted(), 1);

    release.send(()).expect("job waiting");
    bounded("the blocking job", busy.join())
        .await
        .expect("joined");
    drop(running1);
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}

#[tokio::test]
async fn a_client_that_lost_its_server_stops_and_is_never_reused() {
    let mut peer = Nats::start();
    let url = format!("nats://{}", peer.addr());
    let js = admin(&url).await;
    prepare(&js).await;
    drop(js);
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &url, b"").await;
    let dialer = NatsDialer::new(pools.clone());
    let limits = NatsLimits::default();
    let running1 = running(&pools, &receipt, 1).await;
    publish(
        &pools,
        &running1,
        &dialer,
        &subject("x"),
        Bytes::from("p"),
        limits,
    )
    .await
    .expect("published");
    eventually("the client is parked", || {
        pools.snapshot().connections.idle == 1
    })
    .await;

    peer.kill();
    // One reconnect attempt is refused by the client's own auth callback or
    // by the closed port; then its tasks end without anyone asking.
    eventually("the lost client's tasks end", || {
        pools.snapshot().drivers == 0
    })
    .await;
    assert_eq!(
        pools.snapshot().connections.idle,
        1,
        "still owned until destroyed"
    );

    let lost = publish(
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
            lost,
            Err(NatsError::Connect(ConnectError::Dial(ref dial))) if dial.kind == DialErrorKind::Refused
        ),
        "the dead client was not used; a fresh dial was refused: {lost:?}"
    );
    assert_eq!(dialer.dials(), 2);
    drop(running1);
    eventually("the dead client is destroyed", || {
        let snapshot = pools.snapshot();
        snapshot.connections == Default::default() && snapshot.drivers == 0
    })
    .await;

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}
