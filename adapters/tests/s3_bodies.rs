//! S3 answers held to the request's charges, and stale connections: an
//! object read over the tenant's metadata share fails at the first chunk
//! that does not fit (real moto behind a relay), an endless listing (which
//! the SDK buffers) and an endless error answer to a get fail at the
//! share rather than at their end, the
//! connection is destroyed and the share returns to its baseline; parked
//! connections the endpoint closed never fail the next get (a loopback
//! endpoint that closes idle keep-alive connections on its own schedule).

mod s3_support;
mod support;

use std::time::Duration;

use provider_pools_actors::{
    AdmitError, Bytes, ConnectionCounts, Limits, ProviderPools, StagedOutput,
};
use provider_pools_adapters::s3::{get, list, put, ObjectKey, S3Error, S3Limits, S3Reader};
use provider_pools_test_peers::Moto;
use s3_support::{create_bucket, dialer, install, install_config, running};
use support::idle::IdleOrigin;
use support::origin::Origin;
use support::relay::Relay;
use support::{bounded, deadline, eventually, io_turn, start, task};

fn key(text: &str) -> ObjectKey {
    ObjectKey::parse(text).expect("key")
}

/// A small tenant share, so that bodies stay small and tests fast.
const SHARE: u32 = 64 * 1024;

fn small_share() -> Limits {
    Limits {
        metadata_per_tenant: SHARE,
        ..Limits::DEFAULT
    }
}

fn is_over_the_share(err: &S3Error) -> bool {
    matches!(
        err,
        S3Error::Staging(AdmitError::Capacity {
            resource: "metadata_per_tenant",
            ..
        })
    )
}

async fn assert_clean_shutdown(pools: &ProviderPools) {
    let report = bounded("shutdown", pools.shutdown(deadline())).await;
    assert!(report.is_clean(), "shutdown leaves {report:?}");
}

/// Reads `reader` to its end, keeping every chunk (and its charge).
async fn read_to_end(reader: &mut S3Reader) -> Result<Vec<StagedOutput>, S3Error> {
    let mut kept = Vec::new();
    while let Some(chunk) = bounded("a chunk", reader.next_chunk()).await {
        kept.push(chunk?);
    }
    Ok(kept)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_s3_object_over_the_metadata_budget_fails_at_the_first_chunk_and_destroys_its_connection(
) {
    let moto = Moto::start();
    create_bucket(moto.addr()).await;
    let mut relay = Relay::start(moto.addr()).await;
    let pools = start(small_share()).await;
    let receipt = install(&pools, &relay.target, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let limits = S3Limits::default();
    let object = Bytes::from(vec![9u8; 1 << 20]);
    let request = running(&pools, &receipt, 1).await;
    put(&pools, &request, &dialer, &key("big"), object, limits)
        .await
        .expect("a 1 MiB put (its body is the caller's, not staged)");
    drop(request);
    relay.client_closed().await;
    // moto closes every connection: once the put's is gone (and its
    // driver job joined, which has a charge of its own), none is left.
    eventually("the put's connection, driver and request released", || {
        let snapshot = pools.snapshot();
        snapshot.connections == ConnectionCounts::default()
            && snapshot.drivers == 0
            && snapshot.running_requests == 0
    })
    .await;
    let request = running(&pools, &receipt, 2).await;
    let baseline = pools.snapshot().metadata_bytes;

    let mut reader = get(&pools, &request, &dialer, &key("big"), limits)
        .await
        .expect("the get opens");
    let mut kept = Vec::new();
    let err = loop {
        match bounded("a chunk", reader.next_chunk()).await {
            Some(Ok(chunk)) => kept.push(chunk),
            Some(Err(err)) => break err,
            None => panic!("a 1 MiB object read whole within a 64 KiB share"),
        }
    };
    assert!(is_over_the_share(&err), "{err:?}");
    let held: usize = kept.iter().map(|c| c.bytes().len()).sum();
    assert!(held <= SHARE as usize, "{held} bytes held over the share");
    eprintln!(
        "figures: {held} bytes in {} chunks held when a chunk passed the {SHARE}-byte share",
        kept.len()
    );
    assert!(reader.next_chunk().await.is_none(), "the reader ended");
    relay.client_closed().await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.connections.active, snapshot.connections.idle),
        (0, 0),
        "destroyed, not parked"
    );
    drop(kept);
    eventually("every chunk's charge returned", || {
        let snapshot = pools.snapshot();
        snapshot.connections == ConnectionCounts::default() && snapshot.metadata_bytes == baseline
    })
    .await;
    drop((reader, request));
    assert_clean_shutdown(&pools).await;
}

