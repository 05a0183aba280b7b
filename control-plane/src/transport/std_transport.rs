//! [`StdHttpTransport`]: the one-shot V1 compatibility profile — one
//! standard-library TCP connection per request, plain HTTP/1.1, no
//! dependencies beyond std.
//!
//! Invariants:
//! - Plain http only, so loopback only (the endpoint rule); an https URL
//!   is refused before any connect with [`TransportError::Connect`]. Use
//!   [`PooledHttpTransport`](super::PooledHttpTransport) for TLS.
//! - Every socket operation is bounded by the request deadline: the connect
//!   timeout and each read and write timeout are set to the time left, so
//!   the blocking work ends by the deadline even when the caller has
//!   stopped waiting.
//! - The blocking exchange runs on tokio's blocking pool, never on a
//!   runtime worker; it owns only its socket and the shared body.
//! - The response is read through the bounded parser of `response_reader`:
//!   head at most `MAX_HEAD_BYTES`, body at most `max_response_bytes`.
//! - Errors: connect failure is `Connect` (the request never left), a
//!   failure after the first byte was written is `Io` (it may have
//!   applied), the deadline is `Timeout`.

use std::io::{self, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant as StdInstant};

use bytes::Bytes;
use tokio::time::Instant;
use url::{Host, Url};

use super::response_reader::{io_error, read_response};
use super::target::{origin_form, request_url};
use super::{
    HttpControlPlaneRequest, HttpMethod, HttpResponse, HttpTransport,
    SharedHttpControlPlaneRequest, TransportError, DEFAULT_MAX_RESPONSE_BYTES,
};
use crate::error::ControlPlaneError;
use crate::future::BoxFuture;
use crate::transport::{Endpoint, Scheme};

/// One TCP connection per request, `Connection: close`, std only.
///
/// ```no_run
/// use provider_pools_control_plane::transport::StdHttpTransport;
///
/// let transport = StdHttpTransport::new().with_max_response_bytes(64 * 1024)?;
/// # let _ = transport;
/// # Ok::<(), provider_pools_control_plane::ControlPlaneError>(())
/// ```
#[derive(Debug, Clone)]
pub struct StdHttpTransport {
    max_response_bytes: usize,
}

impl Default for StdHttpTransport {
    fn default() -> Self {
        Self::new()
    }
}

impl StdHttpTransport {
    /// A transport reading at most [`DEFAULT_MAX_RESPONSE_BYTES`] of body.
    pub fn new() -> Self {
        Self {
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// This transport with another response-body bound: 1 to
    /// [`MAX_RESPONSE_BYTES_CEILING`](super::MAX_RESPONSE_BYTES_CEILING).
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `max_response_bytes` when zero
    /// or above the ceiling.
    pub fn with_max_response_bytes(
        self,
        max_response_bytes: usize,
    ) -> Result<Self, ControlPlaneError> {
        Ok(Self {
            max_response_bytes: super::check_response_bound(max_response_bytes)?,
        })
    }

    /// The response-body bound, in bytes.
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }

    async fn exchange(
        &self,
        method: HttpMethod,
        url: &str,
        body: Bytes,
        deadline: Instant,
    ) -> Result<HttpResponse, TransportError> {
        let url = request_url(url)?;
        if url.scheme() != "http" {
            return Err(TransportError::Connect(
                "StdHttpTransport speaks plain http only; use PooledHttpTransport for https".into(),
            ));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let deadline = StdInstant::now()
            .checked_add(left)
            .ok_or(TransportError::Timeout)?;
        if left.is_zero() {
            return Err(TransportError::Timeout);
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(TransportError::Connect(
                "StdHttpTransport needs a tokio runtime".into(),
            ));
        }
        let max_body = self.max_response_bytes;
        // Blocking socket I/O must not run on a runtime worker, and the
        // control plane has no worker pool of its own: the blocking pool is
        // the place. The closure owns only its socket and the shared body,
        // and every socket operation times out by `deadline`, so the task
        // ends by then even if this future is dropped.
        #[allow(
            clippy::disallowed_methods,
            reason = "blocking socket I/O, bounded by the deadline"
        )]
        let task =
            tokio::task::spawn_blocking(move || one_shot(&url, method, &body, deadline, max_body));
        task.await.map_err(|error| {
            TransportError::Io(format!("the blocking exchange did not finish: {error}"))
        })?
    }
}

