//! [`H2Dialer`] and [`H2Connection`]: one HTTP/2 connection, shared by the
//! streams of one tenant; its driver is the connection's own (started with
//! `ProviderPools::spawn_driver`, holding the connection's charges).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use h2::client::SendRequest;
use provider_pools_actors::{
    close_watch, CloseNotifier, CloseWatch, DialError, DialErrorKind, DialTarget, Dialer,
    JobHandle, Multiplexed,
};
use tokio::sync::oneshot;

use crate::dialer_core::DialerCore;
use crate::http::dialer::{connect, dial_plan, Stream, DRIVER_JOB};
use crate::http::http2::{max_streams, HTTP2_MAX_STREAMS_SETTING};
use crate::http::tls;

type Driver = h2::client::Connection<Box<dyn Stream>, Bytes>;

/// Dials HTTP/2 connections to a slot's approved origin: TLS with ALPN
/// `h2` for `https`, prior knowledge for `http`.
#[derive(Clone)]
pub struct H2Dialer {
    core: DialerCore,
}

impl H2Dialer {
    /// A dialer whose connection drivers run as jobs of `core`'s pools,
    /// counting its dials in `core`'s count.
    pub(crate) fn new(core: DialerCore) -> Self {
        Self { core }
    }
}

impl fmt::Debug for H2Dialer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("H2Dialer")
            .field("dials", &self.core.dials())
            .finish_non_exhaustive()
    }
}

/// One owned HTTP/2 connection: its request sender, its driver, and
/// whether it still opens streams.
///
/// Field order is drop order: the sender goes first; with no stream left,
/// the driver then closes the connection.
pub struct H2Connection {
    sender: SendRequest<Bytes>,
    /// Set once a new stream was refused: h2 refuses every new stream
    /// after the peer's GOAWAY, or on a broken connection.
    away: Arc<AtomicBool>,
    /// `http2_max_streams` at the dial.
    cap: u32,
    watch: CloseWatch,
    _driver: JobHandle<()>,
}

impl H2Connection {
    fn is_open(&self) -> bool {
        !self.away.load(Ordering::Acquire) && !self.watch.is_closed()
    }
}

impl fmt::Debug for H2Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("H2Connection")
            .field("open", &self.is_open())
            .field("cap", &self.cap)
            .finish_non_exhaustive()
    }
}

/// What one request sends on: a handle to its connection's sender, and
/// the means to say the connection goes away.
#[derive(Debug)]
pub struct H2Stream {
    pub(crate) sender: SendRequest<Bytes>,
    away: Arc<AtomicBool>,
}

impl H2Stream {
    /// The connection opens no new stream from now on (it answered one
    /// with GOAWAY, or broke); its streams finish.
    pub(crate) fn going_away(&self) {
        self.away.store(true, Ordering::Release);
    }
}

impl Multiplexed for H2Connection {
    type Stream = H2Stream;

    /// The peer's `SETTINGS_MAX_CONCURRENT_STREAMS`, capped by
    /// `http2_max_streams`.
    fn max_streams(&self) -> u32 {
        let peer = u32::try_from(self.sender.current_max_send_streams()).unwrap_or(u32::MAX);
        peer.min(self.cap)
    }

    fn open_stream(&self) -> Option<H2Stream> {
        self.is_open().then(|| H2Stream {
            sender: self.sender.clone(),
            away: Arc::clone(&self.away),
        })
    }

    fn is_reusable(&self) -> bool {
        self.is_open()
    }

    fn close_watch(&self) -> Option<CloseWatch> {
        Some(self.watch.clone())
    }
}

impl Dialer for H2Dialer {
    type Conn = H2Connection;

    /// Starts the connection's driver, connects (TLS with ALPN `h2` for
    /// `https`), runs the HTTP/2 handshake, and hands the driver over.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the socket and the driver's hand-over
    /// channel; the driver then ends at once and is joined.
    ///
    /// # Errors
    ///
    /// A [`DialError`]: `Refused`/`Timeout`/`Other` from the TCP connect,
    /// `Handshake` for an unusable `ca_file`, a failed TLS handshake or an
    /// origin that did not select `h2`, `Protocol` for a failed HTTP/2
    /// handshake, `Other` for an `http2_max_streams` out of range.
    async fn dial(&self, target: DialTarget<'_>) -> Result<H2Connection, DialError> {
        self.core.count_dial();
        let cap = max_streams(
            target
                .settings
                .get(HTTP2_MAX_STREAMS_SETTING)
                .map(String::as_str),
        )
        .map_err(|reason| {
            DialError::new(
                DialErrorKind::Other,
                format!("{HTTP2_MAX_STREAMS_SETTING} {reason}"),
            )
        })?;
        let (origin, tls_config) = dial_plan(&target, tls::Alpn::H2)?;
        let (hand_over, driver) = oneshot::channel::<Driver>();
        let (watch, notifier) = close_watch();
        let job = self
            .core
            .start_driver(&target, DRIVER_JOB, drive(driver, notifier))
            .await?;
        let stream = connect(&origin, tls_config, tls::Alpn::H2).await?;
        let (sender, connection) = h2::client::Builder::new()
            // No server push: the pools own every stream they carry.
            .enable_push(false)
            // Until the peer's SETTINGS arrive its stream limit is
            // unknown: count one, not h2's default of 100.
            .initial_max_send_streams(1)
            .handshake(stream)
            .await
            .map_err(|e| DialError::new(DialErrorKind::Protocol, e.to_string()))?;
        hand_over.send(connection).map_err(|_| {
            DialError::new(DialErrorKind::Other, "the connection driver ended early")
        })?;
        Ok(H2Connection {
            sender,
            away: Arc::default(),
            cap,
            watch,
            _driver: job,
        })
    }
}

/// The driver: runs the connection once it is handed over, until the
/// peer closes it or it is destroyed (no sender and no stream left); ends
/// at once when the dial gave up. Then the closure notice fires.
async fn drive(driver: oneshot::Receiver<Driver>, notifier: CloseNotifier) {
    if let Ok(connection) = driver.await {
        // Its error is the connection's end; the streams report their own.
        let _ = connection.await;
    }
    notifier.closed();
}
