//! HTTP/2 (`http2 = "on"`) against a loopback hyper h2 origin (prior
//! knowledge): one tenant's concurrent requests share a connection up to
//! the origin's stream limit; tenants never share one; a GOAWAY lets the
//! streams in flight finish and sends new requests to a new connection,
//! and the old one is destroyed, not parked; a stream the origin refuses
//! fails unsent and unretried; a stream past its deadline times out
//! alone; a bad setting is refused before any dial.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use provider_pools_actors::{Limits, OriginKind};
use provider_pools_adapters::http_origin::{
    call, BodyLimits, BufferedResponse, HttpDialer, HttpError, Sent, HTTP2_SETTING,
};
use support::h2_origin::H2Origin;
use support::{bounded, eventually, get, install, running_as, start, task};

const H2: [(&str, &str); 1] = [(HTTP2_SETTING, "on")];

/// One tenant may use all of a client's connections here.
const ONE_TENANT: Limits = Limits {
    connections_per_tenant: Limits::DEFAULT.connections_per_client,
    ..Limits::DEFAULT
};

/// A call of `tenant`'s to `path`, as a task.
fn spawn_call(
    pools: &provider_pools_actors::ProviderPools,
    receipt: &provider_pools_actors::InstallReceipt,
    dialer: &HttpDialer,
    tenant: &'static str,
    session: u64,
    path: &'static str,
) -> tokio::task::JoinHandle<Result<BufferedResponse, HttpError>> {
    let (pools, receipt, dialer) = (pools.clone(), receipt.clone(), dialer.clone());
    task(async move {
        let request = running_as(&pools, &receipt, tenant, session, OriginKind::Http).await;
        call(&pools, &request, &dialer, get(path), BodyLimits::default()).await
    })
}

async fn ok(call: tokio::task::JoinHandle<Result<BufferedResponse, HttpError>>) -> String {
    let response = bounded("an h2 call", call)
        .await
        .expect("the call's task")
        .expect("200");
    assert_eq!(response.status, 200);
    String::from_utf8(response.body.bytes().to_vec()).expect("utf-8")
}

#[tokio::test]
async fn one_tenants_requests_share_a_connection_up_to_the_origins_stream_limit() {
    let origin = H2Origin::start(2).await;
    let pools = start(ONE_TENANT).await;
    let receipt = install(&pools, &origin.target, &H2, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    // A first call: the origin's SETTINGS (2 streams) are known after it
    // (until then a connection counts one).
    assert_eq!(
        ok(spawn_call(&pools, &receipt, &dialer, "a", 1, "/ok")).await,
        "hello"
    );
    let calls: Vec<_> = (2..=4)
        .map(|session| spawn_call(&pools, &receipt, &dialer, "a", session, "/slow"))
        .collect();
    eventually("three streams at the origin", || origin.in_flight() == 3).await;
    assert_eq!(
        origin.accepted(),
        2,
        "two streams on the first connection, the third on a second"
    );
    assert_eq!((origin.most_at_once(1), origin.most_at_once(2)), (2, 1));
    origin.release(3);
    for call in calls {
        assert_eq!(ok(call).await, "slow");
    }
    assert_eq!(dialer.dials(), 2);
    eventually("both connections parked, nothing running", || {
        let snapshot = pools.snapshot();
        snapshot.connections.idle == 2 && snapshot.running_requests == 0
    })
    .await;
    assert_eq!(
        ok(spawn_call(&pools, &receipt, &dialer, "a", 5, "/ok")).await,
        "hello"
    );
    assert_eq!(
        origin.accepted(),
        2,
        "a parked connection serves the next call"
    );
}

#[tokio::test]
async fn tenants_never_share_a_connection() {
    let origin = H2Origin::start(100).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &H2, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let a = spawn_call(&pools, &receipt, &dialer, "a", 1, "/slow");
    let b = spawn_call(&pools, &receipt, &dialer, "b", 1, "/slow");
    eventually("both streams at the origin", || origin.in_flight() == 2).await;
    let mut connections: Vec<usize> = origin.seen().iter().map(|(c, _)| *c).collect();
    connections.sort_unstable();
    assert_eq!(
        connections,
        [1, 2],
        "a and b each on a connection of their own"
    );
    origin.release(2);
    ok(a).await;
    ok(b).await;
}

#[tokio::test]
async fn a_goaway_lets_streams_in_flight_finish_and_new_calls_use_a_new_connection() {
    let origin = H2Origin::start(100).await;
    let pools = start(ONE_TENANT).await;
    let receipt = install(&pools, &origin.target, &H2, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let slow = spawn_call(&pools, &receipt, &dialer, "a", 1, "/slow");
    eventually("the slow stream at the origin", || origin.in_flight() == 1).await;
    assert_eq!(
        ok(spawn_call(&pools, &receipt, &dialer, "a", 2, "/goaway")).await,
        "bye"
    );
    assert_eq!(
        origin.accepted(),
        1,
        "the GOAWAY call shared the connection"
    );
    // New calls go to a new connection; the stream in flight finishes.
    let after = ok(spawn_call(&pools, &receipt, &dialer, "a", 3, "/ok")).await;
    assert_eq!(after, "hello");
    assert_eq!(origin.accepted(), 2);
    assert_eq!(origin.seen().last(), Some(&(2, "/ok".to_owned())));
    origin.release(1);
    assert_eq!(ok(slow).await, "slow", "the stream in flight finished");
    eventually(
        "the going-away connection destroyed, the new one parked",
        || {
            let counts = pools.snapshot().connections;
            counts.idle == 1 && counts.active == 0
        },
    )
    .await;
}

/// An h2 origin (h2's own server: hyper's cannot refuse a stream) that
/// resets every stream with `REFUSED_STREAM` but `/ok`, counting streams
/// and connections.
async fn refusing_origin() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let target = format!("http://{}", listener.local_addr().expect("addr"));
    let (streams, accepted) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (s, a) = (Arc::clone(&streams), Arc::clone(&accepted));
    task(async move {
        while let Ok((socket, _)) = listener.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            let s = Arc::clone(&s);
            task(async move {
                let Ok(mut conn) = h2::server::handshake(socket).await else {
                    return;
                };
                while let Some(Ok((request, mut respond))) = conn.accept().await {
                    s.fetch_add(1, Ordering::SeqCst);
                    if request.uri().path() == "/ok" {
                        let head = http::Response::new(());
                        if let Ok(mut send) = respond.send_response(head, false) {
                            let _ = send.send_data(bytes::Bytes::from_static(b"hello"), true);
                        }
                    } else {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                    }
                }
            });
        }
    });
    (target, streams, accepted)
}