impl HttpTransport for StdHttpTransport {
    fn send(
        &self,
        request: HttpControlPlaneRequest,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        Box::pin(async move {
            let request = request.into_shared();
            self.exchange(
                request.method(),
                request.url(),
                request.body().clone(),
                request.deadline(),
            )
            .await
        })
    }

    fn send_shared<'a>(
        &'a self,
        request: &'a SharedHttpControlPlaneRequest,
    ) -> BoxFuture<'a, Result<HttpResponse, TransportError>> {
        Box::pin(self.exchange(
            request.method(),
            request.url(),
            request.body().clone(),
            request.deadline(),
        ))
    }

    /// Plain http only: an https endpoint is
    /// [`ControlPlaneError::Invalid`] (field `endpoint`).
    fn check_endpoint(&self, endpoint: &Endpoint) -> Result<(), ControlPlaneError> {
        match endpoint.scheme() {
            Scheme::Http => Ok(()),
            Scheme::Https => Err(ControlPlaneError::invalid(
                "endpoint",
                "StdHttpTransport speaks plain http only; use PooledHttpTransport for https",
            )),
        }
    }
}

/// Connects, writes the request and reads the answer, all by `deadline`.
fn one_shot(
    url: &Url,
    method: HttpMethod,
    body: &[u8],
    deadline: StdInstant,
    max_body: usize,
) -> Result<HttpResponse, TransportError> {
    let stream = connect(url, deadline)?;
    let mut stream = DeadlineStream { stream, deadline };
    let head = request_head(url, method, body.len());
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .and_then(|()| stream.flush())
        .map_err(io_error)?;
    read_response(&mut BufReader::new(stream), max_body)
}

fn request_head(url: &Url, method: HttpMethod, body_len: usize) -> String {
    let host = url.host_str().unwrap_or_default();
    let port = url
        .port()
        .map(|port| format!(":{port}"))
        .unwrap_or_default();
    format!(
        "{method} {target} HTTP/1.1\r\nHost: {host}{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json\r\n\
         Content-Length: {body_len}\r\n\r\n",
        method = method.as_str(),
        target = origin_form(url),
    )
}

/// The first loopback address of `url` that accepts a connection by
/// `deadline`.
fn connect(url: &Url, deadline: StdInstant) -> Result<TcpStream, TransportError> {
    let port = url
        .port_or_known_default()
        .ok_or_else(|| TransportError::Connect("the request URL has no port".into()))?;
    let addresses: Vec<SocketAddr> = match url.host() {
        Some(Host::Ipv4(ip)) => vec![SocketAddr::from((ip, port))],
        Some(Host::Ipv6(ip)) => vec![SocketAddr::from((ip, port))],
        // Only `localhost` gets here (plain http is loopback only); it
        // resolves from the hosts file, not the network.
        Some(Host::Domain(name)) => (name, port)
            .to_socket_addrs()
            .map_err(|error| TransportError::Connect(format!("cannot resolve the host: {error}")))?
            .collect(),
        None => {
            return Err(TransportError::Connect(
                "the request URL has no host".into(),
            ))
        }
    };
    let mut last = TransportError::Connect("the host has no loopback address".into());
    // A name that resolves off loopback is never dialled over plain http.
    for address in addresses
        .iter()
        .filter(|address| address.ip().is_loopback())
    {
        let left = time_left(deadline).map_err(|_| TransportError::Timeout)?;
        match TcpStream::connect_timeout(address, left) {
            Ok(stream) => {
                // Best effort: small requests go out at once.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(_) if time_left(deadline).is_err() => return Err(TransportError::Timeout),
            Err(error) => last = TransportError::Connect(error.to_string()),
        }
    }
    Err(last)
}

fn time_left(deadline: StdInstant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(StdInstant::now());
    if left.is_zero() {
        Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"))
    } else {
        Ok(left)
    }
}

/// A socket whose every read and write times out by `deadline`.
struct DeadlineStream {
    stream: TcpStream,
    deadline: StdInstant,
}

impl Read for DeadlineStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream
            .set_read_timeout(Some(time_left(self.deadline)?))?;
        self.stream.read(buf)
    }
}

impl Write for DeadlineStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream
            .set_write_timeout(Some(time_left(self.deadline)?))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}
