//! `tls://` against a real nats-server that requires TLS: a test CA from
//! the provider setting `ca_file` is trusted and one client is reused; the
//! default roots refuse the server's certificate as a handshake failure,
//! and the client backs off.

mod support;

use std::path::Path;

use bytes::Bytes;
use provider_pools_actors::{ConnectError, DialErrorKind, Limits};
use provider_pools_adapters::nats::{publish, NatsDialer, NatsError, NatsLimits, Subject};
use provider_pools_test_peers::{Nats, Peer};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use support::nats::{admin_with, assert_clean, install_over, prepare, running, SETTINGS};
use support::{bounded, start};
use tempfile::TempDir;

/// A CA, and a nats-server whose certificate (for `localhost` and
/// `127.0.0.1`) it signed; `ca.pem` is in the returned directory.
fn tls_server() -> (TempDir, Peer) {
    let dir = tempfile::tempdir().expect("cert dir");
    let ca_key = KeyPair::generate().expect("ca key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params
        .distinguished_name
        .push(DnType::CommonName, "nats test ca");
    let ca = params.self_signed(&ca_key).expect("self-signed ca");
    let key = KeyPair::generate().expect("server key");
    let cert = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("server params")
        .signed_by(&key, &ca, &ca_key)
        .expect("server certificate");
    let write = |name: &str, contents: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, contents).expect("pem written");
        path.display().to_string()
    };
    write("ca.pem", ca.pem());
    let cert_file = write("server.pem", cert.pem());
    let key_file = write("server-key.pem", key.serialize_pem());
    let config = format!("tls {{\n  cert_file: \"{cert_file}\"\n  key_file: \"{key_file}\"\n}}\n");
    let config_file = dir.path().join("tls.conf");
    std::fs::write(&config_file, config).expect("config written");
    let peer = Nats::start_with_config(&config_file);
    (dir, peer)
}

fn ca_file(dir: &Path) -> String {
    dir.join("ca.pem").display().to_string()
}

#[tokio::test]
async fn a_tls_server_is_trusted_through_the_ca_file() {
    let (dir, peer) = tls_server();
    let url = format!("tls://127.0.0.1:{}", peer.port());
    let js = admin_with(
        &url,
        async_nats::ConnectOptions::new().add_root_certificates(dir.path().join("ca.pem")),
    )
    .await;
    prepare(&js).await;
    let pools = start(Limits::DEFAULT).await;
    let ca = ca_file(dir.path());
    let settings: Vec<_> = SETTINGS
        .iter()
        .copied()
        .chain([("ca_file", ca.as_str())])
        .collect();
    let receipt = install_over(&pools, &url, &settings, b"", 0).await;
    let dialer = NatsDialer::new(pools.clone());
    let subject = Subject::parse("secure").expect("subject");

    for session in 1..=2 {
        let running = running(&pools, &receipt, session).await;
        let ack = publish(
            &pools,
            &running,
            &dialer,
            &subject,
            Bytes::from("over tls"),
            NatsLimits::default(),
        )
        .await
        .expect("published over tls");
        assert_eq!(ack.sequence, session);
    }
    assert_eq!(dialer.dials(), 1, "one TLS client served both");

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}

#[tokio::test]
async fn a_tls_server_outside_the_trusted_roots_fails_as_a_handshake() {
    let (_dir, peer) = tls_server();
    let url = format!("tls://127.0.0.1:{}", peer.port());
    let pools = start(Limits::DEFAULT).await;
    let receipt = install_over(&pools, &url, SETTINGS, b"", 0).await;
    let dialer = NatsDialer::new(pools.clone());
    let subject = Subject::parse("secure").expect("subject");
    let running = running(&pools, &receipt, 1).await;

    let refused = publish(
        &pools,
        &running,
        &dialer,
        &subject,
        Bytes::from("x"),
        NatsLimits::default(),
    )
    .await;
    assert!(
        matches!(
            &refused,
            Err(NatsError::Connect(ConnectError::Dial(dial))) if dial.kind == DialErrorKind::Handshake
        ),
        "{refused:?}"
    );
    let again = publish(
        &pools,
        &running,
        &dialer,
        &subject,
        Bytes::from("x"),
        NatsLimits::default(),
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
    drop(running);

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}
