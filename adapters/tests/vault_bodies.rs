//! Vault answers held to the request's charges, and stale connections:
//! a secret over the tenant's metadata share fails at the first chunk that
//! does not fit (real OpenBao behind a relay; an endless answer shows the
//! charge is taken per chunk, not at the end), the connection is
//! destroyed and the share returns to its baseline, and the peak RSS
//! grows by the share plus a constant, not by the secret; parked connections
//! the server closed never fail the next read (a loopback server that
//! closes idle keep-alive connections on its own schedule).

mod support;

use std::time::Duration;

use provider_pools_actors::{AdmitError, Limits, ProviderPools};
use provider_pools_adapters::http_origin::HttpDialer;
use provider_pools_adapters::vault::{self, SecretPath, VaultError, VaultLimits};
use serde_json::json;
use support::idle::IdleOrigin;
use support::origin::Origin;
use support::relay::Relay;
use support::vault::{bao_call, install, running, start_bao, ROOT};
use support::{bounded, deadline, eventually, io_turn, start, task};

/// The tests of this file run one at a time, so that the peak RSS one of
/// them measures is its own.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn path(text: &str) -> SecretPath {
    SecretPath::parse(text).expect("valid path")
}

/// A small tenant share, so that bodies stay small and tests fast.
const SHARE: u32 = 64 * 1024;

fn small_share() -> Limits {
    Limits {
        metadata_per_tenant: SHARE,
        ..Limits::DEFAULT
    }
}

/// Reads whose answers may be as large as the ceiling: only the charge
/// stops them.
const UNBOUNDED: VaultLimits = VaultLimits::CEILING;

fn is_over_the_share(err: &VaultError) -> bool {
    matches!(
        err,
        VaultError::Staging(AdmitError::Capacity {
            resource: "metadata_per_tenant",
            ..
        })
    )
}

async fn assert_clean_shutdown(pools: &ProviderPools) {
    let report = bounded("shutdown", pools.shutdown(deadline())).await;
    assert!(report.is_clean(), "shutdown leaves {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vault_secret_over_the_metadata_budget_fails_at_the_first_chunk_and_destroys_its_connection(
) {
    let _serial = SERIAL.lock().await;
    let bao = start_bao().await;
    let mut relay = Relay::start(bao.addr()).await;
    let pools = start(small_share()).await;
    let receipt = install(&pools, &relay.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    // Written with the root token on the server's own sockets.
    for (name, len) in [("small", 16), ("big", 1 << 20)] {
        let blob = "b".repeat(len);
        let (status, body) = bao_call(
            bao.addr(),
            "POST",
            &format!("/v1/secret/data/app/{name}"),
            ROOT,
            Some(json!({ "data": { "blob": blob } })),
        )
        .await;
        assert_eq!(status, 200, "secret {name} written: {body}");
    }
    let request = running(&pools, &receipt, 1).await;
    // No connection yet: a connection's own charge goes with it.
    let baseline = pools.snapshot().metadata_bytes;
    let small = vault::read(&pools, &request, &dialer, &path("app/small"), UNBOUNDED)
        .await
        .expect("a small secret fits the share");
    drop(small);
    eventually("the connection parked", || {
        pools.snapshot().connections.idle == 1
    })
    .await;

    let err = vault::read(&pools, &request, &dialer, &path("app/big"), UNBOUNDED)
        .await
        .expect_err("a 1 MiB secret over a 64 KiB share");
    assert!(is_over_the_share(&err), "{err:?}");
    assert_eq!(err.code(), "capacity");
    // It took the parked connection, and destroyed it.
    relay.client_closed().await;
    assert_eq!(relay.accepted(), 1, "the read used the parked connection");
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.connections.active, snapshot.connections.idle),
        (0, 0),
        "destroyed, not parked"
    );
    eventually(
        "every chunk's charge returned, and the connection's",
        || pools.snapshot().metadata_bytes == baseline,
    )
    .await;

    // The share is whole again.
    let again = vault::read(&pools, &request, &dialer, &path("app/small"), UNBOUNDED)
        .await
        .expect("the small secret still fits");
    assert_eq!(dialer.dials(), 2, "a fresh connection for it");
    drop((again, request));
    assert_clean_shutdown(&pools).await;
}

/// This process's resident set and its peak since the last reset, in KiB
/// (`/proc/self/status`).
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/self/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Writes a secret of `len` bytes (`{"data":{"blob":"bbb…"}}`) with the
/// root token, streamed in 64 KiB pieces: this process never holds it, so
/// its allocator keeps no freed megabytes that a read could reuse unseen.
async fn write_streamed(addr: std::net::SocketAddr, path: &str, len: usize) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (prefix, suffix) = (r#"{"data":{"blob":""#, r#""}}"#);
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nX-Vault-Token: {ROOT}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{prefix}",
        prefix.len() + len + suffix.len()
    );
    let piece = [b'b'; 64 * 1024];
    bounded("the streamed secret write", async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.write_all(head.as_bytes()).await.expect("head");
        for _ in 0..len / piece.len() {
            stream.write_all(&piece).await.expect("piece");
        }
        stream
            .write_all(&piece[..len % piece.len()])
            .await
            .expect("rest");
        stream.write_all(suffix.as_bytes()).await.expect("suffix");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("answer");
        assert!(answer.starts_with(b"HTTP/1.1 200"), "secret written");
    })
    .await;
}

