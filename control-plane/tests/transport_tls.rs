//! https: the pooled (and bearer) transport trusts a private CA from
//! `ca_file` and reuses one TLS connection; without it the handshake fails
//! before anything is sent; the std transport refuses https outright.

mod support;

use std::time::Duration;

use provider_pools_control_plane::transport::{
    BearerHttpTransport, BearerToken, HttpMethod, HttpTransport, PooledHttpTransport,
    PooledTransportConfig, StdHttpTransport, TransportError,
};
use support::origin::Origin;
use support::tls::Ca;
use support::{bounded, cases, request};

#[tokio::test]
async fn a_ca_file_is_trusted_and_one_tls_connection_serves_two_requests() {
    let ca = Ca::new("control-plane test ca");
    let ca_file = ca.pem_file();
    let origin = Origin::start_tls(ca.acceptor()).await;
    let config = PooledTransportConfig::default().with_ca_file(ca_file.path());
    let transport = PooledHttpTransport::new(config).expect("a client");
    for path in ["/v1/leases/acquire", "/v1/leases/renew"] {
        let url = origin.url(path);
        assert!(url.starts_with("https://127.0.0.1:"), "{url}");
        let request = request(HttpMethod::Post, &url, cases::BODY, Duration::from_secs(5));
        let response = bounded("a request over TLS", transport.send_shared(&request))
            .await
            .expect("200 over TLS");
        assert_eq!(response.status, 200);
    }
    assert_eq!(origin.accepted(), 1, "one TLS connection for both");
    let seen = origin.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].body, cases::BODY);
}

#[tokio::test]
async fn a_dns_name_is_verified_against_the_certificate() {
    let ca = Ca::new("control-plane test ca");
    let ca_file = ca.pem_file();
    let origin = Origin::start_tls(ca.acceptor()).await;
    let config = PooledTransportConfig::default().with_ca_file(ca_file.path());
    let transport = PooledHttpTransport::new(config).expect("a client");
    let url = format!("https://localhost:{}/v1/x", origin.address().port());
    let request = request(HttpMethod::Get, &url, b"", Duration::from_secs(5));
    let response = bounded("https://localhost", transport.send_shared(&request))
        .await
        .expect("localhost is a certificate name");
    assert_eq!(response.status, 200);
}

#[tokio::test]
async fn default_roots_or_a_foreign_ca_fail_the_handshake_before_sending() {
    let ca = Ca::new("control-plane test ca");
    let foreign = Ca::new("someone else").pem_file();
    let origin = Origin::start_tls(ca.acceptor()).await;
    for config in [
        PooledTransportConfig::default(),
        PooledTransportConfig::default().with_ca_file(foreign.path()),
    ] {
        let transport = PooledHttpTransport::new(config).expect("a client");
        let request = request(
            HttpMethod::Post,
            &origin.url("/v1/x"),
            cases::BODY,
            Duration::from_secs(5),
        );
        let error = bounded("an untrusted handshake", transport.send_shared(&request))
            .await
            .expect_err("untrusted");
        assert!(matches!(error, TransportError::Connect(_)), "{error:?}");
    }
    assert!(
        origin.requests().is_empty(),
        "no request crossed an untrusted handshake"
    );
}

#[tokio::test]
async fn the_bearer_token_crosses_tls() {
    let ca = Ca::new("control-plane test ca");
    let ca_file = ca.pem_file();
    let origin = Origin::start_tls(ca.acceptor()).await;
    let pooled =
        PooledHttpTransport::new(PooledTransportConfig::default().with_ca_file(ca_file.path()))
            .expect("a client");
    let transport = BearerHttpTransport::new(pooled, BearerToken::new("tls-token").expect("token"));
    let request = request(
        HttpMethod::Get,
        &origin.url("/v1/x"),
        b"",
        Duration::from_secs(5),
    );
    bounded("a bearer request over TLS", transport.send_shared(&request))
        .await
        .expect("200");
    assert_eq!(
        origin.requests()[0].header("authorization"),
        Some("Bearer tls-token")
    );
}

#[tokio::test]
async fn the_std_transport_refuses_an_https_origin_without_dialling() {
    let ca = Ca::new("control-plane test ca");
    let origin = Origin::start_tls(ca.acceptor()).await;
    let request = request(
        HttpMethod::Get,
        &origin.url("/v1/x"),
        b"",
        Duration::from_secs(5),
    );
    let error = bounded(
        "std and https",
        StdHttpTransport::new().send_shared(&request),
    )
    .await
    .expect_err("plain http only");
    assert!(error.before_send(), "{error:?}");
    assert_eq!(origin.accepted(), 0);
}
