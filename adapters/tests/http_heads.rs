//! Response heads against raw origins: an HTTP/1.1 head over
//! `max_head_bytes`, or endless, is refused with `HeadTooLarge` and its
//! connection destroyed, while one within it is read; an HTTP/2 header
//! list over it fails reading the head (the CONTINUATION flood is
//! `http_head_flood.rs`); a head hyper refuses (an overflowing
//! `Content-Length`) fails in the phase that read it, as sent; a head is
//! charged to its tenant while held; a setting over its ceiling
//! is refused by name before any dial; an HTTP/2 peer that allows no
//! stream fails the dial as `no_stream`, its connection never parked, and
//! the client backs off.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use provider_pools_actors::{ConnectError, ConnectionCounts, DialError, DialErrorKind, Limits};
use provider_pools_adapters::http_origin::{
    call, BodyLimits, HttpDialer, HttpError, Sent, HTTP2_SETTING, MAX_HEAD_SETTING,
};
use support::origin::Origin;
use support::{bounded, get, install, quiescent, running, start, task};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A raw HTTP/1.1 origin: reads each request head, then writes `answer`
/// and, when `flood`, header lines without end until the client goes.
/// Counts the connections it accepted.
async fn raw_origin(answer: &'static [u8], flood: bool) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let target = format!("http://{}", listener.local_addr().expect("addr"));
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    task(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            task(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                if socket.write_all(answer).await.is_err() || !flood {
                    return;
                }
                let line = format!("x-flood: {}\r\n", "a".repeat(1_000));
                while socket.write_all(line.as_bytes()).await.is_ok() {}
            });
        }
    });
    (target, accepted)
}

#[tokio::test]
async fn an_endless_http1_head_is_refused_as_too_large_and_its_connection_destroyed() {
    let (target, accepted) = raw_origin(b"HTTP/1.1 200 OK\r\n", true).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &target, &[(MAX_HEAD_SETTING, "16384")], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;

    let refused = bounded(
        "the flooded call",
        call(&pools, &request, &dialer, get("/"), BodyLimits::default()),
    )
    .await
    .expect_err("an endless head");
    assert!(
        matches!(refused, HttpError::HeadTooLarge { max: 16384, .. }),
        "{refused:?}"
    );
    assert_eq!(refused.code(), "response_head_too_large");
    assert_eq!(refused.was_sent(), Sent::Yes);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    drop(request);
    quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().connections,
        ConnectionCounts::default(),
        "the connection was destroyed, not parked"
    );
}

