//! How long one HTTP/1.1 connection lives and idles: its age and request
//! count against the provider's [`ConnectionSettings`], the origin's
//! `Keep-Alive: timeout=N` hint, and the bytes read from its socket (so a
//! failed exchange can tell whether any byte of a response arrived).
//!
//! Invariants:
//! - A connection is parked only while younger than `max_connection_age_ms`
//!   and under `max_connection_requests`; its idle deadline is the nearest
//!   of `idle_timeout_ms`, the origin's hint less [`HINT_MARGIN`], and the
//!   end of its age. Its driver closes it at that deadline (the closure
//!   notice then takes it out of the idle stash), and checkout refuses it
//!   from [`TAKE_MARGIN`] before, so a connection is never handed a
//!   request just as it retires.
//! - The read count only grows; it is the bytes the connection's socket
//!   delivered, TLS records included.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use crate::http_origin::settings::ConnectionSettings;

/// How much earlier than an origin's `Keep-Alive: timeout=N` a parked
/// connection retires: the origin's timer starts when it sent the last
/// byte, ours when that byte was read, and a request must reach the
/// origin before its timer fires.
pub(crate) const HINT_MARGIN: Duration = Duration::from_secs(1);

/// How long before its idle deadline a parked connection is no longer
/// taken: its driver may close it at any moment from then on.
pub(crate) const TAKE_MARGIN: Duration = Duration::from_millis(100);

/// The life of one HTTP/1.1 connection so far.
#[derive(Debug)]
pub(crate) struct Lifetime {
    settings: ConnectionSettings,
    born: Instant,
    /// Responses whose head arrived on it.
    answered: u32,
    /// The origin's idle timeout from its last response, if it gave one.
    hint: Option<Duration>,
    /// When the parked connection retires; `None` while in use.
    idle_until: Option<Instant>,
    reads: ReadCount,
}

impl Lifetime {
    /// A connection dialed now under `settings`, its socket's reads
    /// counted by `reads`.
    pub(crate) fn new(settings: ConnectionSettings, reads: ReadCount) -> Self {
        Self {
            settings,
            born: Instant::now(),
            answered: 0,
            hint: None,
            idle_until: None,
            reads,
        }
    }

    /// The settings the connection was dialed with.
    pub(crate) fn settings(&self) -> &ConnectionSettings {
        &self.settings
    }

    /// Bytes its socket delivered so far.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.reads.get()
    }

    /// The connection was taken for a request: it is no longer idle.
    pub(crate) fn taken(&mut self) {
        self.idle_until = None;
    }

    /// A response head arrived: one more request carried, and the
    /// origin's keep-alive hint, if any, kept for the next park.
    pub(crate) fn answered(&mut self, headers: &HeaderMap) {
        self.answered = self.answered.saturating_add(1);
        self.hint = keep_alive_timeout(headers);
    }

    /// Parks the connection at `now`: its idle deadline, or `None` when it
    /// has no life left to idle (too old, enough requests carried, or an
    /// origin hint too short to reuse it in).
    pub(crate) fn park(&mut self, now: Instant) -> Option<Instant> {
        if self.answered >= self.settings.max_requests {
            return None;
        }
        let end = self.born + self.settings.max_age;
        let idle = match self.hint {
            Some(hint) => self
                .settings
                .idle_timeout
                .min(hint.saturating_sub(HINT_MARGIN)),
            None => self.settings.idle_timeout,
        };
        let until = (now + idle).min(end);
        if until <= now + TAKE_MARGIN {
            return None;
        }
        self.idle_until = Some(until);
        Some(until)
    }

    /// True when a parked connection should not be taken at `now`: its
    /// idle deadline is less than [`TAKE_MARGIN`] away, or it outlived
    /// its age.
    pub(crate) fn is_stale(&self, now: Instant) -> bool {
        let retiring = self
            .idle_until
            .is_some_and(|until| now + TAKE_MARGIN >= until);
        retiring || now >= self.born + self.settings.max_age
    }
}

