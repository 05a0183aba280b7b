//! S3 objects against a real moto server, through a loopback relay that
//! counts connections: put, streamed get, head, list and delete on the
//! pools' own connections; not-found; the size bounds; configuration and
//! credential refusals before any dial.

mod s3_support;
mod support;

use provider_pools_actors::{Bytes, ConnectionCounts, Limits};
use provider_pools_adapters::s3::{
    delete, get, head, list, put, put_input, ObjectKey, S3ConfigError, S3Error, S3Limits,
};
use provider_pools_test_peers::Moto;
use s3_support::{create_bucket, dialer, endpoint, install, running, running_with};
use support::relay::Relay;
use support::{bounded, eventually, start};

fn key(text: &str) -> ObjectKey {
    ObjectKey::parse(text).expect("key")
}

async fn read_all(reader: &mut provider_pools_adapters::s3::S3Reader) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(chunk) = bounded("a chunk", reader.next_chunk()).await {
        body.extend_from_slice(chunk.expect("chunk").bytes());
    }
    body
}

async fn assert_shutdown_clean(pools: &provider_pools_actors::ProviderPools) {
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.connections, ConnectionCounts::default());
    assert_eq!(report.running_requests, 0);
    assert_eq!(report.metadata_bytes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_round_trip_on_pooled_connections() {
    let moto = Moto::start();
    create_bucket(moto.addr()).await;
    let relay = Relay::start(moto.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let limits = S3Limits::default();
    let body = Bytes::from(vec![7u8; 200 * 1024]);

    let request = running(&pools, &receipt, 1).await;
    let stored = put(
        &pools,
        &request,
        &dialer,
        &key("a/one.bin"),
        body.clone(),
        limits,
    )
    .await
    .expect("put");
    assert_eq!(stored.len, body.len() as u64);
    assert!(stored.etag.is_some());
    let meta = head(&pools, &request, &dialer, &key("a/one.bin"), limits)
        .await
        .expect("head");
    assert_eq!(meta.len, body.len() as u64);

    let mut reader = get(&pools, &request, &dialer, &key("a/one.bin"), limits)
        .await
        .expect("get");
    drop(request);
    assert_eq!(reader.len(), body.len() as u64);
    assert_eq!(read_all(&mut reader).await, body.as_ref());
    // The finished reader, still held, owns nothing any more: moto closes
    // every connection (`Connection: close`), so none is ever parked.
    eventually("the connection destroyed and the owner released", || {
        let snapshot = pools.snapshot();
        snapshot.connections == ConnectionCounts::default() && snapshot.running_requests == 0
    })
    .await;

    let request = running(&pools, &receipt, 2).await;
    put(
        &pools,
        &request,
        &dialer,
        &key("a/two.bin"),
        Bytes::from_static(b"2"),
        limits,
    )
    .await
    .expect("put");
    put(
        &pools,
        &request,
        &dialer,
        &key("b/three.bin"),
        Bytes::from_static(b"3"),
        limits,
    )
    .await
    .expect("put");
    let listed = list(&pools, &request, &dialer, Some(&key("a/")), limits)
        .await
        .expect("list");
    let names: Vec<_> = listed.iter().map(|o| (o.key.as_str(), o.len)).collect();
    assert_eq!(names, [("a/one.bin", 200 * 1024), ("a/two.bin", 1)]);
    delete(&pools, &request, &dialer, &key("a/one.bin"), limits)
        .await
        .expect("delete");
    let listed = list(&pools, &request, &dialer, None, limits)
        .await
        .expect("list");
    let names: Vec<_> = listed.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(names, ["a/two.bin", "b/three.bin"]);
    drop(request);

    // Eight calls, eight connections: moto answers `Connection: close`.
    assert_eq!(relay.accepted(), 8);
    assert_eq!(dialer.dials(), 8);
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
    assert_shutdown_clean(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_staged_input_is_stored_and_a_listing_is_bounded() {
    let moto = Moto::start();
    create_bucket(moto.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let target = endpoint(moto.addr());
    let receipt = install(&pools, &target, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let limits = S3Limits {
        max_list: 2,
        ..S3Limits::default()
    };

    for (session, name) in [(1, "in/1"), (2, "in/2"), (3, "in/3")] {
        let request = running_with(&pools, &receipt, session, Bytes::from(name)).await;
        put_input(&pools, &request, &dialer, &key(name), limits)
            .await
            .expect("put");
    }
    let request = running(&pools, &receipt, 4).await;
    let mut reader = get(&pools, &request, &dialer, &key("in/2"), limits)
        .await
        .expect("get");
    assert_eq!(read_all(&mut reader).await, b"in/2");
    let err = list(&pools, &request, &dialer, Some(&key("in/")), limits)
        .await
        .expect_err("three keys, two allowed");
    assert!(matches!(err, S3Error::TooMany { limit: 2 }), "{err:?}");
    assert_eq!(err.code(), "too_many");
    drop((request, reader));
    assert_shutdown_clean(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_key_is_not_found() {
    let moto = Moto::start();
    create_bucket(moto.addr()).await;
    let relay = Relay::start(moto.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let request = running(&pools, &receipt, 1).await;
    let limits = S3Limits::default();

    let err = head(&pools, &request, &dialer, &key("missing"), limits)
        .await
        .expect_err("404");
    assert!(matches!(err, S3Error::NotFound), "{err:?}");
    let err = get(&pools, &request, &dialer, &key("missing"), limits)
        .await
        .expect_err("NoSuchKey");
    assert!(matches!(err, S3Error::NotFound), "{err:?}");
    assert_eq!(err.code(), "not_found");
    drop(request);
    assert_eq!(relay.accepted(), 2);
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
    assert_shutdown_clean(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_put_is_refused_before_any_dial() {
    let moto = Moto::start();
    let relay = Relay::start(moto.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let request = running(&pools, &receipt, 1).await;
    let limits = S3Limits {
        max_object: 1024,
        ..S3Limits::default()
    };

    let err = put(
        &pools,
        &request,
        &dialer,
        &key("big"),
        Bytes::from(vec![0; 1025]),
        limits,
    )
    .await
    .expect_err("over the limit");
    assert!(
        matches!(
            err,
            S3Error::TooLarge {
                len: 1025,
                limit: 1024
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), "too_large");
    assert_eq!(dialer.dials(), 0);
    assert_eq!(relay.accepted(), 0);
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
    drop(request);
    assert_shutdown_clean(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_over_the_limit_is_refused_and_its_connection_destroyed() {
    let moto = Moto::start();
    create_bucket(moto.addr()).await;
    let mut relay = Relay::start(moto.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let request = running(&pools, &receipt, 1).await;

    let body = Bytes::from(vec![1u8; 64 * 1024]);
    put(
        &pools,
        &request,
        &dialer,
        &key("big"),
        body,
        S3Limits::default(),
    )
    .await
    .expect("put");
    let small = S3Limits {
        max_object: 1024,
        ..S3Limits::default()
    };
    let err = get(&pools, &request, &dialer, &key("big"), small)
        .await
        .expect_err("over the limit");
    assert!(
        matches!(
            err,
            S3Error::TooLarge {
                len: 65536,
                limit: 1024
            }
        ),
        "{err:?}"
    );
    relay.client_closed().await;
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
    drop(request);
    assert_shutdown_clean(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_credential_fails_before_any_dial_without_showing_it() {
    let moto = Moto::start();
    let relay = Relay::start(moto.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, 0, b"CANARYKEYCANARYSECRET").await;
    let dialer = dialer(&pools);
    let request = running(&pools, &receipt, 1).await;

    let err = head(&pools, &request, &dialer, &key("k"), S3Limits::default())
        .await
        .expect_err("no separator");
    assert!(
        matches!(err, S3Error::Config(S3ConfigError::Credential { .. })),
        "{err:?}"
    );
    assert_eq!(err.code(), "invalid_credential");
    let shown = format!("{err} {err:?} {request:?} {dialer:?}");
    assert!(!shown.contains("CANARY"), "{shown}");
    assert_eq!(dialer.dials(), 0);
    assert_eq!(relay.accepted(), 0);
    drop(request);
    assert_shutdown_clean(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_without_region_is_refused_naming_the_setting() {
    let config = s3_support::config("http://127.0.0.1:9000");
    assert!(provider_pools_adapters::s3::validate(&config).is_ok());
    let mut config = config;
    config.settings.remove("region");
    let err = provider_pools_adapters::s3::validate(&config).expect_err("no region");
    assert_eq!(err, S3ConfigError::Missing { setting: "region" });
    assert!(err.to_string().contains("`region`"), "{err}");
}

/// moto closes every connection, so parking is shown against the http
/// tests' keep-alive hyper origin: bucket `status`, key `404` is its
/// `/status/404` route, a keep-alive 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_alive_endpoint_gets_one_connection_parked_and_reused() {
    let origin = support::origin::Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let config = s3_support::config_for(&origin.target, "status");
    let receipt = s3_support::install_config(&pools, config, 0, b"AKIDEXAMPLE:secret").await;
    let dialer = dialer(&pools);
    let limits = S3Limits::default();

    for session in 1..=3 {
        let request = running(&pools, &receipt, session).await;
        let err = head(&pools, &request, &dialer, &key("404"), limits)
            .await
            .expect_err("404");
        assert!(matches!(err, S3Error::NotFound), "{err:?}");
        let err = get(&pools, &request, &dialer, &key("404"), limits)
            .await
            .expect_err("404");
        assert!(matches!(err, S3Error::NotFound), "{err:?}");
        drop(request);
        eventually("the connection parked", || {
            let snapshot = pools.snapshot();
            snapshot.connections.idle == 1 && snapshot.running_requests == 0
        })
        .await;
    }
    assert_eq!(origin.accepted(), 1, "six calls on one connection");
    let port = origin.target.rsplit(':').next().expect("port");
    for seen in origin.seen() {
        assert_eq!(seen.path, "/status/404", "path-style, origin-form");
        let host = seen.headers.get("host").expect("host");
        assert_eq!(host.as_bytes(), format!("127.0.0.1:{port}").as_bytes());
        assert!(seen.headers.contains_key("authorization"), "signed");
    }
    assert_shutdown_clean(&pools).await;
}