#[tokio::test]
async fn a_refused_stream_fails_as_unsent_and_is_not_sent_again() {
    let (target, streams, accepted) = refusing_origin().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &target, &H2, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let refused = ok_or_err(spawn_call(&pools, &receipt, &dialer, "a", 1, "/refuse")).await;
    assert!(
        matches!(refused, Err(HttpError::Protocol { sent: Sent::No, .. })),
        "REFUSED_STREAM: not processed, so not sent: {refused:?}"
    );
    assert_eq!(streams.load(Ordering::SeqCst), 1, "sent once");
    assert_eq!(
        ok(spawn_call(&pools, &receipt, &dialer, "a", 2, "/ok")).await,
        "hello"
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "the connection serves on"
    );
}

#[tokio::test]
async fn a_stream_past_its_deadline_times_out_alone() {
    let origin = H2Origin::start(100).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &H2, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let soon = tokio::time::Instant::now() + std::time::Duration::from_millis(300);
    let request = support::running_until(&pools, &receipt, "a", 1, soon).await;
    let other = spawn_call(&pools, &receipt, &dialer, "a", 2, "/slow");
    eventually("the other stream at the origin", || origin.in_flight() == 1).await;
    let timed_out = bounded(
        "a call past its deadline",
        call(
            &pools,
            &request,
            &dialer,
            get("/slow"),
            BodyLimits::default(),
        ),
    )
    .await;
    assert!(
        matches!(timed_out, Err(HttpError::Timeout { .. })),
        "{timed_out:?}"
    );
    origin.release(2);
    assert_eq!(ok(other).await, "slow", "the other stream carried on");
    assert_eq!(origin.accepted(), 1, "on the one connection");
}

