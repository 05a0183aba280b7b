//! [`HttpDialer`] and [`HttpConnection`]: one HTTP/1.1 connection over
//! tokio TCP, or TLS over it for `https`, with its own driver (HTTP/2
//! connections: [`crate::http_origin::http2`]).
//!
//! Invariants:
//! - The driver is started before the TCP connect starts, on no worker
//!   slot: it holds the connection's charges (decision record 0063); a dial
//!   that fails or is dropped ends it at once.
//! - An `https` origin's connection carries HTTP only after a completed TLS
//!   handshake; a failed one is a [`DialErrorKind::Handshake`] dial error,
//!   so the client backs off like after any failed dial.
//! - The driver never runs as a detached task: it is started with
//!   `ProviderPools::spawn_driver` and joined by the worker pool before the
//!   connection's charges return.
//! - An [`HttpConnection`] owns the request sender and the driver's handle;
//!   dropping it drops the sender, which ends the driver and closes the
//!   socket (the origin reads EOF).
//! - A connection in use carries its request's deadline; the driver closes
//!   the socket when it passes, whether or not anyone still reads (an
//!   unread stream held past its deadline keeps no socket open).
//! - The driver fires the connection's closure notice when the socket is
//!   done (the origin closed it, or the sender went): a parked connection
//!   the origin closed leaves the idle stash, and its charges, at once.
//! - A parked connection carries its idle deadline (see `lifetime.rs`) as
//!   its driver's deadline: the driver closes it then, before the origin's
//!   own keep-alive close.
//! - The response head hyper reads is bounded by the provider setting
//!   `max_head_bytes`; the connection's settings are read at its dial.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use provider_pools_actors::{
    close_watch, CloseNotifier, CloseWatch, DialError, DialErrorKind, DialTarget, Dialer,
    JobHandle, ProviderPools,
};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::dialer_core::DialerCore;
use crate::http_origin::connect::{connect, dial_plan, dial_settings, Stream, DRIVER_JOB};
use crate::http_origin::expiry::Expiry;
use crate::http_origin::http2::H2Dialer;
use crate::http_origin::lifetime::{Counted, Lifetime, ReadCount};
use crate::http_origin::tls;

type Driver = http1::Connection<TokioIo<Box<dyn Stream>>, Full<Bytes>>;

/// Dials HTTP/1.1 connections to a slot's approved origin; `https`
/// origins get TLS, trusting the epoch's `ca_file` setting when present and
/// the bundled web PKI roots otherwise.
#[derive(Clone)]
pub struct HttpDialer {
    /// Its dial count is shared with `h2`.
    core: DialerCore,
    /// Dials the HTTP/2 connections of clients with `http2 = "on"`.
    h2: H2Dialer,
}

impl HttpDialer {
    /// A dialer whose connections' drivers run on `pools`.
    pub fn new(pools: ProviderPools) -> Self {
        let core = DialerCore::new(pools);
        Self {
            h2: H2Dialer::new(core.clone()),
            core,
        }
    }

    /// The dialer of this one's HTTP/2 connections.
    pub(crate) fn h2(&self) -> &H2Dialer {
        &self.h2
    }

    /// Dials started so far (for metrics and tests).
    pub fn dials(&self) -> u64 {
        self.core.dials()
    }
}

impl fmt::Debug for HttpDialer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpDialer")
            .field("dials", &self.dials())
            .finish_non_exhaustive()
    }
}

/// One owned HTTP/1.1 connection: the request sender and its driver.
///
/// Field order is drop order: the sender goes first, which lets the driver
/// finish and close the socket.
pub struct HttpConnection {
    sender: SendRequest<Full<Bytes>>,
    /// The deadline its driver closes it at: the request's using it, or
    /// its idle spell's.
    expiry: Arc<Expiry>,
    /// Fires when the driver ends (the origin closed the socket, or the
    /// sender was dropped); parked with the connection.
    watch: CloseWatch,
    /// Its age, requests, idle deadline and bytes read.
    life: Lifetime,
    _driver: JobHandle<()>,
}

impl HttpConnection {
    pub(crate) fn sender(&mut self) -> &mut SendRequest<Full<Bytes>> {
        &mut self.sender
    }

    /// Tells the driver the deadline of the request now using the
    /// connection, or of its idle spell: past it, the driver closes the
    /// socket.
    ///
    /// Only a deadline earlier than the one the driver's timer is armed at
    /// wakes the driver; a later one is written without a notice, and the
    /// driver reads it when its timer fires (see [`Expiry`]). A request's
    /// deadline is usually later than the idle deadline armed at the last
    /// park, and the next park's idle deadline later still, so a connection
    /// in steady use wakes its driver about once per idle timeout, not once
    /// per request.
    pub(crate) fn expire_at(&self, deadline: Option<Instant>) {
        self.expiry.set(deadline);
    }

