//! Streaming HTTP against a real loopback hyper origin: a finished stream
//! parks its connection; a dropped one destroys it (the origin reads EOF)
//! and returns the running capacity; a slow consumer keeps its capacity;
//! the response limit holds across chunks; a chunk over the tenant's
//! share ends the stream; a driver needs a worker slot before its
//! connection is dialed.

mod support;

use provider_pools_actors::{ConnectionCounts, Limits};
use provider_pools_adapters::http_origin::{call_streaming, BodyLimits, HttpDialer, HttpError};
use support::origin::Origin;
use support::{bounded, eventually, get, install, running, start};

#[tokio::test]
async fn a_finished_stream_parks_its_connection_and_releases_its_owner() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    for session in 1..=3 {
        let request = running(&pools, &receipt, session).await;
        let mut stream = call_streaming(
            &pools,
            &request,
            &dialer,
            get("/chunks"),
            BodyLimits::default(),
        )
        .await
        .expect("200");
        drop(request);
        assert_eq!(stream.status(), 200);
        let mut body = Vec::new();
        while let Some(chunk) = bounded("a chunk", stream.next_chunk()).await {
            body.extend_from_slice(chunk.expect("chunk").bytes());
        }
        assert_eq!(body, b"one,two,three");
        // The finished stream, still held, owns nothing any more.
        eventually("the connection parked and the owner released", || {
            let snapshot = pools.snapshot();
            snapshot.connections.idle == 1 && snapshot.running_requests == 0
        })
        .await;
        assert!(bounded("after the end", stream.next_chunk())
            .await
            .is_none());
    }
    assert_eq!(origin.accepted(), 1, "every stream reused one connection");
}

#[tokio::test]
async fn dropping_a_stream_midway_destroys_its_connection_and_returns_capacity() {
    let mut origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    let request = running(&pools, &receipt, 1).await;
    let mut stream = call_streaming(
        &pools,
        &request,
        &dialer,
        get("/hang"),
        BodyLimits::default(),
    )
    .await
    .expect("200");
    drop(request);
    let first = bounded("the first chunk", stream.next_chunk()).await;
    assert_eq!(
        first.expect("a chunk").expect("data").bytes().as_ref(),
        b"first"
    );
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.running_requests, 1, "{snapshot:?}");
    assert_eq!(snapshot.connections.active, 1, "{snapshot:?}");

    drop(stream);
    origin.client_closed().await;
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
    eventually("the running capacity returned", || {
        pools.snapshot().running_requests == 0
    })
    .await;

    let request = running(&pools, &receipt, 2).await;
    let stream = call_streaming(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect("200");
    drop(stream);
    assert_eq!(
        origin.accepted(),
        2,
        "the dropped connection was not reused"
    );
}

#[tokio::test]
async fn a_slow_consumer_keeps_its_capacity_until_it_drops_the_stream() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    let request = running(&pools, &receipt, 1).await;
    let stream = call_streaming(
        &pools,
        &request,
        &dialer,
        get("/chunks"),
        BodyLimits::default(),
    )
    .await
    .expect("200");
    drop(request);
    // Nobody reads the slow stream's body. Another request's full
    // exchange runs meanwhile, and the held stream keeps what it owns.
    let other = running(&pools, &receipt, 2).await;
    let mut quick = call_streaming(&pools, &other, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect("200");
    drop(other);
    while bounded("a chunk", quick.next_chunk()).await.is_some() {}
    drop(quick);
    eventually("only the slow stream runs", || {
        pools.snapshot().running_requests == 1
    })
    .await;
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.connections.active, 1, "{snapshot:?}");
    assert_eq!(origin.accepted(), 2, "the held connection was not shared");

    drop(stream);
    eventually("the slow stream's capacity returned", || {
        let snapshot = pools.snapshot();
        snapshot.running_requests == 0 && snapshot.connections.active == 0
    })
    .await;
}

#[tokio::test]
async fn the_response_limit_holds_across_chunks() {
    let mut origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = BodyLimits {
        max_response: 6,
        ..BodyLimits::default()
    };

    let request = running(&pools, &receipt, 1).await;
    let mut stream = call_streaming(&pools, &request, &dialer, get("/chunks"), limits)
        .await
        .expect("200");
    drop(request);
    let first = bounded("a chunk", stream.next_chunk()).await;
    assert_eq!(
        first.expect("a chunk").expect("data").bytes().as_ref(),
        b"one,"
    );
    let second = bounded("a chunk", stream.next_chunk()).await;
    let err = second.expect("an answer").expect_err("over the limit");
    assert!(
        matches!(err, HttpError::ResponseTooLarge { max: 6 }),
        "{err:?}"
    );
    assert!(bounded("after the error", stream.next_chunk())
        .await
        .is_none());
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
    origin.client_closed().await;
    eventually("the owner released", || {
        pools.snapshot().running_requests == 0
    })
    .await;
}

