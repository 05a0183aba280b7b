//! [`ReferenceServer`]: a small HTTP/1.1 server speaking the V1 protocol
//! over any [`ControlPlane`] (in-memory or file), so the HTTP client is
//! tested end to end and a deployment can run one.
//!
//! [`ReferenceServer::bind`] returns a handle and a [`ServerTask`]: the
//! caller spawns the task. Every connection is driven inside that one
//! future (no task is spawned here), so the server uses one task's worth of
//! CPU: enough for a control plane, whose calls are small.
//!
//! Invariants:
//! - At most `max_connections` connections are open; the next one is
//!   accepted only when one closes (the rest wait in the listen backlog).
//! - A request body is read up to `max_body_bytes` (64 KiB by default);
//!   a larger one is refused with 413 `too_large` before the store sees it.
//! - Headers must arrive within `header_read_timeout`, a body within
//!   `body_read_timeout` (else 408), so a slow client cannot hold a
//!   connection slot for ever.
//! - The server holds no state of its own: the store answers every call.
//!
//! Shutdown order: [`ReferenceServer::shutdown`] (or dropping the handle)
//! stops accepting and closes the listener; each connection finishes the
//! request it is serving and closes (idle ones at once); after
//! `drain_timeout` the ones left are dropped, closing their sockets; then
//! the task returns.

mod handler;

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use crate::client::{BoxFuture, ControlPlane};
use crate::v1::protocol::MAX_REQUEST_BODY_BYTES;

/// The ceiling of [`ServerConfig::max_body_bytes`]: 16 MiB.
pub const MAX_SERVER_BODY_BYTES: usize = 16 * 1024 * 1024;
/// The ceiling of [`ServerConfig::max_connections`]: 65,536.
pub const MAX_SERVER_CONNECTIONS: usize = 65_536;

/// The bounds of a [`ReferenceServer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConfig {
    /// Largest request body read (default 64 KiB).
    pub max_body_bytes: usize,
    /// Most connections open at once (default 256).
    pub max_connections: usize,
    /// Time allowed to a request's headers (default 10 s).
    pub header_read_timeout: Duration,
    /// Time allowed to a request's body (default 10 s).
    pub body_read_timeout: Duration,
    /// Time open connections get to finish after shutdown (default 5 s).
    pub drain_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: MAX_REQUEST_BODY_BYTES,
            max_connections: 256,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            drain_timeout: Duration::from_secs(5),
        }
    }
}

/// A running reference server's handle: where it listens, and its
/// shutdown. Dropping it shuts the server down too.
#[derive(Debug)]
pub struct ReferenceServer {
    local_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
}

/// The server's work: spawn it. It returns once the server has shut down.
#[must_use = "the server serves nothing until its task runs"]
pub struct ServerTask {
    inner: BoxFuture<'static, ()>,
}

impl ReferenceServer {
    /// Binds `addr` and returns the handle and the task serving V1 over
    /// `store`.
    ///
    /// # Cancel safety
    ///
    /// Dropping this future before it completes leaves nothing bound.
    ///
    /// # Errors
    ///
    /// The bind's I/O error (address in use, permission), or
    /// `InvalidInput` when a bound in `config` is zero or above its ceiling
    /// ([`MAX_SERVER_BODY_BYTES`], [`MAX_SERVER_CONNECTIONS`]).
    pub async fn bind(
        addr: SocketAddr,
        store: Arc<dyn ControlPlane>,
        config: ServerConfig,
    ) -> io::Result<(Self, ServerTask)> {
        if !(1..=MAX_SERVER_BODY_BYTES).contains(&config.max_body_bytes)
            || !(1..=MAX_SERVER_CONNECTIONS).contains(&config.max_connections)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "max_body_bytes must be 1–16 MiB and max_connections 1–65,536",
            ));
        }
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let (shutdown, stopped) = watch::channel(false);
        let task = ServerTask {
            inner: Box::pin(serve(listener, store, config, stopped)),
        };
        Ok((
            Self {
                local_addr,
                shutdown,
            },
            task,
        ))
    }

    /// The address the server listens on (the port chosen for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Begins the graceful shutdown described in the module doc.
    pub fn shutdown(&self) {
        self.shutdown.send_replace(true);
    }
}

impl Drop for ReferenceServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Future for ServerTask {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.inner.as_mut().poll(cx)
    }
}

impl fmt::Debug for ServerTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTask").finish_non_exhaustive()
    }
}

/// Resolves once shutdown was asked for or the handle is gone.
async fn stopping(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stopped| *stopped).await;
}

/// A connection slot, then a connection.
async fn accept(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
) -> io::Result<(TcpStream, OwnedSemaphorePermit)> {
    let permit = Arc::clone(slots)
        .acquire_owned()
        .await
        .map_err(|_| io::Error::other("connection slots closed"))?;
    let (stream, _) = listener.accept().await?;
    Ok((stream, permit))
}

async fn serve(
    listener: TcpListener,
    store: Arc<dyn ControlPlane>,
    config: ServerConfig,
    stopped: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(config.max_connections));
    let mut connections = FuturesUnordered::new();
    let stop = stopping(stopped.clone());
    tokio::pin!(stop);
    loop {
        tokio::select! {
            biased;
            () = &mut stop => break,
            Some(()) = connections.next(), if !connections.is_empty() => {}
            accepted = accept(&listener, &slots) => match accepted {
                Ok((stream, permit)) => connections.push(connection(
                    stream,
                    Arc::clone(&store),
                    config,
                    permit,
                    stopped.clone(),
                )),
                // A failed accept (a reset before accept, no descriptors):
                // the listener stays usable.
                Err(error) => tracing::debug!(%error, "reference server accept failed"),
            },
        }
    }
    drop(listener);
    let drain = async { while connections.next().await.is_some() {} };
    if tokio::time::timeout(config.drain_timeout, drain)
        .await
        .is_err()
    {
        tracing::debug!("reference server dropped connections still open after the drain");
    }
}

/// Serves one connection until it closes or shutdown finishes it.
async fn connection(
    stream: TcpStream,
    store: Arc<dyn ControlPlane>,
    config: ServerConfig,
    permit: OwnedSemaphorePermit,
    stopped: watch::Receiver<bool>,
) {
    let service = hyper::service::service_fn(move |request| {
        handler::handle(Arc::clone(&store), config, request)
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "reference server connection ended");
            }
        }
        () = stopping(stopped) => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
    drop(permit);
}