/// The SDK buffers a listing whole. The listing never ends: charged only
/// once read whole, it would end at the 16 MiB answer bound instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_s3_listing_the_sdk_buffers_fails_when_its_frames_pass_the_share() {
    let mut origin = Origin::start().await;
    let pools = start(small_share()).await;
    let config = s3_support::config_for(&origin.target, "endless");
    let receipt = install_config(&pools, config, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let request = running(&pools, &receipt, 1).await;
    let baseline = pools.snapshot().metadata_bytes;

    let err = bounded(
        "the endless listing to fail",
        list(&pools, &request, &dialer, None, S3Limits::CEILING),
    )
    .await
    .expect_err("an endless listing");
    assert!(is_over_the_share(&err), "{err:?}");
    origin.client_closed().await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.connections.active, snapshot.connections.idle),
        (0, 0)
    );
    eventually("every frame's charge returned", || {
        pools.snapshot().metadata_bytes == baseline
    })
    .await;
    drop(request);
    assert_clean_shutdown(&pools).await;
}

/// The SDK reads a get's error answer whole, although the get's own body
/// is streamed: it is charged too. Uncharged, it would end at the 8 MiB
/// object bound instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_error_answer_to_a_get_is_charged_and_fails_at_the_share() {
    let mut origin = Origin::start().await;
    let pools = start(small_share()).await;
    let receipt = install(&pools, &origin.target, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let request = running(&pools, &receipt, 1).await;
    let baseline = pools.snapshot().metadata_bytes;

    let err = bounded(
        "the endless error answer to fail",
        get(
            &pools,
            &request,
            &dialer,
            &key("endless-404"),
            S3Limits::default(),
        ),
    )
    .await
    .expect_err("an endless 404");
    assert!(is_over_the_share(&err), "{err:?}");
    origin.client_closed().await;
    eventually(
        "the connection destroyed and every frame's charge returned",
        || {
            let snapshot = pools.snapshot();
            snapshot.connections == ConnectionCounts::default()
                && snapshot.metadata_bytes == baseline
        },
    )
    .await;
    drop(request);
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_s3_connections_the_endpoint_closed_while_parked_never_fail_the_next_get() {
    const WAVE: usize = 8;
    let origin = IdleOrigin::start("hello", Duration::from_millis(100), WAVE).await;
    let pools = start(Limits {
        connections_per_client: 16,
        connections_per_tenant: 16,
        ..Limits::DEFAULT
    })
    .await;
    let receipt = install(&pools, &origin.target, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let limits = S3Limits::default();

    // One wave of gets, each on its own connection (the endpoint answers
    // none until all came), read whole and parked.
    let mut gets = Vec::new();
    for session in 1..=WAVE as u64 {
        let request = running(&pools, &receipt, session).await;
        let (pools, dialer) = (pools.clone(), dialer.clone());
        gets.push(task(async move {
            let mut reader = get(&pools, &request, &dialer, &key("wave"), limits).await?;
            read_to_end(&mut reader).await.map(|kept| kept.len())
        }));
    }
    for got in gets {
        bounded("a get of the wave", got)
            .await
            .expect("joined")
            .expect("get");
    }
    eventually("eight connections parked", || {
        pools.snapshot().connections.idle == WAVE as u32
    })
    .await;
    assert_eq!(dialer.dials(), WAVE as u64);

    // The endpoint closes all eight on its own schedule; the close has
    // reached this process's sockets, whether or not their drivers ran.
    origin.closed(WAVE).await;
    io_turn().await;
    let request = running(&pools, &receipt, 100).await;
    let mut reader = get(&pools, &request, &dialer, &key("after"), limits)
        .await
        .expect("a get after the endpoint closed every parked connection");
    let kept = read_to_end(&mut reader).await.expect("the object");
    let body: Vec<u8> = kept.iter().flat_map(|c| c.bytes().to_vec()).collect();
    assert_eq!(body, b"hello");
    assert_eq!(
        origin.arrivals("/objects/after"),
        [WAVE],
        "sent once, on a fresh connection"
    );
    assert_eq!(dialer.dials(), WAVE as u64 + 1);
    drop((kept, reader, request));
    eventually("only the fresh connection parked", || {
        pools.snapshot().connections.idle == 1
    })
    .await;
    assert_clean_shutdown(&pools).await;
}
