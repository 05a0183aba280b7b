//! The Vault adapter over https against a real OpenBao dev server in TLS
//! mode (its own generated CA): the configured `ca_file` is trusted and the
//! certificate verified; without it, or with an unusable one, the dial
//! fails as a handshake error and the client backs off.

mod support;

use std::time::Duration;

use provider_pools_actors::{ConnectError, DialErrorKind, Limits};
use provider_pools_adapters::http_origin::HttpDialer;
use provider_pools_adapters::vault::{self, SecretPath, VaultError, VaultLimits};
use provider_pools_test_peers::{Peer, PeerCommand};
use support::vault::{data, install, running, ROOT};
use support::{deadline, eventually, start};

/// A dev server with `-dev-tls`: its CA is `vault-ca.pem` in its directory.
async fn start_tls_bao() -> Peer {
    let bao = PeerCommand::new("bao")
        .args([
            "server",
            "-dev",
            "-dev-tls",
            "-dev-tls-cert-dir={dir}",
            "-dev-listen-address=127.0.0.1:{port}",
            "-dev-no-store-token",
        ])
        .args([format!("-dev-root-token-id={ROOT}")])
        .env("HOME", "{dir}")
        .start(|addr| std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok());
    // Printed once `secret/` is mounted and the server serves.
    eventually("the tls dev server to start", || {
        bao.log_tail().contains("OpenBao server started!")
    })
    .await;
    bao
}

fn path(text: &str) -> SecretPath {
    SecretPath::parse(text).expect("valid path")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_the_configured_ca_writes_and_reads() {
    let bao = start_tls_bao().await;
    let pools = start(Limits::DEFAULT).await;
    let ca = bao.dir().join("vault-ca.pem").display().to_string();
    let target = format!("https://127.0.0.1:{}", bao.port());
    let receipt = install(&pools, &target, &[("ca_file", &ca)], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &receipt, 1).await;
    let db = path("app/db");
    vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        data(&[("tls", "yes")]),
        Some(0),
        limits,
    )
    .await
    .expect("write over https");
    let secret = vault::read(&pools, &request, &dialer, &db, limits)
        .await
        .expect("read over https");
    assert_eq!(secret.to_map().expect("object"), data(&[("tls", "yes")]));
    assert_eq!(dialer.dials(), 1, "one TLS connection for both calls");
    drop((secret, request));
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_without_the_ca_fails_the_handshake_and_backs_off() {
    let bao = start_tls_bao().await;
    let pools = start(Limits::DEFAULT).await;
    let target = format!("https://127.0.0.1:{}", bao.port());
    let receipt = install(&pools, &target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &receipt, 1).await;
    let err = vault::read(&pools, &request, &dialer, &path("app/db"), limits)
        .await
        .expect_err("the dev CA is not a web PKI root");
    assert!(
        matches!(&err, VaultError::Connect(ConnectError::Dial(e)) if e.kind == DialErrorKind::Handshake),
        "{err:?}"
    );
    let err = vault::read(&pools, &request, &dialer, &path("app/db"), limits)
        .await
        .expect_err("in backoff");
    assert!(
        matches!(
            &err,
            VaultError::Connect(ConnectError::Unavailable {
                kind: DialErrorKind::Handshake,
                ..
            })
        ),
        "{err:?}"
    );
    assert!(!format!("{err:?}").contains(ROOT), "{err:?}");
    drop(request);
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_ca_file_fails_the_dial_naming_the_setting() {
    let bao = start_tls_bao().await;
    let pools = start(Limits::DEFAULT).await;
    let target = format!("https://127.0.0.1:{}", bao.port());
    let missing = bao.dir().join("missing.pem").display().to_string();
    let receipt = install(
        &pools,
        &target,
        &[("ca_file", &missing)],
        ROOT.as_bytes(),
        0,
    )
    .await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let err = vault::read(
        &pools,
        &request,
        &dialer,
        &path("app/db"),
        VaultLimits::default(),
    )
    .await
    .expect_err("no such file");
    match &err {
        VaultError::Connect(ConnectError::Dial(e)) => {
            assert_eq!(e.kind, DialErrorKind::Handshake);
            assert!(e.message.contains("`ca_file`"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    drop(request);
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}
