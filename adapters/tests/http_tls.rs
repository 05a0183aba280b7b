//! https against a real loopback hyper origin behind rustls: a test CA
//! from the provider setting `ca_file` is trusted and one TLS connection
//! carries sequential requests; default roots, a foreign CA or an unusable
//! `ca_file` fail the dial as a handshake error and back the client off; the
//! bound credential crosses TLS and never shows in errors or `Debug`; an
//! HTTP/2 client fails its dial when the origin does not select `h2`.

mod support;

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::HeaderMap;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use provider_pools_actors::{ConnectError, ConnectionCounts, DialErrorKind, Limits};
use provider_pools_adapters::http_origin::{
    call, BodyLimits, HttpDialer, HttpError, AUTH_HEADER_SETTING, CA_FILE_SETTING, HTTP2_SETTING,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use support::test_ca::{pem_file, TestCa};
use support::{bounded, eventually, get, install, running, start};
use tempfile::NamedTempFile;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// A hyper HTTP/1.1 origin behind TLS on 127.0.0.1, its certificate (for
/// `localhost` and `127.0.0.1`) signed by `ca`. Counts accepted TCP
/// connections and records request headers; answers "hello" to anything.
struct TlsOrigin {
    /// `https://127.0.0.1:PORT`.
    target: String,
    accepted: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<HeaderMap>>>,
}

impl TlsOrigin {
    async fn start(ca: &TestCa) -> Self {
        let (cert, key) = ca.issue();
        let chain = vec![CertificateDer::from(cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server config");
        let acceptor = TlsAcceptor::from(Arc::new(config));

        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let target = format!("https://{}", listener.local_addr().expect("addr"));
        let accepted = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (count, log) = (Arc::clone(&accepted), Arc::clone(&seen));
        support::task(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let (acceptor, log) = (acceptor.clone(), Arc::clone(&log));
                support::task(async move {
                    // A client that does not trust us ends here.
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let log = Arc::clone(&log);
                        async move {
                            log.lock()
                                .expect("log")
                                .push(hyper::Request::headers(&req).clone());
                            Ok::<_, Infallible>(hyper::Response::new(Full::new(
                                Bytes::from_static(b"hello"),
                            )))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            target,
            accepted,
            seen,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    fn seen(&self) -> Vec<HeaderMap> {
        self.seen.lock().expect("log").clone()
    }
}

fn path_of(file: &NamedTempFile) -> &str {
    file.path().to_str().expect("utf-8 temp path")
}

#[tokio::test]
async fn a_ca_file_is_trusted_and_one_tls_connection_serves_sequential_requests() {
    let ca = TestCa::new("provider-pools test ca");
    let ca_file = ca.pem_file();
    let origin = TlsOrigin::start(&ca).await;
    let pools = start(Limits::DEFAULT).await;
    let settings = [(CA_FILE_SETTING, path_of(&ca_file))];
    let receipt = install(&pools, &origin.target, &settings, b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    for session in 1..=2 {
        let request = running(&pools, &receipt, session).await;
        let response = bounded(
            "a buffered call over TLS",
            call(&pools, &request, &dialer, get("/ok"), BodyLimits::default()),
        )
        .await
        .expect("200 over TLS");
        assert_eq!(response.status, 200);
        assert_eq!(response.body.bytes().as_ref(), b"hello");
    }
    assert_eq!(origin.accepted(), 1, "one TCP connection for both requests");
    assert_eq!(dialer.dials(), 1);
    assert_eq!(origin.seen().len(), 2);
    let host = origin.target.trim_start_matches("https://");
    assert_eq!(
        origin.seen()[0]["host"],
        host,
        "Host names the approved origin"
    );
    eventually("one idle TLS connection and nothing running", || {
        let snapshot = pools.snapshot();
        snapshot.connections.idle == 1 && snapshot.running_requests == 0
    })
    .await;
}

#[tokio::test]
async fn a_dns_host_is_verified_against_the_certificate_names() {
    let ca = TestCa::new("provider-pools test ca");
    let ca_file = ca.pem_file();
    let origin = TlsOrigin::start(&ca).await;
    let target = origin.target.replace("127.0.0.1", "localhost");
    let pools = start(Limits::DEFAULT).await;
    let settings = [(CA_FILE_SETTING, path_of(&ca_file))];
    let receipt = install(&pools, &target, &settings, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let response = bounded(
        "a call to https://localhost",
        call(&pools, &request, &dialer, get("/ok"), BodyLimits::default()),
    )
    .await
    .expect("localhost is one of the certificate's names");
    assert_eq!(response.status, 200);
    let host = target.trim_start_matches("https://");
    assert_eq!(origin.seen()[0]["host"], host);
}

/// Calls twice: the first dial fails its TLS handshake, the second call is
/// answered by the backoff without reaching the origin.
async fn assert_handshake_failure_backs_off(settings: &[(&str, &str)], accepts: usize) {
    let ca = TestCa::new("the origin's ca");
    let origin = TlsOrigin::start(&ca).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, settings, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;

    let first = bounded(
        "a dial to an untrusted origin",
        call(&pools, &request, &dialer, get("/ok"), BodyLimits::default()),
    )
    .await
    .expect_err("the handshake fails");
    assert!(
        matches!(&first, HttpError::Connect(ConnectError::Dial(e)) if e.kind == DialErrorKind::Handshake),
        "{first:?}"
    );
    assert_eq!(first.code(), "unavailable");
    assert_eq!(origin.accepted(), accepts);

    let second = call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect_err("in backoff");
    assert!(
        matches!(
            &second,
            HttpError::Connect(ConnectError::Unavailable {
                kind: DialErrorKind::Handshake,
                ..
            })
        ),
        "{second:?}"
    );
    assert_eq!(second.code(), "unavailable");
    assert_eq!(dialer.dials(), 1, "no dial during backoff");
    assert_eq!(
        origin.accepted(),
        accepts,
        "no new connection during backoff"
    );
    assert!(
        origin.seen().is_empty(),
        "no request crossed an untrusted link"
    );
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
}

#[tokio::test]
async fn default_roots_do_not_trust_a_test_ca() {
    assert_handshake_failure_backs_off(&[], 1).await;
}

#[tokio::test]
async fn a_ca_that_did_not_sign_the_server_certificate_fails_the_handshake() {
    let foreign = TestCa::new("a foreign ca").pem_file();
    assert_handshake_failure_backs_off(&[(CA_FILE_SETTING, path_of(&foreign))], 1).await;
}

#[tokio::test]
async fn an_unusable_ca_file_fails_before_connecting_naming_the_setting_only() {
    let contents = b"not a certificate: private-looking-bytes-7f3a";
    let garbage = pem_file(contents);
    let empty = pem_file(b"");
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().expect("utf-8 temp path");
    for path in [
        path_of(&garbage),
        path_of(&empty),
        missing,
        "relative/ca.pem",
    ] {
        let ca = TestCa::new("the origin's ca");
        let origin = TlsOrigin::start(&ca).await;
        let pools = start(Limits::DEFAULT).await;
        let settings = [(CA_FILE_SETTING, path)];
        let receipt = install(&pools, &origin.target, &settings, b"k").await;
        let dialer = HttpDialer::new(pools.clone());
        let request = running(&pools, &receipt, 1).await;
        let err = call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
            .await
            .expect_err("no usable trust anchors");
        let HttpError::Connect(ConnectError::Dial(dial)) = &err else {
            panic!("{path}: {err:?}");
        };
        assert_eq!(dial.kind, DialErrorKind::Handshake, "{path}: {err:?}");
        let shown = format!("{err} {err:?}");
        assert!(shown.contains("`ca_file`"), "{path}: {shown}");
        assert!(!shown.contains("private-looking"), "{path}: {shown}");
        assert_eq!(origin.accepted(), 0, "{path}: refused before connecting");
    }
}

#[tokio::test]
async fn the_bound_credential_crosses_tls_and_never_shows() {
    let secret = "Bearer tls-secret-0b5e";
    let ca = TestCa::new("provider-pools test ca");
    let ca_file = ca.pem_file();
    let origin = TlsOrigin::start(&ca).await;
    let pools = start(Limits::DEFAULT).await;
    let settings = [
        (CA_FILE_SETTING, path_of(&ca_file)),
        (AUTH_HEADER_SETTING, "authorization"),
    ];
    let receipt = install(&pools, &origin.target, &settings, secret.as_bytes()).await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let response = call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect("200 over TLS");
    assert_eq!(origin.seen()[0]["authorization"], secret);
    let shown = format!("{response:?} {request:?} {dialer:?} {receipt:?} {pools:?}");
    assert!(!shown.contains("tls-secret"), "{shown}");

    // The same binding towards an origin whose certificate is not trusted.
    let untrusted = TlsOrigin::start(&TestCa::new("a foreign ca")).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &untrusted.target, &settings, secret.as_bytes()).await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let err = call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect_err("untrusted");
    assert!(
        matches!(&err, HttpError::Connect(ConnectError::Dial(e)) if e.kind == DialErrorKind::Handshake),
        "{err:?}"
    );
    let shown = format!("{err} {err:?} {request:?} {dialer:?}");
    assert!(!shown.contains("tls-secret"), "{shown}");
    assert!(untrusted.seen().is_empty());
}

#[tokio::test]
async fn an_http2_dial_to_an_origin_that_does_not_select_h2_fails_as_a_handshake() {
    let ca = TestCa::new("provider-pools test ca");
    let ca_file = ca.pem_file();
    // The origin speaks HTTP/1.1 and offers no ALPN protocol.
    let origin = TlsOrigin::start(&ca).await;
    let pools = start(Limits::DEFAULT).await;
    let settings = [(CA_FILE_SETTING, path_of(&ca_file)), (HTTP2_SETTING, "on")];
    let receipt = install(&pools, &origin.target, &settings, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let refused = bounded(
        "an h2 dial to an http/1.1 origin",
        call(&pools, &request, &dialer, get("/ok"), BodyLimits::default()),
    )
    .await
    .expect_err("no h2 by ALPN");
    assert!(
        matches!(&refused, HttpError::Connect(ConnectError::Dial(e))
            if e.kind == DialErrorKind::Handshake && e.to_string().contains("ALPN")),
        "{refused:?}"
    );
    assert_eq!(
        refused.was_sent(),
        provider_pools_adapters::http_origin::Sent::No
    );
    assert!(origin.seen().is_empty(), "no request reached the origin");
}

/// rustls' process-wide default crypto provider is the host's to choose:
/// an https dial builds its configuration on the ring provider explicitly
/// and installs nothing (no test in this binary installs one either).
#[tokio::test]
async fn an_https_dial_installs_no_process_default_crypto_provider() {
    let ca = TestCa::new("provider-pools test ca");
    let ca_file = ca.pem_file();
    let origin = TlsOrigin::start(&ca).await;
    let pools = start(Limits::DEFAULT).await;
    let settings = [(CA_FILE_SETTING, path_of(&ca_file))];
    let receipt = install(&pools, &origin.target, &settings, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let response = bounded(
        "a buffered call over TLS",
        call(&pools, &request, &dialer, get("/ok"), BodyLimits::default()),
    )
    .await
    .expect("200 over TLS");
    assert_eq!(response.status, 200);
    assert!(
        rustls::crypto::CryptoProvider::get_default().is_none(),
        "an https dial installed a process-wide crypto provider"
    );
}
