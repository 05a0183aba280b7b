//! A scripted HTTP/1.1 origin on a free loopback port, plain or behind
//! TLS: it records every request (method, target, headers, body, which
//! connection carried it), counts accepted connections, and answers each
//! request with the next scripted [`Answer`] (then the default one).
//!
//! Connections are kept alive after a framed answer unless the client sent
//! `Connection: close`. Everything it does is bounded: heads of at most
//! 64 KiB, bodies of at most 1 MiB, a held answer released after 30 s.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use super::task;

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 1024 * 1024;
const MAX_HOLD: Duration = Duration::from_secs(30);

/// What the origin does with one request.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// Answers `status` with `body` and a `Content-Length`.
    Respond {
        /// The status.
        status: u16,
        /// Extra headers.
        headers: Vec<(&'static str, &'static str)>,
        /// The body.
        body: Vec<u8>,
    },
    /// A body of `len` bytes, declared by `Content-Length`.
    Declared(usize),
    /// A body of `len` bytes in 16 KiB chunks.
    Chunked(usize),
    /// A body of `len` bytes delimited by closing the connection.
    UntilClose(usize),
    /// Never answers: waits until the client goes away (at most 30 s).
    Hold,
    /// Closes the connection without answering.
    Close,
}

impl Answer {
    /// `status` with `body`.
    pub(crate) fn status(status: u16, body: &str) -> Self {
        Self::Respond {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }
}

/// One request as the origin read it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// `GET`, `POST`, …
    pub(crate) method: String,
    /// The request target (origin form).
    pub(crate) target: String,
    /// Header names lowercased, in order.
    pub(crate) headers: Vec<(String, String)>,
    /// The body.
    pub(crate) body: Vec<u8>,
    /// Which accepted connection (1-based) carried it.
    pub(crate) connection: usize,
}

impl Recorded {
    /// The value of header `name` (lowercase), if present once or more.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Default)]
struct Shared {
    accepted: AtomicUsize,
    closed_by_client: AtomicUsize,
    requests: Mutex<Vec<Recorded>>,
    script: Mutex<VecDeque<Answer>>,
}

/// The running origin; it stops when dropped.
#[derive(Debug)]
pub(crate) struct Origin {
    address: SocketAddr,
    scheme: &'static str,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl Origin {
    /// A plain HTTP origin on 127.0.0.1.
    pub(crate) async fn start() -> Self {
        Self::serve(None).await
    }

    /// An HTTPS origin on 127.0.0.1 behind `acceptor`.
    pub(crate) async fn start_tls(acceptor: TlsAcceptor) -> Self {
        Self::serve(Some(acceptor)).await
    }

    async fn serve(tls: Option<TlsAcceptor>) -> Self {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared::default());
        let state = Arc::clone(&shared);
        let server = task(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let id = state.accepted.fetch_add(1, Ordering::SeqCst) + 1;
                let (state, tls) = (Arc::clone(&state), tls.clone());
                task(async move {
                    match tls {
                        None => connection(stream, id, state).await,
                        Some(acceptor) => {
                            // A client that does not trust us ends here.
                            if let Ok(stream) = acceptor.accept(stream).await {
                                connection(stream, id, state).await;
                            }
                        }
                    }
                });
            }
        });
        Self {
            address,
            scheme,
            shared,
            server,
        }
    }

    /// `scheme://127.0.0.1:PORT` + `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}://{}{path}", self.scheme, self.address)
    }

    /// The listening address.
    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// Queues answers for the next requests, in order.
    pub(crate) fn script(&self, answers: impl IntoIterator<Item = Answer>) {
        self.shared.script.lock().expect("script").extend(answers);
    }

    /// Every request read so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("requests").clone()
    }

    /// Connections accepted so far.
    pub(crate) fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Connections the client closed (seen as end of stream) so far.
    pub(crate) fn closed_by_client(&self) -> usize {
        self.shared.closed_by_client.load(Ordering::SeqCst)
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Serves one connection: read a request, record it, answer it, repeat.
async fn connection<S>(mut stream: S, id: usize, state: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buffer = Vec::new();
    loop {
        let Some(request) = read_request(&mut stream, &mut buffer, id).await else {
            state.closed_by_client.fetch_add(1, Ordering::SeqCst);
            return;
        };
        let close = request
            .header("connection")
            .is_some_and(|value| value.eq_ignore_ascii_case("close"));
        state.requests.lock().expect("requests").push(request);
        let answer = state
            .script
            .lock()
            .expect("script")
            .pop_front()
            .unwrap_or_else(|| Answer::status(200, "{}"));
        let keep_alive = match answer {
            Answer::Respond {
                status,
                headers,
                body,
            } => {
                let mut head = format!(
                    "HTTP/1.1 {status} Scripted\r\nContent-Length: {}\r\n",
                    body.len()
                );
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                write(&mut stream, &[head.as_bytes(), &body].concat()).await
            }
            Answer::Declared(len) => {
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
                write(&mut stream, head.as_bytes()).await
                    && write_filler(&mut stream, len, None).await
            }
            Answer::Chunked(len) => {
                let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
                write(&mut stream, head.as_bytes()).await
                    && write_filler(&mut stream, len, Some(16 * 1024)).await
                    && write(&mut stream, b"0\r\n\r\n").await
            }
            Answer::UntilClose(len) => {
                let head = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
                let _ = write(&mut stream, head.as_bytes()).await
                    && write_filler(&mut stream, len, None).await;
                false
            }
            Answer::Hold => {
                let mut sink = [0u8; 1024];
                let until_gone = async { while matches!(stream.read(&mut sink).await, Ok(1..)) {} };
                if tokio::time::timeout(MAX_HOLD, until_gone).await.is_ok() {
                    state.closed_by_client.fetch_add(1, Ordering::SeqCst);
                }
                false
            }
            Answer::Close => false,
        };
        if close || !keep_alive {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// Reads one request; `None` at end of stream or on anything unreadable.
async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    buffer: &mut Vec<u8>,
    connection: usize,
) -> Option<Recorded> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if buffer.len() > MAX_HEAD || !fill(stream, buffer).await {
            return None;
        }
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let (method, target) = (
        request_line.next()?.to_owned(),
        request_line.next()?.to_owned(),
    );
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .map_or(Some(0), |(_, value)| value.parse().ok())?;
    if length > MAX_BODY {
        return None;
    }
    while buffer.len() < head_end + length {
        if !fill(stream, buffer).await {
            return None;
        }
    }
    let body = buffer[head_end..head_end + length].to_vec();
    buffer.drain(..head_end + length);
    Some(Recorded {
        method,
        target,
        headers,
        body,
        connection,
    })
}

async fn fill<S: AsyncRead + Unpin>(stream: &mut S, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 8192];
    match stream.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

async fn write<S: AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) -> bool {
    stream.write_all(bytes).await.is_ok() && stream.flush().await.is_ok()
}

/// `len` bytes of `x`, as chunks of `chunk` bytes when chunked.
async fn write_filler<S: AsyncWrite + Unpin>(
    stream: &mut S,
    len: usize,
    chunk: Option<usize>,
) -> bool {
    let piece = vec![b'x'; chunk.unwrap_or(16 * 1024)];
    let mut left = len;
    while left > 0 {
        let n = left.min(piece.len());
        let framed = match chunk {
            Some(_) => [format!("{n:x}\r\n").as_bytes(), &piece[..n], b"\r\n"].concat(),
            None => piece[..n].to_vec(),
        };
        if !write(stream, &framed).await {
            return false;
        }
        left -= n;
    }
    true
}