#[tokio::test]
async fn a_connections_driver_takes_no_provider_worker_slot() {
    let origin = Origin::start().await;
    let limits = Limits {
        provider_workers: 1,
        workers_per_tenant: 1,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let (release, blocker) = tokio::sync::oneshot::channel::<()>();
    let busy = pools
        .spawn(move || async move {
            let _ = blocker.await;
        })
        .await
        .expect("the only worker slot");

    // Two held streams, two connections, two drivers: none needs the
    // worker slot the job holds.
    let first = running(&pools, &receipt, 1).await;
    let one = call_streaming(&pools, &first, &dialer, get("/hang"), BodyLimits::default())
        .await
        .expect("200");
    let second = running(&pools, &receipt, 2).await;
    let two = call_streaming(
        &pools,
        &second,
        &dialer,
        get("/hang"),
        BodyLimits::default(),
    )
    .await
    .expect("200");
    let snapshot = pools.snapshot();
    assert_eq!(
        (
            snapshot.workers,
            snapshot.drivers,
            snapshot.connections.active
        ),
        (1, 2, 2),
        "{snapshot:?}"
    );
    assert_eq!(origin.accepted(), 2);

    drop((one, first, two, second));
    eventually("the drivers joined", || pools.snapshot().drivers == 0).await;
    release.send(()).expect("the job waits");
    bounded("the job", busy.join()).await.expect("joined");
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn a_held_chunk_keeps_its_charge_and_the_request_after_the_stream_is_gone() {
    let mut origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let mut stream = call_streaming(
        &pools,
        &request,
        &dialer,
        get("/hang"),
        BodyLimits::default(),
    )
    .await
    .expect("200");
    drop(request);
    let before = pools.snapshot().metadata_bytes;
    let chunk = bounded("the first chunk", stream.next_chunk())
        .await
        .expect("a chunk")
        .expect("data");
    assert_eq!(
        pools.snapshot().metadata_bytes,
        before + chunk.bytes().len() as u32,
        "the chunk is charged"
    );
    drop(stream);
    origin.client_closed().await;
    assert_eq!(
        pools.snapshot().running_requests,
        1,
        "the chunk keeps the request"
    );
    drop(chunk);
    eventually("the running capacity returned with the chunk", || {
        pools.snapshot().running_requests == 0
    })
    .await;
}

#[tokio::test]
async fn a_stream_past_its_deadline_is_closed_by_its_driver_and_keeps_its_charges() {
    let mut origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(200);
    let request = support::running_until(&pools, &receipt, "t", 1, deadline).await;
    let mut stream = call_streaming(
        &pools,
        &request,
        &dialer,
        get("/hang"),
        BodyLimits::default(),
    )
    .await
    .expect("200");
    drop(request);
    // Nobody reads: the driver alone closes the socket at the deadline, and
    // the origin reads EOF.
    origin.client_closed().await;
    // The stream still owns its connection charge and its running owner.
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.running_requests, snapshot.connections.active),
        (1, 1),
        "{snapshot:?}"
    );
    for _ in 0..2 {
        let read = bounded("a refused read", stream.next_chunk()).await;
        assert!(
            matches!(read, Some(Err(HttpError::Timeout { .. }))),
            "{read:?}"
        );
    }
    assert_eq!(pools.snapshot().running_requests, 1, "still owned");
    drop(stream);
    eventually("the stream's charges returned once it was dropped", || {
        let snapshot = pools.snapshot();
        snapshot.running_requests == 0 && snapshot.connections == ConnectionCounts::default()
    })
    .await;
}

#[tokio::test]
async fn a_streamed_chunk_over_the_tenant_share_ends_the_stream_and_destroys_its_connection() {
    const SHARE: u32 = 256 * 1024;
    let mut origin = Origin::start().await;
    let pools = start(Limits {
        metadata_per_tenant: SHARE,
        ..Limits::DEFAULT
    })
    .await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let baseline = pools.snapshot().metadata_bytes;
    let limits = BodyLimits {
        max_response: BodyLimits::CEILING.max_response,
        ..BodyLimits::default()
    };
    let mut stream = call_streaming(&pools, &request, &dialer, get("/huge"), limits)
        .await
        .expect("200");
    // The consumer keeps every chunk: the share fills.
    let mut kept = Vec::new();
    let err = loop {
        match bounded("a chunk", stream.next_chunk()).await {
            Some(Ok(chunk)) => kept.push(chunk),
            Some(Err(err)) => break err,
            None => panic!("8 MiB read within a 256 KiB share"),
        }
    };
    assert!(matches!(err, HttpError::Staging(_)), "{err:?}");
    assert_eq!(err.code(), "capacity");
    assert!(stream.next_chunk().await.is_none(), "the stream ended");
    origin.client_closed().await;
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.connections, ConnectionCounts::default());
    drop((kept, stream));
    eventually(
        "every chunk's charge returned, and the connection's",
        || {
            let snapshot = pools.snapshot();
            snapshot.drivers == 0 && snapshot.metadata_bytes == baseline
        },
    )
    .await;
    drop(request);
}
