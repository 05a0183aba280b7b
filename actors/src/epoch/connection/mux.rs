//! Multiplexed connections: one connection carrying several running
//! requests at once, each on a stream of its own (HTTP/2).
//!
//! An adapter whose connection type implements [`Multiplexed`] calls
//! [`ProviderPools::reserve_stream`](crate::ProviderPools::reserve_stream)
//! instead of `reserve_connection`. The connections a client's tenant is
//! streaming on sit in the client's table (`MuxTable`, in
//! `epoch/mux_table.rs`, kept by the published epoch); one with room
//! (fewer streams than [`Multiplexed::max_streams`], and still opening
//! streams) gives the request a [`PooledStream`], else a connection is
//! reserved as for any request (from the idle stash or a dial, with every
//! charge and the share check) and joins the table.
//!
//! Invariants:
//! - A connection in the table is one tenant's: tenants never share one,
//!   so a connection-level failure one tenant's request causes (a
//!   protocol error, a GOAWAY) reaches no other tenant's streams. Its
//!   charges are those of any checked-out connection: the node's and the
//!   client's `connections`, its tenant's `connections_per_tenant`.
//! - A connection leaves the table with its last stream — parked when it
//!   is still reusable, destroyed otherwise — outside the table's lock.
//! - Each stream is a running request: the request's running capacity,
//!   lease and activation are held by the [`PooledStream`] (dropped after
//!   the connection is parked or destroyed), not by the connection, so a
//!   connection outliving its first request keeps none of that request's.
//! - The count of streams per connection never exceeds the
//!   `max_streams` the connection reported when each was opened.

use std::fmt;
use std::sync::Arc;

use crate::epoch::connection::PooledConnection;
use crate::epoch::connection::RequestHold;
use crate::epoch::mux_table::Closed;
use crate::epoch::published::PublishedEpoch;
use crate::epoch::watch::CloseWatch;

/// A connection that carries several requests at once, each on a stream of
/// its own — HTTP/2's streams over one TCP connection.
///
/// The pools count streams themselves: a connection carries at most
/// [`Self::max_streams`] running requests, and one that stops opening
/// streams ([`Self::open_stream`] answers `None`: it was closed, or the
/// peer sent GOAWAY) gets no new ones while those it carries finish.
pub trait Multiplexed: Send + 'static {
    /// What one request sends on (for hyper's HTTP/2, a clone of the
    /// connection's request sender). Made under the client's table lock:
    /// keep it cheap.
    type Stream: Send + 'static;

    /// The most streams it may carry at once now: the peer's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`, capped by configuration. At
    /// least 1 for a connection that opens streams at all.
    fn max_streams(&self) -> u32;

    /// A new stream, or `None` once it takes no new streams.
    fn open_stream(&self) -> Option<Self::Stream>;

    /// Whether, with no stream left, it may be parked for reuse: still
    /// open, and not going away.
    fn is_reusable(&self) -> bool;

    /// The closure notice it is parked with (see
    /// [`PooledConnection::park_watched`]); none by default.
    fn close_watch(&self) -> Option<CloseWatch> {
        None
    }
}

/// One running request's stream on a shared connection: what it sends on
/// ([`Self::stream`]), and its place on the connection until dropped.
///
/// Dropping it ends the stream's count; the connection's last stream
/// parks the connection in its client's idle pool when it is still
/// reusable ([`Multiplexed::is_reusable`]) and destroys it otherwise,
/// then the request's own holdings go.
#[must_use = "dropping a pooled stream ends the stream at once"]
pub struct PooledStream<T: Multiplexed> {
    stream: Option<T::Stream>,
    epoch: Arc<PublishedEpoch>,
    client: usize,
    id: u64,
    reused: bool,
    _running: RequestHold,
}

impl<T: Multiplexed> PooledStream<T> {
    pub(crate) fn new(
        stream: T::Stream,
        (epoch, client, id): (Arc<PublishedEpoch>, usize, u64),
        reused: bool,
        running: RequestHold,
    ) -> Self {
        Self {
            stream: Some(stream),
            epoch,
            client,
            id,
            reused,
            _running: running,
        }
    }

    /// What the request sends on.
    pub fn stream(&mut self) -> &mut T::Stream {
        match &mut self.stream {
            Some(stream) => stream,
            // Taken only by `drop`.
            None => unreachable_stream(),
        }
    }

    /// True when the connection already carried a stream, or came from
    /// the idle pool: a failure before anything was sent may be its
    /// staleness, not the origin's answer.
    pub fn is_reused(&self) -> bool {
        self.reused
    }
}

#[cold]
fn unreachable_stream() -> ! {
    unreachable!("a pooled stream's stream is taken only by drop")
}

impl<T: Multiplexed> Drop for PooledStream<T> {
    fn drop(&mut self) {
        // The stream first: the connection's driver sees it end.
        drop(self.stream.take());
        let Some(table) = self.epoch.mux(self.client) else {
            return;
        };
        if let Closed::Last(conn) = table.close::<PooledConnection<T>>(self.id) {
            if conn.get().is_reusable() {
                match conn.get().close_watch() {
                    Some(watch) => conn.park_watched(&watch),
                    None => conn.park(),
                }
            } else {
                drop(conn);
            }
        }
        // Then the request's running capacity, lease and activation.
    }
}

impl<T: Multiplexed> fmt::Debug for PooledStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledStream")
            .field("client", &self.client)
            .field("connection", &self.id)
            .field("reused", &self.reused)
            .finish_non_exhaustive()
    }
}