/// The `timeout` parameter of a `Keep-Alive` header (`timeout=5,
/// max=100`), in whole seconds; `None` when absent or unreadable.
pub(crate) fn keep_alive_timeout(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get_all("keep-alive")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|param| param.split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("timeout"))
        .and_then(|(_, seconds)| seconds.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// The bytes a connection's socket delivered, shared between the socket
/// (which counts) and the connection (which reads the count).
#[derive(Debug, Clone, Default)]
pub(crate) struct ReadCount(Arc<AtomicU64>);

impl ReadCount {
    fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    fn add(&self, n: usize) {
        self.0.fetch_add(n as u64, Ordering::AcqRel);
    }
}

/// A byte stream whose reads are counted in a [`ReadCount`].
pub(crate) struct Counted<S> {
    inner: S,
    reads: ReadCount,
}

impl<S> Counted<S> {
    pub(crate) fn new(inner: S, reads: ReadCount) -> Self {
        Self { inner, reads }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len().saturating_sub(before);
        if read > 0 {
            self.reads.add(read);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(keep_alive: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("keep-alive", keep_alive.parse().expect("a header value"));
        headers
    }

    #[test]
    fn the_keep_alive_timeout_is_read_among_other_parameters() {
        assert_eq!(
            keep_alive_timeout(&headers("timeout=5, max=100")),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            keep_alive_timeout(&headers("max=3,Timeout = 7")),
            Some(Duration::from_secs(7))
        );
        assert_eq!(keep_alive_timeout(&headers("max=3")), None);
        assert_eq!(keep_alive_timeout(&headers("timeout=soon")), None);
        assert_eq!(keep_alive_timeout(&HeaderMap::new()), None);
    }

    fn lifetime(settings: ConnectionSettings) -> Lifetime {
        Lifetime::new(settings, ReadCount::default())
    }

    #[tokio::test(start_paused = true)]
    async fn a_parked_connection_retires_at_its_idle_timeout() {
        let mut life = lifetime(ConnectionSettings::DEFAULT);
        life.answered(&HeaderMap::new());
        let now = Instant::now();
        assert_eq!(life.park(now), Some(now + Duration::from_secs(4)));
        assert!(!life.is_stale(now + Duration::from_millis(3_899)));
        assert!(life.is_stale(now + Duration::from_millis(3_900)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_origins_shorter_keep_alive_hint_retires_it_a_margin_earlier() {
        let mut life = lifetime(ConnectionSettings::DEFAULT);
        life.answered(&headers("timeout=2"));
        let now = Instant::now();
        assert_eq!(life.park(now), Some(now + Duration::from_secs(1)));
        // A longer hint does not lengthen the setting.
        life.answered(&headers("timeout=60"));
        assert_eq!(life.park(now), Some(now + Duration::from_secs(4)));
        // A hint within the margins leaves nothing to idle.
        life.answered(&headers("timeout=1"));
        assert_eq!(life.park(now), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_at_its_request_count_is_not_parked() {
        let mut life = lifetime(ConnectionSettings {
            max_requests: 2,
            ..ConnectionSettings::DEFAULT
        });
        life.answered(&HeaderMap::new());
        assert!(life.park(Instant::now()).is_some());
        life.taken();
        life.answered(&HeaderMap::new());
        assert_eq!(life.park(Instant::now()), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_idles_no_later_than_its_age_and_is_stale_past_it() {
        let mut life = lifetime(ConnectionSettings {
            max_age: Duration::from_secs(10),
            ..ConnectionSettings::DEFAULT
        });
        let born = Instant::now();
        tokio::time::advance(Duration::from_secs(8)).await;
        life.answered(&HeaderMap::new());
        assert_eq!(
            life.park(Instant::now()),
            Some(born + Duration::from_secs(10))
        );
        life.taken();
        assert!(!life.is_stale(born + Duration::from_millis(9_999)));
        assert!(life.is_stale(born + Duration::from_secs(10)));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(life.park(Instant::now()), None);
    }
}
