//! KV-v2 beyond read and write, against a real OpenBao dev server: list,
//! soft delete (latest and given versions), undelete, destroy, metadata
//! update; input refused before any dial; and a failure caused by one
//! tenant's request content leaving another tenant's calls untouched.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use provider_pools_actors::{Limits, OriginKind};
use provider_pools_adapters::http_origin::HttpDialer;
use provider_pools_adapters::vault::{
    self, MetadataUpdate, SecretPath, TransitKey, VaultError, VaultLimits, MAX_VERSIONS,
};
use serde_json::Value;
use support::relay::Relay;
use support::vault::{bao_call, data, install, running, start_bao, ROOT};
use support::{deadline, eventually, running_as, start};

fn path(text: &str) -> SecretPath {
    SecretPath::parse(text).expect("valid path")
}

async fn assert_clean_shutdown(pools: &provider_pools_actors::ProviderPools) {
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "shutdown leaves {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_deletes_undeletes_destroys_and_updates_metadata_on_one_socket() {
    let bao = start_bao().await;
    let relay = Relay::start(bao.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &receipt, 1).await;
    let db = path("app/db");
    for (i, user) in ["alice", "bob", "carol"].into_iter().enumerate() {
        let written = vault::write(
            &pools,
            &request,
            &dialer,
            &db,
            data(&[("user", user)]),
            None,
            limits,
        )
        .await
        .expect("write");
        assert_eq!(written.version, i as u64 + 1);
    }
    vault::write(
        &pools,
        &request,
        &dialer,
        &path("app/cache/x"),
        data(&[("k", "v")]),
        None,
        limits,
    )
    .await
    .expect("write a nested secret");

    // List: the folder's secrets and sub-folders.
    let listed = vault::list(&pools, &request, &dialer, Some(&path("app")), limits)
        .await
        .expect("list app/");
    assert_eq!(listed.keys, ["cache/", "db"]);
    let root = vault::list(&pools, &request, &dialer, None, limits)
        .await
        .expect("list the mount");
    assert_eq!(root.keys, ["app/"]);
    let err = vault::list(&pools, &request, &dialer, Some(&path("nothing")), limits)
        .await
        .expect_err("empty folder");
    assert!(matches!(err, VaultError::NotFound), "{err:?}");

    // Soft-delete the latest version, then undelete it.
    vault::delete_latest(&pools, &request, &dialer, &db, limits)
        .await
        .expect("delete latest");
    let err = vault::read(&pools, &request, &dialer, &db, limits)
        .await
        .expect_err("latest deleted");
    assert!(matches!(err, VaultError::NotFound), "{err:?}");
    let metadata = vault::read_metadata(&pools, &request, &dialer, &db, limits)
        .await
        .expect("metadata");
    assert!(!metadata.versions[&3].deletion_time.is_empty());
    drop(metadata);
    vault::undelete(&pools, &request, &dialer, &db, &[3], limits)
        .await
        .expect("undelete 3");
    let latest = vault::read(&pools, &request, &dialer, &db, limits)
        .await
        .expect("latest back");
    assert_eq!(latest.to_map().expect("object"), data(&[("user", "carol")]));
    drop(latest);

    // Soft-delete version 1, destroy version 2.
    vault::delete_versions(&pools, &request, &dialer, &db, &[1], limits)
        .await
        .expect("delete 1");
    vault::destroy(&pools, &request, &dialer, &db, &[2], limits)
        .await
        .expect("destroy 2");
    for version in [1, 2] {
        let err = vault::read_version(&pools, &request, &dialer, &db, version, limits)
            .await
            .expect_err("gone");
        assert!(matches!(err, VaultError::NotFound), "{version}: {err:?}");
    }
    // Undeleting a destroyed version restores nothing.
    vault::undelete(&pools, &request, &dialer, &db, &[2], limits)
        .await
        .expect("undelete 2 answers");
    let metadata = vault::read_metadata(&pools, &request, &dialer, &db, limits)
        .await
        .expect("metadata");
    assert!(!metadata.versions[&1].deletion_time.is_empty());
    assert!(!metadata.versions[&1].destroyed);
    assert!(metadata.versions[&2].destroyed);
    assert!(metadata.versions[&3].deletion_time.is_empty());
    drop(metadata);

    // Update the metadata: settings and custom metadata.
    let custom: BTreeMap<String, String> = [("owner".to_owned(), "team-a".to_owned())].into();
    let update = MetadataUpdate {
        max_versions: Some(5),
        cas_required: Some(true),
        delete_version_after: Some(Duration::from_secs(3_600)),
        custom_metadata: Some(custom.clone()),
    };
    vault::update_metadata(&pools, &request, &dialer, &db, &update, limits)
        .await
        .expect("update metadata");
    let metadata = vault::read_metadata(&pools, &request, &dialer, &db, limits)
        .await
        .expect("metadata");
    assert_eq!(metadata.max_versions, 5);
    assert!(metadata.cas_required);
    assert_eq!(metadata.delete_version_after, "1h0m0s");
    assert_eq!(metadata.custom_metadata, custom);
    assert!(!format!("{metadata:?}").contains("team-a"));
    drop(metadata);
    // The server holds the same.
    let (status, stored) =
        bao_call(bao.addr(), "GET", "/v1/secret/metadata/app/db", ROOT, None).await;
    assert_eq!(status, 200);
    assert_eq!(stored["data"]["custom_metadata"]["owner"], "team-a");

    // Now a write without check-and-set is refused by Vault: an answer, the
    // connection kept.
    let err = vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        data(&[("k", "v")]),
        None,
        limits,
    )
    .await
    .expect_err("cas required");
    assert!(
        matches!(err, VaultError::Rejected { status: 400, .. }),
        "{err:?}"
    );

    // Every call, 404s and 400s included, on one socket.
    assert_eq!(dialer.dials(), 1);
    assert_eq!(relay.accepted(), 1);
    eventually("the connection is parked", || {
        let c = pools.snapshot().connections;
        (c.active, c.idle) == (0, 1)
    })
    .await;
    drop((listed, root, request));
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_versions_keys_metadata_and_transit_input_are_refused_before_any_dial() {
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

    let too_many = vec![1; MAX_VERSIONS + 1];
    for versions in [&[][..], &[0][..], &too_many[..]] {
        for err in [
            vault::delete_versions(&pools, &request, &dialer, &db, versions, limits).await,
            vault::undelete(&pools, &request, &dialer, &db, versions, limits).await,
            vault::destroy(&pools, &request, &dialer, &db, versions, limits).await,
        ] {
            let err = err.expect_err("refused");
            assert!(
                matches!(
                    err,
                    VaultError::InvalidInput {
                        input: "versions",
                        ..
                    }
                ),
                "{err:?}"
            );
            assert_eq!(err.code(), "invalid_input");
        }
    }
    let crowded = (0..65).map(|i| (format!("k{i}"), "v".to_owned())).collect();
    for update in [
        MetadataUpdate {
            custom_metadata: Some(crowded),
            ..MetadataUpdate::default()
        },
        MetadataUpdate {
            custom_metadata: Some([("k".to_owned(), "v".repeat(513))].into()),
            ..MetadataUpdate::default()
        },
        MetadataUpdate {
            delete_version_after: Some(Duration::from_millis(1_500)),
            ..MetadataUpdate::default()
        },
    ] {
        let err = vault::update_metadata(&pools, &request, &dialer, &db, &update, limits)
            .await
            .expect_err("refused");
        assert!(matches!(err, VaultError::InvalidInput { .. }), "{err:?}");
    }
    for bad in ["", "a/b", "..", "key name"] {
        assert!(TransitKey::parse(bad).is_err(), "{bad:?}");
    }
    let key = TransitKey::parse("app-key").expect("key");
    let err = vault::encrypt(&pools, &request, &dialer, &key, &[7; 65], limits)
        .await
        .expect_err("plaintext over the limit");
    assert!(
        matches!(
            err,
            VaultError::TooLarge {
                what: "plaintext",
                len: 65,
                max: 64
            }
        ),
        "{err:?}"
    );
    let long = format!("vault:v1:{}", "A".repeat(1_000));
    for (ciphertext, code) in [
        ("not-vault", "invalid_input"),
        ("vault:v1:ab\ncd", "invalid_input"),
        (long.as_str(), "too_large"),
    ] {
        let err = vault::decrypt(&pools, &request, &dialer, &key, ciphertext, limits)
            .await
            .expect_err("refused");
        assert_eq!(err.code(), code, "{ciphertext:?}: {err:?}");
    }

    assert_eq!(dialer.dials(), 0, "refused before any dial");
    assert_eq!(relay.accepted(), 0, "no socket opened");
    assert_eq!(pools.snapshot().connections, Default::default());
    drop(request);
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tenants_bad_requests_leave_another_tenants_calls_untouched() {
    let bao = start_bao().await;
    let pools = start(Limits::DEFAULT).await;
    let target = format!("http://{}", bao.addr());
    let receipt = install(&pools, &target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let good = running_as(&pools, &receipt, "good", 1, OriginKind::Vault).await;
    let bad = running_as(&pools, &receipt, "bad", 2, OriginKind::Vault).await;
    let db = path("app/db");
    vault::write(
        &pools,
        &good,
        &dialer,
        &db,
        data(&[("k", "v")]),
        None,
        limits,
    )
    .await
    .expect("good tenant writes");

    // Tenant `bad` fails in every way its request content can: missing
    // paths and versions, a conflicting check-and-set, destroying versions
    // that do not exist, decrypting with a key that does not exist.
    let key = TransitKey::parse("missing-key").expect("key");
    for _ in 0..3 {
        let missing = path("app/missing");
        let errors = [
            vault::read(&pools, &bad, &dialer, &missing, limits)
                .await
                .map(drop),
            vault::read_version(&pools, &bad, &dialer, &db, 99, limits)
                .await
                .map(drop),
            vault::write(
                &pools,
                &bad,
                &dialer,
                &db,
                data(&[("k", "x")]),
                Some(9),
                limits,
            )
            .await
            .map(drop),
            vault::list(&pools, &bad, &dialer, Some(&missing), limits)
                .await
                .map(drop),
            vault::decrypt(&pools, &bad, &dialer, &key, "vault:v1:AAAA", limits)
                .await
                .map(drop),
        ];
        for result in errors {
            let err = result.expect_err("refused by vault");
            assert!(
                matches!(
                    err,
                    VaultError::NotFound | VaultError::CasConflict | VaultError::Rejected { .. }
                ),
                "{err:?}"
            );
        }
    }

    // Tenant `good` goes on as before: same connection, no backoff, its
    // data untouched.
    let secret = vault::read(&pools, &good, &dialer, &db, limits)
        .await
        .expect("good tenant reads");
    assert_eq!(secret.metadata.version, 1);
    assert_eq!(secret.to_map().expect("object")["k"], Value::from("v"));
    assert_eq!(dialer.dials(), 1, "no failure made anyone redial");
    drop((secret, good, bad));
    assert_clean_shutdown(&pools).await;
}