#[tokio::test]
async fn a_bad_http2_setting_is_refused_before_any_dial() {
    let origin = H2Origin::start(100).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[(HTTP2_SETTING, "maybe")], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let refused = ok_or_err(spawn_call(&pools, &receipt, &dialer, "a", 1, "/ok")).await;
    assert!(
        matches!(
            refused,
            Err(HttpError::Setting {
                setting: "http2",
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(
        refused.map(|_| ()).map_err(|e| e.code()),
        Err("invalid_setting")
    );
    assert_eq!(dialer.dials(), 0);
}

async fn ok_or_err(
    call: tokio::task::JoinHandle<Result<BufferedResponse, HttpError>>,
) -> Result<BufferedResponse, HttpError> {
    bounded("a call", call).await.expect("the call's task")
}

/// One HTTP/2 frame: type, flags, stream, payload.
type Frame = (u8, u8, u32, Vec<u8>);

async fn write_frame(
    socket: &mut tokio::net::tcp::OwnedWriteHalf,
    (kind, flags, stream, payload): Frame,
) {
    use tokio::io::AsyncWriteExt;
    let len = payload.len();
    let mut bytes = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    bytes.extend_from_slice(&stream.to_be_bytes());
    bytes.extend_from_slice(&payload);
    socket.write_all(&bytes).await.expect("a frame written");
}

async fn read_frame(socket: &mut tokio::net::tcp::OwnedReadHalf) -> Option<Frame> {
    use tokio::io::AsyncReadExt;
    let mut header = [0u8; 9];
    socket.read_exact(&mut header).await.ok()?;
    let len = usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
    let mut payload = vec![0u8; len];
    socket.read_exact(&mut payload).await.ok()?;
    let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
    Some((header[3], header[4], stream, payload))
}

/// `:status: 200` (HPACK static index 8), ending the stream.
fn ok_head(stream: u32) -> Frame {
    (0x1, 0x4 | 0x1, stream, vec![0x88])
}

#[tokio::test]
async fn a_goaway_stops_new_streams_on_its_connection_at_once_while_it_stays_open() {
    use tokio::io::AsyncReadExt;
    // A hand-written origin: it answers the client's PING; on its first
    // connection it holds stream 1, then sends GOAWAY (last stream 1) and
    // a PING; the client's PING ACK says it has read the GOAWAY. The
    // connection stays open. Every other stream is answered 200 at once.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let target = format!("http://{}", listener.local_addr().expect("addr"));
    let accepted = Arc::new(AtomicUsize::new(0));
    let (opened_tx, opened) = tokio::sync::oneshot::channel::<()>();
    let (acked_tx, acked) = tokio::sync::oneshot::channel::<()>();
    let (answer_tx, answer) = tokio::sync::oneshot::channel::<()>();
    let count = Arc::clone(&accepted);
    task(async move {
        let mut hold = Some((opened_tx, acked_tx, answer));
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let held = hold.take();
            task(async move {
                let (mut rd, mut wr) = socket.into_split();
                let mut preface = [0u8; 24];
                rd.read_exact(&mut preface)
                    .await
                    .expect("the client preface");
                write_frame(&mut wr, (0x4, 0, 0, Vec::new())).await;
                let mut held =
                    held.map(|(opened, acked, answer)| (Some(opened), Some(acked), Some(answer)));
                while let Some((kind, flags, stream, payload)) = read_frame(&mut rd).await {
                    match (kind, flags & 0x1) {
                        (0x4, 0) => write_frame(&mut wr, (0x4, 0x1, 0, Vec::new())).await,
                        // The client's PING (its dial waits for the answer).
                        (0x6, 0) => write_frame(&mut wr, (0x6, 0x1, 0, payload)).await,
                        (0x1, _) if stream == 1 && held.is_some() => {
                            let (opened, ..) = held.as_mut().expect("held");
                            let _ = opened.take().map(|tx| tx.send(()));
                            let goaway = [0, 0, 0, 1, 0, 0, 0, 0].to_vec();
                            write_frame(&mut wr, (0x7, 0, 0, goaway)).await;
                            write_frame(&mut wr, (0x6, 0, 0, vec![7; 8])).await;
                        }
                        (0x6, 1) => {
                            let (_, acked, answer) = held.as_mut().expect("held");
                            let _ = acked.take().map(|tx| tx.send(()));
                            if let Some(answer) = answer.take() {
                                let _ = answer.await;
                            }
                            write_frame(&mut wr, ok_head(1)).await;
                        }
                        (0x1, _) => write_frame(&mut wr, ok_head(stream)).await,
                        _ => {}
                    }
                }
            });
        }
    });
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &target, &H2, b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let first = spawn_call(&pools, &receipt, &dialer, "a", 1, "/held");
    bounded("stream 1 opened", opened).await.expect("opened");
    bounded("the GOAWAY read (PING acknowledged)", acked)
        .await
        .expect("acked");
    let second = ok_or_err(spawn_call(&pools, &receipt, &dialer, "a", 2, "/next")).await;
    assert_eq!(second.expect("200").status, 200);
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        2,
        "no stream opened on the connection that said GOAWAY"
    );
    let _ = answer_tx.send(());
    assert_eq!(
        ok_or_err(first).await.expect("200").status,
        200,
        "stream 1 finished"
    );
}