    /// The closure notice its driver fires when the socket closes.
    pub(crate) fn watch(&self) -> &CloseWatch {
        &self.watch
    }

    /// True once the connection can carry no more requests.
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed() || self.watch.is_closed()
    }

    /// Its age, requests carried, idle deadline and bytes read.
    pub(crate) fn life(&self) -> &Lifetime {
        &self.life
    }

    /// As [`Self::life`], to record a request or a park.
    pub(crate) fn life_mut(&mut self) -> &mut Lifetime {
        &mut self.life
    }
}

#[cfg(test)]
impl HttpConnection {
    /// A connection whose driver a test runs itself (it must fire
    /// `watch`'s notifier when the driver ends).
    pub(crate) fn from_parts(
        sender: SendRequest<Full<Bytes>>,
        watch: CloseWatch,
        driver: JobHandle<()>,
    ) -> Self {
        Self {
            sender,
            expiry: Arc::new(Expiry::default()),
            watch,
            life: Lifetime::new(
                crate::http_origin::settings::ConnectionSettings::DEFAULT,
                ReadCount::default(),
            ),
            _driver: driver,
        }
    }
}

impl fmt::Debug for HttpConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConnection")
            .field("closed", &self.sender.is_closed())
            .finish_non_exhaustive()
    }
}

impl Dialer for HttpDialer {
    type Conn = HttpConnection;

    /// Starts the connection's driver, connects (and runs the TLS handshake for
    /// `https`), and hands the driver over.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the socket and the driver's hand-over
    /// channel; the driver then ends at once and is joined.
    ///
    /// # Errors
    ///
    /// A [`DialError`]: `Refused`/`Timeout`/`Other` from the TCP connect,
    /// `Handshake` for an unusable `ca_file` or a failed TLS handshake,
    /// `Protocol` for a failed HTTP/1 handshake, `Other` for a connection
    /// setting out of range.
    async fn dial(&self, target: DialTarget<'_>) -> Result<HttpConnection, DialError> {
        self.core.count_dial();
        let settings = dial_settings(&target)?;
        let (origin, tls_config) = dial_plan(&target, tls::Alpn::Http1)?;
        let (hand_over, driver) = oneshot::channel::<Driver>();
        let expiry = Arc::new(Expiry::default());
        let (watch, notifier) = close_watch();
        let expiring = Arc::clone(&expiry);
        let job = self
            .core
            .start_driver(&target, DRIVER_JOB, move || {
                drive(driver, expiring, notifier)
            })
            .await?;
        let stream = connect(&origin, tls_config, tls::Alpn::Http1).await?;
        let reads = ReadCount::default();
        let stream: Box<dyn Stream> = Box::new(Counted::new(stream, reads.clone()));
        let (sender, connection) = http1::Builder::new()
            // The status line and headers, bounded; hyper refuses a longer
            // head as too large.
            .max_header_size(settings.max_head)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| DialError::new(DialErrorKind::Protocol, e.to_string()))?;
        hand_over.send(connection).map_err(|_| {
            DialError::new(DialErrorKind::Other, "the connection driver ended early")
        })?;
        Ok(HttpConnection {
            sender,
            expiry,
            watch,
            life: Lifetime::new(settings, reads),
            _driver: job,
        })
    }
}

/// The driver: runs the connection once it is handed over; ends at
/// once when the dial gave up, and closes the socket when the deadline of
/// the request using it passes. When the connection ends, the closure
/// notice fires: a parked connection leaves its idle stash at once.
async fn drive(driver: oneshot::Receiver<Driver>, expiry: Arc<Expiry>, notifier: CloseNotifier) {
    if let Ok(connection) = driver.await {
        run_until_expired(connection, expiry).await;
    }
    notifier.closed();
}

/// Runs `connection` until it ends (its sender dropped, or the origin
/// closed it) or the deadline in force passes; either way the socket is
/// closed when this returns.
///
/// The timer is armed at the deadline in force, recorded in `expiry` as
/// armed. An earlier deadline wakes the driver to arm it anew; a later one
/// arrives without a notice, so when the timer fires the deadline is read
/// again: passed, the driver ends; moved later (or taken away), the timer
/// is armed anew. The timer thus never fires after the deadline in force.
async fn run_until_expired(connection: Driver, expiry: Arc<Expiry>) {
    let mut connection = std::pin::pin!(connection);
    loop {
        let deadline = expiry.arm();
        tokio::select! {
            _ = &mut connection => return,
            () = expiry.earlier() => {}
            () = expired(deadline) => {
                if expiry.passed(Instant::now()) {
                    return;
                }
            }
        }
    }
}

/// Resolves at `deadline`; never without one.
async fn expired(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
