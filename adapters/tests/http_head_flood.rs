//! The memory an HTTP/2 CONTINUATION flood costs: four tenants' calls to
//! a raw origin that answers each stream with HEADERS without END_HEADERS
//! and then CONTINUATION frames without end. With `max_head_bytes` at its
//! 64 KiB default, the process's peak resident memory (Linux `VmHWM`,
//! reset before the flood) grows by a few MiB at most, where h2's own
//! 16 MiB header list let it grow by 69–81 MiB; every call fails as
//! `HeadTooLarge`. Alone in its binary: the peak is the process's.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use provider_pools_actors::{ConnectionCounts, Limits, OriginKind};
use provider_pools_adapters::http_origin::{
    call, BodyLimits, HttpDialer, HttpError, HTTP2_SETTING,
};
use support::{bounded, get, install, running_as, start, task};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Largest growth of the peak resident memory the flood may cause.
const GROWTH_BOUND_KIB: u64 = 16 * 1024;

/// A field of `/proc/self/status`, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

/// Resets the peak resident memory (`VmHWM`) to the current one.
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("/proc/self/clear_refs");
}

/// A raw HTTP/2 origin (prior knowledge, empty SETTINGS) answering each
/// HEADERS with `:status: 200` without END_HEADERS, then 15 KiB
/// CONTINUATION frames of literal fields without end, until a write
/// fails. Counts the connections it accepted.
async fn flooding_origin() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let target = format!("http://{}", listener.local_addr().expect("addr"));
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    task(async move {
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            task(async move {
                let (mut rd, mut wr) = socket.into_split();
                let mut preface = [0u8; 24];
                if rd.read_exact(&mut preface).await.is_err() {
                    return;
                }
                let mut field = vec![0x00, 0x01, b'x', 100];
                field.extend_from_slice(&[b'a'; 100]);
                let block: Vec<u8> = field
                    .iter()
                    .copied()
                    .cycle()
                    .take(field.len() * 150)
                    .collect();
                if wr.write_all(&frame(0x4, 0, 0, &[])).await.is_err() {
                    return;
                }
                loop {
                    let mut header = [0u8; 9];
                    if rd.read_exact(&mut header).await.is_err() {
                        return;
                    }
                    let len = usize::from(header[0]) << 16
                        | usize::from(header[1]) << 8
                        | usize::from(header[2]);
                    let mut payload = vec![0u8; len];
                    if rd.read_exact(&mut payload).await.is_err() {
                        return;
                    }
                    let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]])
                        & 0x7fff_ffff;
                    let reply = match (header[3], header[4] & 0x1) {
                        (0x4, 0) => frame(0x4, 0x1, 0, &[]),
                        (0x6, 0) => frame(0x6, 0x1, 0, &payload),
                        (0x1, _) => frame(0x1, 0, stream, &[0x88]),
                        _ => continue,
                    };
                    if wr.write_all(&reply).await.is_err() {
                        return;
                    }
                    if header[3] == 0x1 {
                        let continuation = frame(0x9, 0, stream, &block);
                        while wr.write_all(&continuation).await.is_ok() {}
                        return;
                    }
                }
            });
        }
    });
    (target, accepted)
}

/// One HTTP/2 frame's bytes.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    let mut bytes = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    bytes.extend_from_slice(&stream.to_be_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_flood_on_four_connections_grows_the_peak_memory_by_a_few_mib_at_most() {
    let (target, accepted) = flooding_origin().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &target, &[(HTTP2_SETTING, "on")], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    reset_peak();
    let baseline = status_kib("VmRSS:");

    let mut calls = Vec::new();
    for (session, tenant) in ["a", "b", "c", "d"].into_iter().enumerate() {
        let (pools, receipt, dialer) = (pools.clone(), receipt.clone(), dialer.clone());
        calls.push(task(async move {
            let request =
                running_as(&pools, &receipt, tenant, session as u64, OriginKind::Http).await;
            call(&pools, &request, &dialer, get("/"), BodyLimits::default()).await
        }));
    }
    for flooded in calls {
        let refused = bounded("a flooded call", flooded)
            .await
            .expect("the call's task")
            .expect_err("a flood");
        assert!(
            matches!(refused, HttpError::HeadTooLarge { max: 65536, .. }),
            "{refused:?}"
        );
    }
    let growth = status_kib("VmHWM:").saturating_sub(baseline);
    eprintln!("peak resident memory growth over 4 flooded connections: {growth} KiB");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        4,
        "one connection per tenant"
    );
    assert!(
        growth < GROWTH_BOUND_KIB,
        "the flood grew the peak resident memory by {growth} KiB"
    );
    support::eventually("the flooded connections destroyed", || {
        pools.snapshot().connections == ConnectionCounts::default()
    })
    .await;
}
