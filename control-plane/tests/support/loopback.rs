//! [`LoopbackTransport`]: a test-only HTTP/1.1 transport over a real tokio
//! `TcpStream`, one connection per request (`Connection: close`), honouring
//! the request's deadline and bounding what it reads.

use std::fmt;

use bytes::Bytes;
use provider_pools_control_plane::transport::{
    HttpControlPlaneRequest, HttpMethod, HttpResponse, HttpTransport,
    SharedHttpControlPlaneRequest, TransportError, DEFAULT_MAX_RESPONSE_BYTES,
};
use provider_pools_control_plane::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Largest response head read.
const MAX_HEAD_BYTES: usize = 16 * 1024;

pub struct LoopbackTransport {
    max_response_bytes: usize,
}

impl LoopbackTransport {
    pub fn new() -> Self {
        Self {
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

impl fmt::Debug for LoopbackTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackTransport").finish()
    }
}

impl HttpTransport for LoopbackTransport {
    fn send(
        &self,
        request: HttpControlPlaneRequest,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        Box::pin(async move {
            let deadline = Instant::now() + request.timeout;
            let body = Bytes::from(request.body);
            self.bounded(deadline, request.method, &request.url, &body)
                .await
        })
    }

    fn send_shared<'a>(
        &'a self,
        request: &'a SharedHttpControlPlaneRequest,
    ) -> BoxFuture<'a, Result<HttpResponse, TransportError>> {
        Box::pin(self.bounded(
            request.deadline(),
            request.method(),
            request.url(),
            request.body(),
        ))
    }
}

impl LoopbackTransport {
    async fn bounded(
        &self,
        deadline: Instant,
        method: HttpMethod,
        url: &str,
        body: &Bytes,
    ) -> Result<HttpResponse, TransportError> {
        tokio::time::timeout_at(deadline, self.exchange(method, url, body))
            .await
            .unwrap_or(Err(TransportError::Timeout))
    }

    async fn exchange(
        &self,
        method: HttpMethod,
        url: &str,
        body: &Bytes,
    ) -> Result<HttpResponse, TransportError> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| TransportError::Connect(format!("not an http URL: {url}")))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let mut stream = TcpStream::connect(authority)
            .await
            .map_err(|error| TransportError::Connect(error.to_string()))?;
        let head = format!(
            "{} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            method.as_str(),
            body.len()
        );
        let io = |error: std::io::Error| TransportError::Io(error.to_string());
        stream.write_all(head.as_bytes()).await.map_err(io)?;
        stream.write_all(body).await.map_err(io)?;
        stream.flush().await.map_err(io)?;
        let limit = MAX_HEAD_BYTES + self.max_response_bytes;
        let mut received = Vec::new();
        (&mut stream)
            .take(limit as u64 + 1)
            .read_to_end(&mut received)
            .await
            .map_err(io)?;
        if received.len() > limit {
            return Err(TransportError::TooLarge {
                limit: self.max_response_bytes,
            });
        }
        parse(&received, self.max_response_bytes)
    }
}

/// Status and body of one whole `Content-Length` response.
fn parse(received: &[u8], max_body: usize) -> Result<HttpResponse, TransportError> {
    let malformed = |why: &str| TransportError::Malformed(why.to_owned());
    let end = received
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or_else(|| malformed("no end of head"))?;
    let head = std::str::from_utf8(&received[..end]).map_err(|_| malformed("head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.strip_prefix("HTTP/1.1 "))
        .and_then(|line| line.get(..3))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| malformed("bad status line"))?;
    let length = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .ok_or_else(|| malformed("no content-length"))?;
    if length > max_body {
        return Err(TransportError::TooLarge { limit: max_body });
    }
    let body = &received[end + 4..];
    if body.len() < length {
        return Err(malformed("body shorter than its content-length"));
    }
    Ok(HttpResponse {
        status,
        body: Bytes::copy_from_slice(&body[..length]),
    })
}
