//! Cancellation mid-call against a real moto server, through a loopback
//! relay that sees the adapter's side of each connection: a streamed get
//! dropped midway and a put dropped while moto's answer is on its way
//! destroy their connections (never parked); the connection charges are
//! gone once the relay has read the close, and everything returns to zero.

mod s3_support;
mod support;

use provider_pools_actors::{Bytes, ConnectionCounts, Limits};
use provider_pools_adapters::s3::{get, list, put, ObjectKey, S3Limits};
use provider_pools_test_peers::Moto;
use s3_support::{create_bucket, dialer, install, running};
use support::relay::Relay;
use support::{bounded, eventually, start, task};

fn key(text: &str) -> ObjectKey {
    ObjectKey::parse(text).expect("key")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_get_midway_destroys_its_connection_and_returns_capacity() {
    let moto = Moto::start();
    create_bucket(moto.addr()).await;
    let mut relay = Relay::start(moto.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let limits = S3Limits::default();

    let seed = running(&pools, &receipt, 1).await;
    let object = Bytes::from(vec![3u8; 4 * 1024 * 1024]);
    put(&pools, &seed, &dialer, &key("large"), object, limits)
        .await
        .expect("put");
    drop(seed);
    relay.client_closed().await; // moto closed the put's connection

    let request = running(&pools, &receipt, 2).await;
    let mut reader = get(&pools, &request, &dialer, &key("large"), limits)
        .await
        .expect("get");
    drop(request);
    let first = bounded("the first chunk", reader.next_chunk())
        .await
        .expect("a chunk")
        .expect("data");
    assert!(reader.received() < reader.len(), "dropped midway");
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.connections.active, 1, "{snapshot:?}");
    assert_eq!(snapshot.running_requests, 1, "the reader holds its owner");
    assert!(relay.no_close_pending(), "the connection is still open");

    drop(reader);
    relay.client_closed().await;
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
    // The chunk handed out is the consumer's and still holds the owner.
    assert_eq!(pools.snapshot().running_requests, 1);
    drop(first);
    eventually("the running capacity returned", || {
        pools.snapshot().running_requests == 0
    })
    .await;

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.connections, ConnectionCounts::default());
    assert_eq!(report.metadata_bytes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_put_mid_call_destroys_its_connection() {
    let moto = Moto::start();
    create_bucket(moto.addr()).await;
    let mut relay = Relay::start(moto.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let limits = S3Limits::default();
    let body = Bytes::from(vec![9u8; 256 * 1024]);

    // moto gets the whole request; its answer is held in the relay.
    relay.hold();
    let request = running(&pools, &receipt, 1).await;
    let call = {
        let (pools, dialer, request) = (pools.clone(), dialer.clone(), request.clone());
        let body = body.clone();
        task(async move { put(&pools, &request, &dialer, &key("doc"), body, limits).await })
    };
    eventually("moto received the whole put", || {
        relay.forwarded() > body.len()
    })
    .await;
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.connections.active, 1, "{snapshot:?}");
    assert!(relay.no_close_pending());

    call.abort();
    assert!(bounded("the call ends", call).await.is_err(), "cancelled");
    relay.client_closed().await;
    // The put's connection is destroyed. A dial the SDK had started is the
    // client's, not the call's: it may still finish, into the idle stash.
    eventually("nothing active or connecting", || {
        let counts = pools.snapshot().connections;
        counts.active == 0 && counts.connecting == 0 && counts.idle <= 1
    })
    .await;
    drop(request);
    eventually("the running capacity returned", || {
        pools.snapshot().running_requests == 0
    })
    .await;

    // The next call dials afresh: nothing was parked.
    relay.release();
    let request = running(&pools, &receipt, 2).await;
    // Whether moto stored the cancelled put is moto's business: the
    // pools promise only that its connection was destroyed.
    list(&pools, &request, &dialer, None, limits)
        .await
        .expect("a new connection serves the next call");
    assert_eq!(relay.accepted(), 2);
    drop(request);

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.connections, ConnectionCounts::default());
    assert_eq!(report.metadata_bytes, 0);
}
