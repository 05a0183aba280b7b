//! [`PooledConnection`]: one real connection, its charges and its owner.
//!
//! Field order is drop order: the resource first, then the charges it held
//! (the node's and the client's, then its tenant's share of the client),
//! then its tally mark, which counts the connection in before it lets the
//! activation go. Nothing is refunded before the resource is gone. A
//! connection reaches its epoch through the activation it was checked out
//! for (its client lease is on that epoch), and through a reference of its
//! own only once it carries streams. An idle connection belongs to no
//! tenant: parking returns the tenant's share, a checkout takes it again.

use std::any::TypeId;
use std::fmt;
use std::sync::Arc;

use tokio::time::Instant;

use crate::budget::{Budget, Charge};
use crate::epoch::charges::ConnCharges;
use crate::epoch::connection::RequestHold;
use crate::epoch::idle::IdleConn;
use crate::epoch::published::PublishedEpoch;
use crate::epoch::watch::CloseWatch;

/// Counts a connection as checked out (active, or retired once its epoch
/// retires) while alive, and keeps what reaches its epoch: counted in
/// first, then the request (or reference) let go.
pub(crate) struct TallyMark {
    /// Always present until [`TallyMark::check_in`] takes it.
    held: Option<Held>,
}

/// How a checked-out connection reaches its epoch.
enum Held {
    /// Through the request it was checked out for, whose client lease is
    /// on the epoch: no reference count of the epoch is taken.
    Request(RequestHold),
    /// Its own reference, once it carries streams of several requests.
    Epoch(Arc<PublishedEpoch>),
}

impl Held {
    fn epoch(&self) -> &Arc<PublishedEpoch> {
        match self {
            Self::Request(owner) => owner.epoch(),
            Self::Epoch(epoch) => epoch,
        }
    }
}

impl TallyMark {
    /// Counts out a connection of `owner`'s epoch, checked out for it.
    fn new(owner: RequestHold) -> Self {
        owner.epoch().conn_tally().check_out();
        Self {
            held: Some(Held::Request(owner)),
        }
    }

    /// Lets go of the request, keeping a reference to the epoch instead.
    fn into_shared(mut self) -> Self {
        if let Some(Held::Request(owner)) = &self.held {
            let epoch = Arc::clone(owner.epoch());
            // The request goes only now: the epoch is referenced already.
            self.held = Some(Held::Epoch(epoch));
        }
        self
    }

    /// Counts the connection in again, as dropping the mark does, and
    /// hands over what reaches the epoch.
    fn check_in(mut self) -> Option<Held> {
        let held = self.held.take()?;
        held.epoch().conn_tally().check_in();
        Some(held)
    }
}

impl Drop for TallyMark {
    fn drop(&mut self) {
        if let Some(held) = &self.held {
            held.epoch().conn_tally().check_in();
        }
    }
}

/// A connection checked out for one request.
///
/// `T` owns the real connection. Dropping this destroys `T`, then returns
/// its charges; only [`PooledConnection::park`] keeps it for reuse.
#[must_use = "dropping a pooled connection destroys it"]
pub struct PooledConnection<T: Send + 'static> {
    /// Boxed once, when dialed: parking moves the box into the idle stash
    /// and a checkout moves it back, with no allocation.
    conn: Box<T>,
    charges: ConnCharges,
    /// One of the request's tenant's `connections_per_tenant` on this client.
    tenant: Charge,
    /// The active count, and the request it was checked out for (none
    /// once it carries streams: each pooled stream holds its own request).
    mark: TallyMark,
    /// The node's `idle_connections` budget its idle charge was on, when
    /// it was checked out of the idle stash: parking charges it again
    /// through this reference instead of taking a new one. Holds no amount.
    idle: Option<Arc<Budget>>,
    client: usize,
    reused: bool,
}

impl<T: Send + 'static> PooledConnection<T> {
    /// A connection of client `client` of the epoch `owner`'s client
    /// lease is on, checked out for `owner`.
    pub(crate) fn new(
        conn: Box<T>,
        charges: ConnCharges,
        tenant: Charge,
        client: usize,
        reused: bool,
        owner: RequestHold,
    ) -> Self {
        Self {
            conn,
            charges,
            tenant,
            mark: TallyMark::new(owner),
            idle: None,
            client,
            reused,
        }
    }

    /// Keeps `idle`, the budget the connection's idle charge was returned
    /// to at its checkout, for its next park (see
    /// [`Charge::into_budget`]).
    pub(crate) fn keeping_idle_budget(mut self, idle: Option<Arc<Budget>>) -> Self {
        self.idle = idle;
        self
    }

    /// Lets go of the request it was checked out for, to carry streams of
    /// several: each [`PooledStream`](crate::epoch::connection::PooledStream) holds
    /// its own request, and the connection leaves the table of streams
    /// before the last of them goes.
    pub(crate) fn into_shared(mut self) -> Self {
        self.mark = self.mark.into_shared();
        self
    }

    /// The connection.
    pub fn get(&self) -> &T {
        &self.conn
    }

    /// The connection, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.conn
    }

    /// True when this connection came from the idle pool.
    pub fn is_reused(&self) -> bool {
        self.reused
    }

    /// Splits the connection from everything that pays for it, for a
    /// cleanup job: the resource, and its charges, mark and activation in
    /// one owned value to drop only after the resource is destroyed.
    pub(crate) fn into_cleanup(self) -> (T, Box<dyn Send>) {
        let Self {
            conn,
            charges,
            tenant,
            mark,
            idle: _,
            client: _,
            reused: _,
        } = self;
        // Tuple fields drop in order: charges, the tenant's share, then the
        // mark, which lets the owner go after it counts the connection in.
        (*conn, Box::new((charges, tenant, mark)))
    }

    /// Returns the connection to its client's idle pool.
    ///
    /// Call only after verifying the connection is reusable (for HTTP: the
    /// response was read completely and both sides allow keep-alive). The
    /// connection joins its epoch's idle stash at once, with no message hop,
    /// and keeps its node capacity while idle; then the activation is
    /// released. A retired epoch or a full idle pool destroy it instead.
    pub fn park(self) {
        self.park_entry(None);
    }

    /// [`park`](Self::park), with the connection's closure notice: when
    /// the [`CloseNotifier`](crate::CloseNotifier) paired with `watch`
    /// fires while the connection is parked (its driver saw the peer
    /// close the socket), the connection leaves the idle stash at once and
    /// is destroyed, then its charges are released; a checkout never
    /// returns it once the notice has fired.
    pub fn park_watched(self, watch: &CloseWatch) {
        self.park_entry(Some(watch.clone()));
    }

    fn park_entry(self, watch: Option<CloseWatch>) {
        let Self {
            conn,
            charges,
            tenant,
            mark,
            idle: kept,
            client,
            reused: _,
        } = self;
        let held = mark.check_in();
        let entry = IdleConn {
            type_id: TypeId::of::<T>(),
            conn,
            charges,
            idle: None,
            since: Instant::now(),
            watch,
        };
        // Destroyed there (the resource before its charges) if refused.
        match &held {
            Some(held) => held.epoch().park_keeping(client, entry, kept),
            // Never: a mark holds its epoch until it is checked in.
            None => drop(entry),
        }
        // Idle, it is no tenant's any more.
        drop(tenant);
        drop(held);
    }
}

impl<T: Send + 'static> fmt::Debug for PooledConnection<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledConnection")
            .field("client", &self.client)
            .field("reused", &self.reused)
            .finish_non_exhaustive()
    }
}
