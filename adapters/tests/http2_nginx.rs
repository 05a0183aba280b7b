//! HTTP/2 over TLS (ALPN `h2`) against Debian's nginx (`listen … ssl
//! http2`, installed by `scripts/peers`). Its access log (`$connection
//! $connection_requests $server_protocol`) witnesses that sequential
//! calls are HTTP/2.0 streams of one connection, and that once nginx has
//! served `keepalive_requests` on it and said GOAWAY, the next call goes
//! to a new connection; concurrent calls of one tenant share one.

mod support;

use std::collections::BTreeMap;

use provider_pools_actors::{InstallReceipt, Limits, OriginKind, ProviderPools};
use provider_pools_adapters::http_origin::{
    call, BodyLimits, HttpDialer, CA_FILE_SETTING, HTTP2_SETTING,
};
use provider_pools_test_peers::{AccessEntry, Nginx, NginxPeer};
use support::test_ca::TestCa;
use support::{bounded, eventually, get, install, nginx_logged, running, running_as, start, task};

const BODY: usize = 1000;
const SLOW_BODY: usize = 32 * 1024;

/// Each connection's request numbers, in the order they were logged.
fn by_connection(log: &[AccessEntry]) -> BTreeMap<u64, Vec<u64>> {
    let mut connections: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for entry in log {
        connections
            .entry(entry.connection)
            .or_default()
            .push(entry.request);
    }
    connections
}

/// A registry with nginx's HTTP/2 listener installed (trusting `ca`).
struct Client {
    pools: ProviderPools,
    receipt: InstallReceipt,
    dialer: HttpDialer,
    /// Kept while the client dials: `ca_file` names it.
    _ca_file: tempfile::NamedTempFile,
}

async fn client(ca: &TestCa, nginx: &NginxPeer) -> Client {
    let ca_file = ca.pem_file();
    let ca_path = ca_file.path().to_str().expect("utf-8 temp path");
    let settings = [(HTTP2_SETTING, "on"), (CA_FILE_SETTING, ca_path)];
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &nginx.https_origin(), &settings, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    Client {
        pools,
        receipt,
        dialer,
        _ca_file: ca_file,
    }
}

#[tokio::test]
async fn sequential_calls_are_streams_of_one_connection_until_nginx_says_goaway() {
    let ca = TestCa::new("provider-pools test ca");
    let (chain, key) = ca.issue_pem();
    let nginx = Nginx::new()
        .body(BODY)
        .keepalive_requests(3)
        .http2_tls(chain, key)
        .start();
    let Client {
        pools,
        receipt,
        dialer,
        _ca_file,
    } = client(&ca, &nginx).await;
    let path = NginxPeer::body_path(BODY);

    for session in 1..=7 {
        let request = running(&pools, &receipt, session).await;
        let response = bounded(
            "an h2 call to nginx",
            call(&pools, &request, &dialer, get(&path), BodyLimits::default()),
        )
        .await
        .expect("200");
        assert_eq!(
            (response.status.as_u16(), response.body.bytes().len()),
            (200, BODY)
        );
    }
    let log = nginx_logged(&nginx, 7).await;
    assert!(
        log.iter().all(|entry| entry.protocol == "HTTP/2.0"),
        "every request over HTTP/2: {log:?}"
    );
    let connections: Vec<Vec<u64>> = by_connection(&log).into_values().collect();
    assert_eq!(
        connections,
        [vec![1, 2, 3], vec![1, 2, 3], vec![1]],
        "three streams per connection, then GOAWAY and a new one: {log:?}"
    );
    assert_eq!(dialer.dials(), 3, "nothing sent twice, no extra dial");
}

#[tokio::test]
async fn one_tenants_concurrent_calls_share_one_connection() {
    let ca = TestCa::new("provider-pools test ca");
    let (chain, key) = ca.issue_pem();
    // Each response takes about a second: the calls overlap.
    let nginx = Nginx::new()
        .body(SLOW_BODY)
        .limit_rate(32 * 1024)
        .http2_tls(chain, key)
        .start();
    let Client {
        pools,
        receipt,
        dialer,
        _ca_file,
    } = client(&ca, &nginx).await;
    // A first call: nginx's SETTINGS (128 streams) are known after it.
    let first = running(&pools, &receipt, 1).await;
    let path = NginxPeer::body_path(SLOW_BODY);
    bounded(
        "the first call",
        call(&pools, &first, &dialer, get(&path), BodyLimits::default()),
    )
    .await
    .expect("200");
    drop(first);
    let calls: Vec<_> = (2..=9)
        .map(|session| {
            let (pools, receipt, dialer, path) =
                (pools.clone(), receipt.clone(), dialer.clone(), path.clone());
            task(async move {
                let request = running_as(&pools, &receipt, "t", session, OriginKind::Http).await;
                call(&pools, &request, &dialer, get(&path), BodyLimits::default()).await
            })
        })
        .collect();
    // Nginx logs a request when done: with one logged (the first), all
    // eight are in flight, on one connection.
    eventually("eight calls in flight on one connection", || {
        let snapshot = pools.snapshot();
        let counts = snapshot.connections;
        snapshot.running_requests == 8
            && (counts.active, counts.idle, counts.waiting) == (1, 0, 0)
            && nginx.access_log().len() == 1
    })
    .await;
    for call in calls {
        let response = bounded("a concurrent h2 call", call)
            .await
            .expect("the call's task")
            .expect("200");
        assert_eq!(response.status.as_u16(), 200);
    }
    let log = nginx_logged(&nginx, 9).await;
    assert_eq!(
        by_connection(&log).len(),
        1,
        "nine calls, one connection: {log:?}"
    );
    assert_eq!(dialer.dials(), 1);
}
