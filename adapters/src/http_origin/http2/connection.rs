//! [`H2Dialer`] and [`H2Connection`]: one HTTP/2 connection, shared by the
//! streams of one tenant; its driver is the connection's own (started with
//! `ProviderPools::spawn_driver`, holding the connection's charges).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use provider_pools_actors::{
    close_watch, CloseNotifier, CloseWatch, DialError, DialErrorKind, DialTarget, Dialer,
    JobHandle, Multiplexed,
};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::dialer_core::DialerCore;
use crate::http_origin::connect::{connect, dial_plan, dial_settings, Stream, DRIVER_JOB};
use crate::http_origin::http2::{max_streams, HTTP2_MAX_STREAMS_SETTING};
use crate::http_origin::tls;

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
    /// When it was dialed, and how long and for how many streams it may
    /// live (`max_connection_age_ms`, `max_connection_requests`).
    born: Instant,
    max_age: Duration,
    max_requests: u32,
    /// Streams opened so far.
    opened: AtomicU32,
    watch: CloseWatch,
    _driver: JobHandle<()>,
}

impl H2Connection {
    fn is_open(&self) -> bool {
        !self.away.load(Ordering::Acquire) && !self.watch.is_closed()
    }

    /// Younger than its age and under its request count: it may open
    /// another stream.
    fn has_life_left(&self) -> bool {
        self.born.elapsed() < self.max_age
            && self.opened.load(Ordering::Acquire) < self.max_requests
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

    /// A stream, while the connection is open and has life left (its age
    /// and request count, see `settings.rs`).
    fn open_stream(&self) -> Option<H2Stream> {
        (self.is_open() && self.has_life_left()).then(|| {
            self.opened.fetch_add(1, Ordering::AcqRel);
            H2Stream {
                sender: self.sender.clone(),
                away: Arc::clone(&self.away),
            }
        })
    }

    /// Open, with life left, and its peer allows a stream: any other
    /// connection is destroyed with its last stream, never parked.
    fn is_reusable(&self) -> bool {
        self.is_open() && self.has_life_left() && self.max_streams() > 0
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
    /// handshake, `NoStream` for a peer whose SETTINGS allow no stream,
    /// `Other` for an `http2_max_streams` or a connection setting out of
    /// range.
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
        let settings = dial_settings(&target)?;
        let (origin, tls_config) = dial_plan(&target, tls::Alpn::H2)?;
        let (hand_over, driver) = oneshot::channel::<Driver>();
        let (watch, notifier) = close_watch();
        let job = self
            .core
            .start_driver(&target, DRIVER_JOB, move || drive(driver, notifier))
            .await?;
        let stream = connect(&origin, tls_config, tls::Alpn::H2).await?;
        let (sender, connection) = h2::client::Builder::new()
            // No server push: the pools own every stream they carry.
            .enable_push(false)
            // Until the peer's SETTINGS arrive its stream limit is
            // unknown: count one, not h2's default of 100.
            .initial_max_send_streams(1)
            // The header list of a response, bounded (h2 refuses the
            // stream of a longer one, and ends the connection of a peer
            // that keeps sending CONTINUATION frames past it).
            .max_header_list_size(u32::try_from(settings.max_head).unwrap_or(u32::MAX))
            .handshake(stream)
            .await
            .map_err(|e| DialError::new(DialErrorKind::Protocol, e.to_string()))?;
        let connection = peer_settings(connection).await?;
        if sender.current_max_send_streams() == 0 {
            // A failed dial: the client backs off rather than dial again
            // for each call.
            return Err(DialError::new(
                DialErrorKind::NoStream,
                "the peer allows no stream (SETTINGS_MAX_CONCURRENT_STREAMS 0)",
            ));
        }
        hand_over.send(connection).map_err(|_| {
            DialError::new(DialErrorKind::Other, "the connection driver ended early")
        })?;
        Ok(H2Connection {
            sender,
            away: Arc::default(),
            cap,
            born: Instant::now(),
            max_age: settings.max_age,
            max_requests: settings.max_requests,
            opened: AtomicU32::new(0),
            watch,
            _driver: job,
        })
    }
}

/// Runs `connection` until the peer's SETTINGS are in force: a peer sends
/// them first (RFC 9113, 3.4), so once it answered a PING they are, and
/// the connection's stream count is the peer's own from the first stream
/// on (one that allows none opens none).
///
/// # Cancel safety
///
/// Dropping the future drops the connection, and its socket.
///
/// # Errors
///
/// `Protocol` when the connection fails or ends before the answer.
async fn peer_settings(mut connection: Driver) -> Result<Driver, DialError> {
    let failed = |e: String| DialError::new(DialErrorKind::Protocol, e);
    let Some(mut ping_pong) = connection.ping_pong() else {
        return Ok(connection);
    };
    tokio::select! {
        pong = ping_pong.ping(h2::Ping::opaque()) => {
            pong.map_err(|e| failed(e.to_string()))?;
        }
        ended = &mut connection => {
            let why = ended.err().map_or("the peer closed the connection".to_owned(), |e| e.to_string());
            return Err(failed(why));
        }
    }
    Ok(connection)
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
