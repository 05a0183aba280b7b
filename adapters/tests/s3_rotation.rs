//! Rotation during load against a real moto server in IAM authentication
//! mode: streamed gets running on epoch 1 (key A) when the provider
//! rotates to key B and key A is deleted in moto finish on their epoch;
//! new calls succeed, which moto allows only with B; a call still on
//! epoch 1 is refused (A is gone); the old epoch drains.

mod s3_support;
mod support;

use provider_pools_actors::{Bytes, ConnectionCounts, Limits};
use provider_pools_adapters::s3::{get, head, put, ObjectKey, S3Error, S3Limits, S3Reader};
use provider_pools_test_peers::Moto;
use s3_support::{
    access_key, create_bucket, dialer, endpoint, iam, install, open_window, running, user,
};
use support::{bounded, start, task};

/// Unauthenticated set-up requests: user with policy and key A (3), key B
/// (1), the bucket (1).
const SETUP: u32 = 5;
/// Streamed gets running on epoch 1 when it rotates.
const OLD_CALLS: usize = 4;
/// Calls on epoch 2 while the old ones finish.
const NEW_CALLS: u64 = 6;

fn key(text: &str) -> ObjectKey {
    ObjectKey::parse(text).expect("key")
}

async fn read_rest(mut reader: S3Reader, mut body: Vec<u8>) -> Vec<u8> {
    while let Some(chunk) = bounded("a chunk", reader.next_chunk()).await {
        body.extend_from_slice(chunk.expect("chunk").bytes());
    }
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_during_load_moves_new_calls_to_the_new_key() {
    let moto = Moto::start_authenticated(SETUP);
    let key_a = user(moto.addr(), "alpha", r#""s3:*""#, "*").await;
    let key_b = access_key(moto.addr(), "alpha").await;
    create_bucket(moto.addr()).await;
    let target = endpoint(moto.addr());
    let pools = start(Limits::DEFAULT).await;
    let epoch_1 = install(&pools, &target, 0, key_a.as_bytes()).await;
    let dialer = dialer(&pools);
    let limits = S3Limits::default();
    let object = Bytes::from(vec![5u8; 512 * 1024]);

    let seed = running(&pools, &epoch_1, 1).await;
    put(&pools, &seed, &dialer, &key("big"), object.clone(), limits)
        .await
        .expect("key A stores");
    drop(seed);

    // Load on epoch 1: streamed gets that have their first chunk, and one
    // admitted request that has not called yet.
    let mut old = Vec::new();
    for session in 0..OLD_CALLS as u64 {
        let request = running(&pools, &epoch_1, 10 + session).await;
        let mut reader = get(&pools, &request, &dialer, &key("big"), limits)
            .await
            .expect("key A reads");
        drop(request);
        let first = bounded("the first chunk", reader.next_chunk())
            .await
            .expect("a chunk")
            .expect("data");
        old.push((reader, first.bytes().to_vec()));
    }
    let late_old = running(&pools, &epoch_1, 20).await;
    assert_eq!(pools.snapshot().connections.active, OLD_CALLS as u32);

    // Rotate to key B, then delete key A in moto (one unauthenticated IAM
    // call; nothing else is in flight meanwhile).
    let epoch_2 = install(&pools, &target, 1, key_b.as_bytes()).await;
    assert_eq!(pools.snapshot().retained_epochs, 2);
    let (key_a_id, _) = key_a.split_once(':').expect("shape");
    open_window(moto.addr(), 1).await;
    iam(
        moto.addr(),
        &[
            ("Action", "DeleteAccessKey"),
            ("UserName", "alpha"),
            ("AccessKeyId", key_a_id),
        ],
    )
    .await;

    // New calls on epoch 2 run while the old streams finish.
    let mut new = Vec::new();
    for session in 0..NEW_CALLS {
        let (pools, dialer, epoch_2) = (pools.clone(), dialer.clone(), epoch_2.clone());
        new.push(task(async move {
            let request = running(&pools, &epoch_2, 100 + session).await;
            let name = key(&format!("new/{session}"));
            let body = Bytes::from(format!("written with B #{session}"));
            put(&pools, &request, &dialer, &name, body.clone(), limits).await?;
            let mut reader = get(&pools, &request, &dialer, &name, limits).await?;
            drop(request);
            let read = read_rest_result(&mut reader).await?;
            assert_eq!(read, body.as_ref());
            Ok::<_, S3Error>(())
        }));
    }
    let finishing: Vec<_> = old
        .into_iter()
        .map(|(reader, first)| task(read_rest(reader, first)))
        .collect();
    for call in finishing {
        let body = bounded("an old stream finishes", call).await.expect("task");
        assert_eq!(body, object.as_ref(), "the epoch-1 stream finished whole");
    }
    for call in new {
        bounded("a new call", call)
            .await
            .expect("task")
            .expect("moto accepts key B for new calls");
    }

    // A call still on epoch 1 signs with key A, which moto no longer knows.
    let err = head(&pools, &late_old, &dialer, &key("big"), limits)
        .await
        .expect_err("key A was deleted");
    assert!(matches!(err, S3Error::Denied { .. }), "{err:?}");
    drop(late_old);

    // The old epoch drains once its last call is gone.
    support::quiescent(&pools).await;
    assert_eq!(pools.snapshot().retained_epochs, 1, "epoch 1 drained");
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.connections, ConnectionCounts::default());
    assert_eq!(report.running_requests, 0);
    assert_eq!(report.metadata_bytes, 0);
}

async fn read_rest_result(reader: &mut S3Reader) -> Result<Vec<u8>, S3Error> {
    let mut body = Vec::new();
    while let Some(chunk) = reader.next_chunk().await {
        body.extend_from_slice(chunk?.bytes());
    }
    Ok(body)
}
