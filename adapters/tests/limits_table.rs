//! The limits table holds for every adapter, against Debian's nginx with
//! real sockets: as many streaming calls as `running_requests` allows are
//! held open at once, at the default limits (HTTP/1.1 and HTTP/2) and near
//! the ceilings (1,024 calls); and idle connections parked up to
//! `idle_connections` take nothing from another tenant's blob, secret and
//! HTTP calls. A connection's driver holds its connection's charges, not
//! a provider worker slot (decision record 0063), so the connection limits
//! are the ones that bind.

mod secret_support;
mod support;

use bytes::Bytes;
use provider_pools_actors::{
    InstallReceipt, Limits, OriginKind, ProviderPools, RunningRequest, Snapshot,
};
use provider_pools_adapters::blob::{self, BlobKey, BlobLimits};
use provider_pools_adapters::http_origin::{
    call, call_streaming, BodyLimits, HttpDialer, ResponseStream, CA_FILE_SETTING, HTTP2_SETTING,
};
use provider_pools_adapters::secret;
use provider_pools_test_peers::{Nginx, NginxPeer};
use support::test_ca::TestCa;
use support::{bounded, eventually, get, plan, running_plan, start, task};

const BODY: usize = 1000;

/// Installs `count` HTTP providers `p0`, `p1`… on `origin`, one client each.
async fn providers(
    pools: &ProviderPools,
    origin: &str,
    settings: &[(&str, &str)],
    count: usize,
) -> Vec<InstallReceipt> {
    let mut receipts = Vec::with_capacity(count);
    for i in 0..count {
        let name = format!("p{i}");
        let config = support::provider_config(&name, OriginKind::Http, origin, settings);
        let authority = format!("https://{name}.example");
        receipts.push(support::install_provider(pools, &name, &authority, config, b"k", 0).await);
    }
    receipts
}

/// A running request of `tenant` on `receipt`'s slot 0.
async fn running_on(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &str,
    session: u64,
) -> RunningRequest {
    running_plan(
        pools,
        receipt,
        plan(tenant, session),
        OriginKind::Http,
        Bytes::new(),
    )
    .await
}