/// An 8 MiB secret against the default 2 MiB share: the process's peak
/// resident set grows by the share plus a constant (2.1–3.8 MiB in 30
/// runs), never by the secret: with the body read whole before it is
/// charged (tried by hand), it grew 10 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_8_mib_secret_over_a_2_mib_share_raises_the_peak_rss_by_far_less_than_the_secret() {
    let _serial = SERIAL.lock().await;
    const SECRET: usize = 8 << 20;
    let bao = start_bao().await;
    let pools = start(Limits::DEFAULT).await;
    let target = format!("http://{}", bao.addr());
    let receipt = install(&pools, &target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    write_streamed(bao.addr(), "/v1/secret/data/app/huge", SECRET).await;
    let request = running(&pools, &receipt, 1).await;

    // The peak is reset here (Linux's `clear_refs` 5).
    std::fs::write("/proc/self/clear_refs", "5").expect("peak RSS reset");
    let (before, _) = rss_kib();
    let err = vault::read(&pools, &request, &dialer, &path("app/huge"), UNBOUNDED)
        .await
        .expect_err("8 MiB over a 2 MiB share");
    let (_, peak) = rss_kib();
    assert!(
        matches!(
            err,
            VaultError::Staging(AdmitError::Capacity {
                resource: "metadata_per_tenant",
                ..
            })
        ),
        "{err:?}"
    );
    let growth = peak.saturating_sub(before);
    eprintln!("figures: peak RSS +{growth} KiB reading an 8 MiB secret over a 2 MiB share");
    assert!(
        growth < 6 * 1024,
        "peak RSS grew {growth} KiB: more than the 2 MiB share and 4 MiB of slack"
    );
    drop(request);
    assert_clean_shutdown(&pools).await;
}

/// The answer never ends: charged only once read whole, it would end at
/// the 32 MiB response bound instead (`TooLarge`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_vault_answer_fails_when_its_chunks_pass_the_share_not_at_its_end() {
    let _serial = SERIAL.lock().await;
    let mut origin = Origin::start().await;
    let pools = start(small_share()).await;
    let receipt = install(&pools, &origin.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let baseline = pools.snapshot().metadata_bytes;

    let err = bounded(
        "the endless read to fail",
        vault::read(&pools, &request, &dialer, &path("app/endless"), UNBOUNDED),
    )
    .await
    .expect_err("an endless answer");
    assert!(is_over_the_share(&err), "{err:?}");
    origin.client_closed().await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.connections.active, snapshot.connections.idle),
        (0, 0)
    );
    eventually(
        "every chunk's charge returned, and the connection's",
        || pools.snapshot().metadata_bytes == baseline,
    )
    .await;
    drop(request);
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_vault_connections_the_server_closed_while_parked_never_fail_the_next_read() {
    let _serial = SERIAL.lock().await;
    const WAVE: usize = 8;
    let body = r#"{"data":{"data":{"k":"v"},"metadata":{"version":1,"created_time":"t","deletion_time":"","destroyed":false}}}"#;
    let origin = IdleOrigin::start(body, Duration::from_millis(100), WAVE).await;
    let pools = start(Limits {
        connections_per_client: 16,
        connections_per_tenant: 16,
        ..Limits::DEFAULT
    })
    .await;
    let receipt = install(&pools, &origin.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());

    // One wave of reads, each on its own connection (the server answers
    // none until all came), then parked.
    let mut reads = Vec::new();
    for session in 1..=WAVE as u64 {
        let request = running(&pools, &receipt, session).await;
        let (pools, dialer) = (pools.clone(), dialer.clone());
        reads.push(task(async move {
            vault::read(&pools, &request, &dialer, &path("app/wave"), UNBOUNDED).await
        }));
    }
    for read in reads {
        bounded("a read of the wave", read)
            .await
            .expect("joined")
            .expect("read");
    }
    eventually("eight connections parked", || {
        pools.snapshot().connections.idle == WAVE as u32
    })
    .await;
    assert_eq!(dialer.dials(), WAVE as u64);

    // The server closes all eight on its own schedule; the close has
    // reached this process's sockets, whether or not their drivers ran.
    origin.closed(WAVE).await;
    io_turn().await;
    let request = running(&pools, &receipt, 100).await;
    let secret = vault::read(&pools, &request, &dialer, &path("app/after"), UNBOUNDED)
        .await
        .expect("a read after the server closed every parked connection");
    assert_eq!(secret.metadata.version, 1);
    assert_eq!(
        origin.arrivals("/v1/secret/data/app/after"),
        [WAVE],
        "sent once, on a fresh connection"
    );
    assert_eq!(dialer.dials(), WAVE as u64 + 1);
    drop((secret, request));
    eventually("only the fresh connection parked", || {
        pools.snapshot().connections.idle == 1
    })
    .await;
    assert_clean_shutdown(&pools).await;
}
