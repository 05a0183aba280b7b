//! The Vault KV-v2 adapter against a real OpenBao dev server: reads,
//! versions, writes with check-and-set, metadata; 404, 403 and
//! check-and-set conflicts; bounds on what is written and read. A relay in
//! front of the server counts the client's sockets.

mod support;

use provider_pools_actors::Limits;
use provider_pools_adapters::http_origin::HttpDialer;
use provider_pools_adapters::vault::{self, PathError, SecretPath, VaultError, VaultLimits};
use serde_json::Value;
use support::relay::Relay;
use support::vault::{bao_call, data, install, running, start_bao, ROOT};
use support::{deadline, eventually, start};

fn path(text: &str) -> SecretPath {
    SecretPath::parse(text).expect("valid path")
}

async fn assert_clean_shutdown(pools: &provider_pools_actors::ProviderPools) {
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "shutdown leaves {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_reads_versions_and_metadata_on_one_socket() {
    let bao = start_bao().await;
    let mut relay = Relay::start(bao.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &receipt, 1).await;
    let db = path("app/db");

    let first = vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        data(&[("user", "alice")]),
        Some(0),
        limits,
    )
    .await
    .expect("first write");
    assert_eq!(first.version, 1);
    let second = data(&[("user", "bob"), ("note", "rotated")]);
    let written = vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        second.clone(),
        Some(1),
        limits,
    )
    .await
    .expect("second write");
    assert_eq!(written.version, 2);

    let latest = vault::read(&pools, &request, &dialer, &db, limits)
        .await
        .expect("read latest");
    assert_eq!(latest.metadata.version, 2);
    assert_eq!(latest.to_map().expect("object"), second);
    let older = vault::read_version(&pools, &request, &dialer, &db, 1, limits)
        .await
        .expect("read version 1");
    assert_eq!(older.metadata.version, 1);
    assert_eq!(older.to_map().expect("object"), data(&[("user", "alice")]));

    let metadata = vault::read_metadata(&pools, &request, &dialer, &db, limits)
        .await
        .expect("read metadata");
    assert_eq!(metadata.current_version, 2);
    assert_eq!(
        metadata.versions.keys().copied().collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(!metadata.created_time.is_empty() && !metadata.updated_time.is_empty());
    assert!(metadata
        .versions
        .values()
        .all(|v| !v.destroyed && v.deletion_time.is_empty()));

    // The server itself holds what was written.
    let (status, stored) = bao_call(bao.addr(), "GET", "/v1/secret/data/app/db", ROOT, None).await;
    assert_eq!(status, 200);
    assert_eq!(stored["data"]["data"], Value::Object(second));

    // Five calls, one dial, one socket: the connection was parked and reused.
    assert_eq!(dialer.dials(), 1);
    assert_eq!(relay.accepted(), 1);
    eventually("the connection is parked", || {
        let c = pools.snapshot().connections;
        (c.active, c.idle) == (0, 1)
    })
    .await;

    drop((latest, older, metadata, request));
    assert_clean_shutdown(&pools).await;
    // Shutdown destroyed the idle connection: its socket is closed.
    relay.client_closed().await;
    eventually("the relay's sockets to close", || relay.open() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_secret_or_version_is_not_found() {
    let bao = start_bao().await;
    let pools = start(Limits::DEFAULT).await;
    let target = format!("http://{}", bao.addr());
    let receipt = install(&pools, &target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &receipt, 1).await;

    let missing = path("app/missing");
    let err = vault::read(&pools, &request, &dialer, &missing, limits)
        .await
        .expect_err("nothing there");
    assert!(matches!(err, VaultError::NotFound), "{err:?}");
    assert_eq!(err.code(), "not_found");
    let err = vault::read_metadata(&pools, &request, &dialer, &missing, limits)
        .await
        .expect_err("no metadata");
    assert!(matches!(err, VaultError::NotFound), "{err:?}");

    let db = path("app/db");
    vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        data(&[("k", "v")]),
        None,
        limits,
    )
    .await
    .expect("write");
    let err = vault::read_version(&pools, &request, &dialer, &db, 7, limits)
        .await
        .expect_err("no version 7");
    assert!(matches!(err, VaultError::NotFound), "{err:?}");

    // A 404 is a complete answer: the connection was kept, never redialed.
    assert_eq!(dialer.dials(), 1);
    eventually("the connection is parked", || {
        pools.snapshot().connections.idle == 1
    })
    .await;
    drop(request);
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_denied_and_never_shown() {
    const WRONG: &str = "s.CANARY-wrong-token-7f3a";
    let bao = start_bao().await;
    let pools = start(Limits::DEFAULT).await;
    let target = format!("http://{}", bao.addr());
    let receipt = install(&pools, &target, &[], WRONG.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &receipt, 1).await;

    let err = vault::read(&pools, &request, &dialer, &path("app/db"), limits)
        .await
        .expect_err("403");
    assert!(matches!(err, VaultError::Denied), "{err:?}");
    assert_eq!(err.code(), "denied");
    let err = vault::write(
        &pools,
        &request,
        &dialer,
        &path("app/db"),
        data(&[("k", "v")]),
        None,
        limits,
    )
    .await
    .expect_err("403");
    assert!(matches!(err, VaultError::Denied), "{err:?}");
    for text in [
        format!("{err} {err:?}"),
        format!("{dialer:?}"),
        format!("{request:?}"),
    ] {
        assert!(!text.contains("CANARY"), "leaks the token: {text}");
    }
    drop(request);
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_and_set_mismatch_is_a_conflict_and_writes_nothing() {
    let bao = start_bao().await;
    let pools = start(Limits::DEFAULT).await;
    let target = format!("http://{}", bao.addr());
    let receipt = install(&pools, &target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &receipt, 1).await;
    let db = path("app/db");
    let original = data(&[("user", "alice")]);

    vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        original.clone(),
        Some(0),
        limits,
    )
    .await
    .expect("create with cas 0");
    for stale in [0, 5] {
        let err = vault::write(
            &pools,
            &request,
            &dialer,
            &db,
            data(&[("user", "mallory")]),
            Some(stale),
            limits,
        )
        .await
        .expect_err("stale cas");
        assert!(
            matches!(err, VaultError::CasConflict),
            "cas {stale}: {err:?}"
        );
        assert_eq!(err.code(), "cas_conflict");
    }
    let current = vault::read(&pools, &request, &dialer, &db, limits)
        .await
        .expect("read");
    assert_eq!(current.metadata.version, 1, "no conflicting write landed");
    assert_eq!(current.to_map().expect("object"), original);
    let next = vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        data(&[("user", "bob")]),
        Some(1),
        limits,
    )
    .await
    .expect("matching cas");
    assert_eq!(next.version, 2);
    drop((current, request));
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_or_invalid_input_is_refused_before_any_dial() {
    let bao = start_bao().await;
    let relay = Relay::start(bao.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits {
        max_secret_bytes: 64,
        ..VaultLimits::default()
    };
    let request = running(&pools, &receipt, 1).await;
    let db = path("app/db");

    let big = "x".repeat(100);
    let err = vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        data(&[("blob", &big)]),
        None,
        limits,
    )
    .await
    .expect_err("over the limit");
    match &err {
        VaultError::TooLarge { what, len, max } => {
            assert_eq!((*what, *max), ("secret data", 64));
            assert!(*len > 100);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.code(), "too_large");
    let err = vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        data(&[("k", "v")]),
        Some(1 << 40),
        limits,
    )
    .await
    .expect_err("cas out of range");
    assert!(matches!(err, VaultError::InvalidWrite { .. }), "{err:?}");
    for (text, why) in [
        ("../sys/seal", PathError::DotSegment),
        ("/app", PathError::Absolute),
        ("app?version=1", PathError::Charset),
    ] {
        assert_eq!(SecretPath::parse(text), Err(why), "{text}");
    }

    assert_eq!(dialer.dials(), 0, "refused before any dial");
    assert_eq!(relay.accepted(), 0, "no socket opened");
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.connections, Default::default());
    drop(request);
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_response_destroys_its_connection() {
    let bao = start_bao().await;
    let mut relay = Relay::start(bao.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let db = path("app/big");
    let big = "y".repeat(8 * 1024);
    vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        data(&[("blob", &big)]),
        None,
        VaultLimits::default(),
    )
    .await
    .expect("write 8 KiB");

    let small = VaultLimits {
        max_response_bytes: 1024,
        ..VaultLimits::default()
    };
    let err = vault::read(&pools, &request, &dialer, &db, small)
        .await
        .expect_err("response over the limit");
    assert!(
        matches!(
            err,
            VaultError::TooLarge {
                what: "response body",
                max: 1024,
                ..
            }
        ),
        "{err:?}"
    );
    relay.client_closed().await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.connections.active, snapshot.connections.idle),
        (0, 0)
    );

    // The next call dials a fresh client.
    let whole = vault::read(&pools, &request, &dialer, &db, VaultLimits::default())
        .await
        .expect("read with room");
    assert_eq!(whole.data.bytes().len(), big.len() + r#"{"blob":""}"#.len());
    assert_eq!(dialer.dials(), 2);
    drop((whole, request));
    assert_clean_shutdown(&pools).await;
}
