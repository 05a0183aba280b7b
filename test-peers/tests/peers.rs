//! Each peer starts on a free loopback port, answers, and is gone once its
//! handle drops.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use std::sync::Arc;

use provider_pools_test_peers::{binary, Bao, Etcd, Moto, Nats, Peer, SharedPeer};

fn assert_stops(peer: Peer) {
    let addr = peer.addr();
    let dir = peer.dir().to_owned();
    drop(peer);
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(),
        "{addr} still accepts after the peer was dropped"
    );
    assert!(!dir.exists(), "{} outlived its peer", dir.display());
}

#[test]
fn moto_answers_then_stops() {
    let peer = Moto::start();
    assert!(peer.port() > 0);
    assert_stops(peer);
}

#[test]
fn bao_dev_server_is_unsealed_then_stops() {
    let peer = Bao::start("test-root-token");
    assert_stops(peer);
}

#[test]
fn nats_server_with_jetstream_answers_then_stops() {
    let peer = Nats::start();
    let log = peer.log_tail();
    assert!(
        log.contains("Starting JetStream"),
        "no JetStream in:\n{log}"
    );
    assert_stops(peer);
}

#[test]
fn etcd_is_healthy_serves_the_v3_gateway_then_stops() {
    let peer = Etcd::start();
    // A range over the v3 JSON gateway: the key "a" in base64, absent.
    let body = r#"{"key":"YQ=="}"#;
    let mut stream =
        TcpStream::connect_timeout(&peer.addr(), Duration::from_secs(1)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    write!(
        stream,
        "POST /v3/kv/range HTTP/1.0\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        peer.addr(),
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer");
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    assert!(answer.contains(r#""revision":"1""#), "{answer}");
    assert_stops(peer);
}

#[test]
fn a_shared_peer_is_one_process_while_held_and_stops_after_the_last_holder() {
    static NATS: SharedPeer = SharedPeer::new(Nats::start);
    let first = NATS.get();
    let second = NATS.get();
    assert!(Arc::ptr_eq(&first, &second), "two processes while held");
    let addr = first.addr();
    drop(first);
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok(),
        "stopped while still held"
    );
    let Ok(last) = Arc::try_unwrap(second) else {
        panic!("another holder remains")
    };
    assert_stops(last);
    let again = NATS.get();
    assert!(
        TcpStream::connect_timeout(&again.addr(), Duration::from_secs(1)).is_ok(),
        "the next holder got a stopped peer"
    );
}

#[test]
#[should_panic(expected = "run ./scripts/peers")]
fn a_missing_peer_fails_with_how_to_install_it() {
    binary("provider-pools-no-such-peer");
}

#[test]
fn nginx_serves_bodies_and_logs_each_request_with_its_connection() {
    use provider_pools_test_peers::{Nginx, NginxPeer};
    let nginx = Nginx::new().body(1000).start();
    let path = NginxPeer::body_path(1000);
    let mut stream = TcpStream::connect(nginx.addr()).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let host = nginx.addr();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\nGET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read");
    // nginx logs a closed connection's last request after its lingering
    // close, which waits for this side to close.
    drop(stream);
    assert_eq!(
        String::from_utf8_lossy(&response).matches("200 OK").count(),
        2
    );
    let log = nginx.wait_for_log(2, Duration::from_secs(5));
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0].connection, log[1].connection, "one connection");
    assert_eq!((log[0].request, log[1].request), (1, 2));
    assert_eq!((log[1].status, log[1].body_bytes), (200, 1000));
    assert_stops(nginx.into_peer());
}

#[test]
fn lighttpd_serves_and_logs_each_request_with_its_connection_and_query() {
    use provider_pools_test_peers::Lighttpd;
    let lighttpd = Lighttpd::new().start();
    let mut stream = TcpStream::connect(lighttpd.addr()).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let host = lighttpd.addr();
    write!(
        stream,
        "GET /ok?c=1 HTTP/1.1\r\nHost: {host}\r\n\r\nGET /ok?c=2 HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read");
    assert_eq!(
        String::from_utf8_lossy(&response).matches("200 OK").count(),
        2
    );
    let log = lighttpd.wait_for_log(2, Duration::from_secs(5));
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0].client_port, log[1].client_port, "one connection");
    assert_eq!((log[0].request, log[1].request), (0, 1));
    assert_eq!(
        (log[0].query.as_str(), log[1].query.as_str()),
        ("c=1", "c=2")
    );
    assert_eq!((log[1].method.as_str(), log[1].status), ("GET", 200));
    assert_stops(lighttpd.into_peer());
}