/// `calls` streaming GETs opened at once, each holding its response until
/// every one is open: call `i` is tenant `t{i / per_tenant}`'s, on provider
/// `i % providers`. Fails naming how many failed and the first error.
async fn hold_open(
    pools: &ProviderPools,
    receipts: &[InstallReceipt],
    dialer: &HttpDialer,
    calls: usize,
    per_tenant: usize,
) -> Vec<(ResponseStream, RunningRequest)> {
    let path = NginxPeer::body_path(BODY);
    let tasks: Vec<_> = (0..calls)
        .map(|i| {
            let (pools, dialer, path) = (pools.clone(), dialer.clone(), path.clone());
            let receipt = receipts[i % receipts.len()].clone();
            task(async move {
                let tenant = format!("t{}", i / per_tenant);
                let running = running_on(&pools, &receipt, &tenant, i as u64 + 1).await;
                let limits = BodyLimits::default();
                call_streaming(&pools, &running, &dialer, get(&path), limits)
                    .await
                    .map(|stream| (stream, running))
            })
        })
        .collect();
    let mut open = Vec::with_capacity(calls);
    let mut failed = Vec::new();
    for joined in tasks {
        match bounded("a streaming call", joined)
            .await
            .expect("call task")
        {
            Ok(held) => open.push(held),
            Err(e) => failed.push(e),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {calls} calls failed; the first: {:?}",
        failed.len(),
        failed.first()
    );
    open
}

/// Reads every held response to its end, checking each body.
async fn read_all(open: Vec<(ResponseStream, RunningRequest)>) {
    for (mut stream, running) in open {
        assert_eq!(stream.status(), 200);
        let mut len = 0;
        while let Some(chunk) = bounded("a chunk", stream.next_chunk()).await {
            len += chunk.expect("a body chunk").bytes().len();
        }
        assert_eq!(len, BODY);
        drop(running);
    }
}

/// What a peak of `calls` held streams over `connections` connections
/// must show: every call running, one driver per connection, and not one
/// provider worker slot taken by a driver.
fn assert_peak(snapshot: &Snapshot, calls: u32, connections: u32) {
    assert_eq!(snapshot.running_requests, calls, "{snapshot:?}");
    assert_eq!(snapshot.connections.active, connections, "{snapshot:?}");
    assert_eq!(snapshot.drivers, connections, "{snapshot:?}");
    assert_eq!(
        snapshot.workers, 0,
        "no driver holds a worker: {snapshot:?}"
    );
}

async fn shut_down_clean(pools: &ProviderPools) {
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
}

/// Sixteen tenants with four calls each, on eight providers: no tenant
/// above its running (16) or per-client (4) share, no provider above its
/// running share (32), no client above its connections (8).
const TENANTS_CALLS: usize = 4;
const PROVIDERS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_limits_hold_running_requests_http1_calls_open_at_once() {
    let nginx = Nginx::new().body(BODY).start();
    let pools = start(Limits::DEFAULT).await;
    let receipts = providers(&pools, &nginx.origin(), &[], PROVIDERS).await;
    let dialer = HttpDialer::new(pools.clone());
    let calls = Limits::DEFAULT.running_requests as usize;

    let open = hold_open(&pools, &receipts, &dialer, calls, TENANTS_CALLS).await;
    assert_peak(&pools.snapshot(), calls as u32, calls as u32);
    read_all(open).await;
    assert_eq!(dialer.dials(), calls as u64, "one connection per call");
    shut_down_clean(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_limits_hold_running_requests_http2_streams_open_at_once() {
    let ca = TestCa::new("provider-pools test ca");
    let (chain, key) = ca.issue_pem();
    let nginx = Nginx::new().body(BODY).http2_tls(chain, key).start();
    let ca_file = ca.pem_file();
    let ca_path = ca_file.path().to_str().expect("utf-8 temp path");
    let settings = [(HTTP2_SETTING, "on"), (CA_FILE_SETTING, ca_path)];
    let pools = start(Limits::DEFAULT).await;
    let receipts = providers(&pools, &nginx.https_origin(), &settings, PROVIDERS).await;
    let dialer = HttpDialer::new(pools.clone());
    let calls = Limits::DEFAULT.running_requests as usize;

    let open = hold_open(&pools, &receipts, &dialer, calls, TENANTS_CALLS).await;
    // An HTTP/2 connection carries one tenant's streams; each tenant's
    // four calls went to four providers, so every stream has its own.
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.running_requests, calls as u32, "{snapshot:?}");
    assert_eq!(snapshot.drivers, calls as u32, "{snapshot:?}");
    assert_eq!(snapshot.workers, 0, "{snapshot:?}");
    read_all(open).await;
    shut_down_clean(&pools).await;
}

/// Raises this process's soft open-file limit to at least `wanted` (up to
/// the hard limit), for the sockets of both ends and nginx's (which
/// inherits it).
fn raise_open_files(wanted: u64) {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum;
    if limit.current.is_some_and(|soft| soft >= wanted) {
        return;
    }
    let soft = hard.map_or(wanted, |hard| hard.min(wanted));
    let raised = rustix::process::Rlimit {
        current: Some(soft),
        maximum: hard,
    };
    setrlimit(Resource::Nofile, raised).expect("raise RLIMIT_NOFILE");
    assert!(
        soft >= wanted,
        "this test needs {wanted} open files; the hard limit is {hard:?}"
    );
}

/// 1,024 calls held open at once: the running ceiling, with the
/// connection limits near theirs (4,096 in all, 256 per client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_near_the_ceilings_hold_1024_calls_open_at_once() {
    const CALLS: usize = 1024;
    raise_open_files(4 * CALLS as u64 + 256);
    // nginx closes idle keep-alive connections once fewer than 1/16 of
    // its worker connections are free: twice as many keep that far off.
    let nginx = Nginx::new()
        .body(BODY)
        .worker_connections(2 * CALLS as u32)
        .start();
    let limits = Limits {
        connections: Limits::CEILING.connections,
        connections_per_client: Limits::CEILING.connections_per_client,
        idle_connections: Limits::CEILING.idle_connections,
        pending_requests: Limits::CEILING.pending_requests,
        running_requests: Limits::CEILING.running_requests,
        requests_per_provider: Limits::CEILING.requests_per_provider,
        running_per_provider: Limits::CEILING.running_per_provider,
        metadata_bytes: Limits::CEILING.metadata_bytes,
        queue_age: Limits::CEILING.queue_age,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let receipts = providers(&pools, &nginx.origin(), &[], PROVIDERS).await;
    let dialer = HttpDialer::new(pools.clone());

    // 64 tenants with 16 calls each (their running share), two per client
    // (within their per-client share of 4); 128 per client.
    let open = hold_open(&pools, &receipts, &dialer, CALLS, 16).await;
    assert_peak(&pools.snapshot(), CALLS as u32, CALLS as u32);
    read_all(open).await;
    shut_down_clean(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_up_to_their_limit_take_nothing_from_another_tenants_calls() {
    let nginx = Nginx::new().body(BODY).start();
    // One tenant may hold every connection of the eight clients at once
    // (8 × 8 = `idle_connections`); everything else is the default.
    let limits = Limits {
        running_per_tenant: Limits::DEFAULT.running_requests,
        requests_per_tenant: Limits::DEFAULT.running_requests,
        connections_per_tenant: Limits::DEFAULT.connections_per_client,
        ..Limits::DEFAULT
    };
    let idle = limits.idle_connections;
    let mut secrets = secret_support::Fixture::with_limits(&[], limits).await;
    secrets.write("api-key", b"s3cr3t");
    let pools = secrets.pools.clone();
    let receipts = providers(&pools, &nginx.origin(), &[], PROVIDERS).await;
    let dialer = HttpDialer::new(pools.clone());
    let dir = tempfile::tempdir().expect("temp dir");
    let config = support::provider_config(
        "files",
        OriginKind::Blob,
        &dir.path().display().to_string(),
        &[],
    );
    let files = support::install_provider(&pools, "files", "file:local", config, b"", 0).await;

    // Tenant `t0` parks `idle_connections` connections.
    let open = hold_open(&pools, &receipts, &dialer, idle as usize, idle as usize).await;
    read_all(open).await;
    eventually("every connection parked", || {
        pools.snapshot().connections.idle == idle
    })
    .await;
    let parked = pools.snapshot();
    assert_eq!(
        (parked.drivers, parked.workers),
        (idle, 0),
        "idle connections hold no worker: {parked:?}"
    );

    // Another tenant's blob, secret and HTTP calls all succeed.
    let other = secret_support::TENANT;
    let key = BlobKey::parse("report.txt").expect("key");
    let limits = BlobLimits::default();
    let put = running_plan(
        &pools,
        &files,
        plan(other, 1),
        OriginKind::Blob,
        Bytes::new(),
    )
    .await;
    blob::put(&pools, &put, &key, Bytes::from_static(b"a report"), limits)
        .await
        .expect("blob put beside the idle connections");
    let get_running = running_plan(
        &pools,
        &files,
        plan(other, 2),
        OriginKind::Blob,
        Bytes::new(),
    )
    .await;
    let mut reader = blob::get(&pools, &get_running, &key, limits)
        .await
        .expect("blob get beside the idle connections");
    let chunk = reader.next_chunk().await.expect("a chunk").expect("read");
    assert_eq!(chunk.bytes().as_ref(), b"a report");
    drop((chunk, reader, put, get_running));

    secrets
        .reload("api-key")
        .await
        .expect("secret reload beside the idle connections");
    let reading = secrets.running().await;
    let value = secret::read(&reading, &secret_support::name("api-key"))
        .expect("secret read beside the idle connections");
    assert_eq!(value.expose_to_guest(), b"s3cr3t");
    drop((value, reading));

    for (session, receipt) in receipts.iter().enumerate() {
        let running = running_on(&pools, receipt, other, 100 + session as u64).await;
        let path = NginxPeer::body_path(BODY);
        let response = call(&pools, &running, &dialer, get(&path), BodyLimits::default())
            .await
            .expect("an HTTP call beside the idle connections");
        assert_eq!(response.status, 200);
    }
    shut_down_clean(&pools).await;
}