/// A head of about 32 KiB: 32 fields of 1 KiB, then an empty body.
fn head_of_32_kib() -> &'static [u8] {
    let mut head = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n".to_vec();
    for n in 0..32 {
        head.extend_from_slice(format!("x-field-{n}: {}\r\n", "a".repeat(1_000)).as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    head.leak()
}

#[tokio::test]
async fn a_head_over_max_head_bytes_is_refused_and_one_within_it_read() {
    let (target, _) = raw_origin(head_of_32_kib(), false).await;
    for (max, refused) in [("16384", true), ("65536", false)] {
        let pools = start(Limits::DEFAULT).await;
        let receipt = install(&pools, &target, &[(MAX_HEAD_SETTING, max)], b"k").await;
        let dialer = HttpDialer::new(pools.clone());
        let request = running(&pools, &receipt, 1).await;
        let answer = call(&pools, &request, &dialer, get("/"), BodyLimits::default()).await;
        match answer {
            Err(HttpError::HeadTooLarge { max: 16384, .. }) if refused => {}
            Ok(response) if !refused => assert_eq!(response.headers.len(), 33),
            other => panic!("max_head_bytes = {max}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_overflowing_content_length_fails_reading_the_head_as_sent() {
    let (target, _) = raw_origin(
        b"HTTP/1.1 200 OK\r\ncontent-length: 99999999999999999999999\r\n\r\n",
        false,
    )
    .await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;

    let refused = call(&pools, &request, &dialer, get("/"), BodyLimits::default())
        .await
        .expect_err("a refused head");
    assert!(
        matches!(
            refused,
            HttpError::Protocol {
                phase: "reading the response head",
                sent: Sent::Yes,
                ..
            }
        ),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_response_head_is_charged_to_its_tenant_while_held() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    // A first call parks the connection (which holds its own charge).
    let request = running(&pools, &receipt, 1).await;
    call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect("200");
    let request = running(&pools, &receipt, 2).await;
    let before = pools.snapshot().metadata_bytes;

    let response = call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect("200");
    // The head's measure: 32 bytes, and each field's name and value with
    // 32 bytes more.
    let head = response
        .headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 32)
        .sum::<usize>()
        + 32;
    assert_eq!(response.body.bytes().as_ref(), b"hello");
    let held = pools.snapshot().metadata_bytes - before;
    assert_eq!(held as usize, head + b"hello".len());
    drop(response);
    assert_eq!(pools.snapshot().metadata_bytes, before, "released with it");
}

#[tokio::test]
async fn a_max_head_setting_over_its_ceiling_is_refused_by_name_before_any_dial() {
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(
        &pools,
        "http://127.0.0.1:9",
        &[(MAX_HEAD_SETTING, "1048577")],
        b"k",
    )
    .await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let refused = call(&pools, &request, &dialer, get("/"), BodyLimits::default())
        .await
        .expect_err("over the ceiling");
    assert!(
        matches!(
            refused,
            HttpError::Setting {
                setting: "max_head_bytes",
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(dialer.dials(), 0);
}

/// One HTTP/2 frame: type, flags, stream, payload.
type Frame = (u8, u8, u32, Vec<u8>);

async fn write_frame(
    socket: &mut tokio::net::tcp::OwnedWriteHalf,
    (kind, flags, stream, payload): Frame,
) -> std::io::Result<()> {
    let len = payload.len();
    let mut bytes = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    bytes.extend_from_slice(&stream.to_be_bytes());
    bytes.extend_from_slice(&payload);
    socket.write_all(&bytes).await
}

async fn read_frame(socket: &mut tokio::net::tcp::OwnedReadHalf) -> Option<Frame> {
    let mut header = [0u8; 9];
    socket.read_exact(&mut header).await.ok()?;
    let len = usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
    let mut payload = vec![0u8; len];
    socket.read_exact(&mut payload).await.ok()?;
    let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
    Some((header[3], header[4], stream, payload))
}

/// A raw HTTP/2 origin (prior knowledge). Its SETTINGS carry `settings`
/// (identifier, value pairs); it answers PINGs and SETTINGS, and each
/// request with `answer(stream)`'s frames, written until one fails.
/// Counts the connections it accepted.
async fn raw_h2_origin(
    settings: &'static [(u16, u32)],
    answer: fn(u32) -> Box<dyn Iterator<Item = Frame> + Send>,
) -> (String, Arc<AtomicUsize>) {
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
                let payload = settings
                    .iter()
                    .flat_map(|(id, value)| id.to_be_bytes().into_iter().chain(value.to_be_bytes()))
                    .collect();
                if write_frame(&mut wr, (0x4, 0, 0, payload)).await.is_err() {
                    return;
                }
                while let Some((kind, flags, stream, payload)) = read_frame(&mut rd).await {
                    let reply = match (kind, flags & 0x1) {
                        (0x4, 0) => write_frame(&mut wr, (0x4, 0x1, 0, Vec::new())).await,
                        (0x6, 0) => write_frame(&mut wr, (0x6, 0x1, 0, payload)).await,
                        (0x1, _) => {
                            let mut written = Ok(());
                            for frame in answer(stream) {
                                written = write_frame(&mut wr, frame).await;
                                if written.is_err() {
                                    break;
                                }
                            }
                            written
                        }
                        _ => Ok(()),
                    };
                    if reply.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (target, accepted)
}

/// `:status: 200` and 150 literal fields (`x: ` and 100 bytes, about
/// 20 KiB as a header list) in one HEADERS frame ending the stream.
fn large_head(stream: u32) -> Box<dyn Iterator<Item = Frame> + Send> {
    let mut field = vec![0x00, 0x01, b'x', 100];
    field.extend_from_slice(&[b'a'; 100]);
    let mut block = vec![0x88];
    block.extend(field.iter().copied().cycle().take(field.len() * 150));
    Box::new(std::iter::once((0x1, 0x4 | 0x1, stream, block)))
}

#[tokio::test]
async fn an_http2_header_list_over_max_head_bytes_fails_reading_the_head_as_sent() {
    let (target, _) = raw_h2_origin(&[], large_head).await;
    for (max, refused) in [("8192", true), ("65536", false)] {
        let pools = start(Limits::DEFAULT).await;
        let settings = [(HTTP2_SETTING, "on"), (MAX_HEAD_SETTING, max)];
        let receipt = install(&pools, &target, &settings, b"k").await;
        let dialer = HttpDialer::new(pools.clone());
        let request = running(&pools, &receipt, 1).await;
        let answer = call(&pools, &request, &dialer, get("/"), BodyLimits::default()).await;
        match answer {
            Err(HttpError::Protocol {
                phase: "reading the response head",
                sent: Sent::Yes,
                ..
            }) if refused => {}
            Ok(response) if !refused => assert_eq!(response.headers.len(), 150),
            other => panic!("max_head_bytes = {max}: {other:?}"),
        }
    }
}

/// `:status: 200`, ending the stream.
fn ok_head(stream: u32) -> Box<dyn Iterator<Item = Frame> + Send> {
    Box::new(std::iter::once((0x1, 0x4 | 0x1, stream, vec![0x88])))
}

#[tokio::test]
async fn a_peer_allowing_no_stream_fails_the_dial_as_no_stream_and_the_client_backs_off() {
    // SETTINGS_MAX_CONCURRENT_STREAMS (0x3) = 0.
    let (target, accepted) = raw_h2_origin(&[(0x3, 0)], ok_head).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &target, &[(HTTP2_SETTING, "on")], b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    let request = running(&pools, &receipt, 1).await;
    let refused = call(&pools, &request, &dialer, get("/"), BodyLimits::default())
        .await
        .expect_err("no stream allowed");
    assert!(
        matches!(
            &refused,
            HttpError::Connect(ConnectError::Dial(DialError {
                kind: DialErrorKind::NoStream,
                ..
            }))
        ),
        "{refused:?}"
    );
    assert_eq!(refused.code(), "no_stream");
    assert_eq!(refused.was_sent(), Sent::No);
    drop(request);
    quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().connections,
        ConnectionCounts::default(),
        "the connection was destroyed, not parked"
    );

    // The next call meets the backoff: no second dial.
    let request = running(&pools, &receipt, 2).await;
    let refused = call(&pools, &request, &dialer, get("/"), BodyLimits::default())
        .await
        .expect_err("backing off");
    assert!(
        matches!(
            refused,
            HttpError::Connect(ConnectError::Unavailable {
                kind: DialErrorKind::NoStream,
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "dialed once");
    assert_eq!(dialer.dials(), 1);
}
