//! Each peer starts on a free loopback port, answers, and is gone once its
//! handle drops.

use std::net::TcpStream;
use std::time::Duration;

use provider_pools_test_peers::{binary, Bao, Moto, Nats, Peer};

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
#[should_panic(expected = "run ./scripts/peers")]
fn a_missing_peer_fails_with_how_to_install_it() {
    binary("provider-pools-no-such-peer");
}
