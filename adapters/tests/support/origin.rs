//! A real hyper HTTP/1.1 origin on 127.0.0.1 that counts accepted
//! connections, records each request, and reports each connection whose
//! client closed it (EOF or reset read by the server, or a write that
//! failed).
//!
//! Routes: `/ok` ("hello"), `/close` (`Connection: close`), `/big` (64 KiB,
//! announced), `/big-chunked` (64 KiB in 4 KiB chunks, not announced),
//! `/chunks` (three chunks), `/hang` (one chunk, then never ends),
//! `/huge` (8 MiB in 64 KiB chunks, not announced), any path ending in
//! `/endless` or `/endless/` (16 KiB chunks that never end, not announced),
//! any path ending in `/endless-404` (the same, as a 404),
//! `/status/404`, `/status/503`, `/keep-alive-2` ("hello" with
//! `Keep-Alive: timeout=2`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One request as the origin received it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) headers: hyper::HeaderMap,
}

pub(crate) struct Origin {
    /// `http://127.0.0.1:PORT`, as a provider's origin target.
    pub(crate) target: String,
    accepted: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Seen>>>,
    closed: mpsc::Receiver<()>,
}

impl Origin {
    pub(crate) async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let target = format!("http://{}", listener.local_addr().expect("addr"));
        let accepted = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (closed_tx, closed) = mpsc::channel(64);
        let (count, log) = (Arc::clone(&accepted), Arc::clone(&seen));
        super::task(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let io = Watched {
                    stream,
                    closed: Some(closed_tx.clone()),
                };
                let log = Arc::clone(&log);
                let service = hyper::service::service_fn(move |req| {
                    let log = Arc::clone(&log);
                    async move { Ok::<_, Infallible>(answer(&log, req)) }
                });
                super::task(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(io), service)
                        .await;
                });
            }
        });
        Self {
            target,
            accepted,
            seen,
            closed,
        }
    }

    /// Connections accepted so far.
    pub(crate) fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Requests received so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }

    /// Requests received for `path`.
    pub(crate) fn hits(&self, path: &str) -> usize {
        self.seen().iter().filter(|s| s.path == path).count()
    }

    /// Waits until the server has read EOF (or a reset) on one connection.
    pub(crate) async fn client_closed(&mut self) {
        super::bounded("the origin to read EOF", self.closed.recv())
            .await
            .expect("origin alive");
    }
}

fn answer(log: &Mutex<Vec<Seen>>, req: Request<hyper::body::Incoming>) -> Response<Chunks> {
    let path = req.uri().path().to_owned();
    log.lock().expect("log").push(Seen {
        path: path.clone(),
        headers: req.headers().clone(),
    });
    let chunk = |text: &'static str| Bytes::from_static(text.as_bytes());
    let big = || Bytes::from(vec![b'x'; 4096]);
    let (status, body) = match path.as_str() {
        "/ok" | "/keep-alive-2" => (StatusCode::OK, Chunks::exact(chunk("hello"))),
        "/close" => (StatusCode::OK, Chunks::exact(chunk("bye"))),
        "/big" => (
            StatusCode::OK,
            Chunks::exact(Bytes::from(vec![b'x'; 65536])),
        ),
        "/big-chunked" => (StatusCode::OK, Chunks::open((0..16).map(|_| big()), false)),
        "/chunks" => (
            StatusCode::OK,
            Chunks::open([chunk("one,"), chunk("two,"), chunk("three")], false),
        ),
        "/hang" => (StatusCode::OK, Chunks::open([chunk("first")], true)),
        "/huge" => (
            StatusCode::OK,
            Chunks::open((0..128).map(|_| Bytes::from(vec![b'h'; 65536])), false),
        ),
        p if p.ends_with("/endless-404") => {
            (StatusCode::NOT_FOUND, Chunks::endless(vec![b'n'; 16384]))
        }
        p if p.trim_end_matches('/').ends_with("/endless") => {
            (StatusCode::OK, Chunks::endless(vec![b'e'; 16384]))
        }
        "/status/404" => (StatusCode::NOT_FOUND, Chunks::exact(chunk("not found"))),
        "/status/503" => (
            StatusCode::SERVICE_UNAVAILABLE,
            Chunks::exact(chunk("unavailable")),
        ),
        _ => (
            StatusCode::BAD_REQUEST,
            Chunks::exact(chunk("unknown route")),
        ),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    if path == "/keep-alive-2" {
        response.headers_mut().insert(
            "keep-alive",
            hyper::header::HeaderValue::from_static("timeout=2"),
        );
    }
    if path == "/close" {
        response.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    response
}

/// A response body from a list of chunks: announced (Content-Length) or
/// chunked, and optionally never ending after its last chunk.
pub(crate) struct Chunks {
    chunks: VecDeque<Bytes>,
    exact: Option<u64>,
    hang: bool,
    /// Sent again and again once `chunks` are out.
    endless: Option<Bytes>,
}

impl Chunks {
    fn exact(bytes: Bytes) -> Self {
        Self {
            exact: Some(bytes.len() as u64),
            chunks: VecDeque::from([bytes]),
            hang: false,
            endless: None,
        }
    }

    fn endless(chunk: Vec<u8>) -> Self {
        Self {
            chunks: VecDeque::new(),
            exact: None,
            hang: false,
            endless: Some(Bytes::from(chunk)),
        }
    }

    fn open(chunks: impl IntoIterator<Item = Bytes>, hang: bool) -> Self {
        Self {
            chunks: chunks.into_iter().collect(),
            exact: None,
            hang,
            endless: None,
        }
    }
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let (true, Some(chunk)) = (self.chunks.is_empty(), &self.endless) {
            return Poll::Ready(Some(Ok(Frame::data(chunk.clone()))));
        }
        match self.chunks.pop_front() {
            Some(chunk) => Poll::Ready(Some(Ok(Frame::data(chunk)))),
            // Never woken: the connection ends only when the client leaves.
            None if self.hang => Poll::Pending,
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty() && !self.hang && self.endless.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        self.exact.map(SizeHint::with_exact).unwrap_or_default()
    }
}

/// The server's socket, reporting the first EOF or reset it reads, or
/// the first write that fails.
struct Watched {
    stream: TcpStream,
    closed: Option<mpsc::Sender<()>>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        let closed = match &polled {
            Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if closed {
            if let Some(tx) = self.closed.take() {
                let _ = tx.try_send(());
            }
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        // A client gone while the server writes (an endless body) is seen
        // as a failed write, not a read.
        if matches!(polled, Poll::Ready(Err(_))) {
            if let Some(tx) = self.closed.take() {
                let _ = tx.try_send(());
            }
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
