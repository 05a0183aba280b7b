//! [`PooledConnection`]: one real connection, its charges and its owner.
//!
//! Field order is drop order: the resource first, then the charges it held
//! (the node's and the client's, then its tenant's share of the client),
//! then the gauge, which counts the connection in before it lets the
//! activation go. Nothing is refunded before the resource is gone. A
//! connection reaches its epoch through the activation it was checked out
//! for (its client lease is on that epoch), and through a reference of its
//! own only once it carries streams. An idle connection belongs to no
//! tenant: parking returns the tenant's share, a checkout takes it again.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

use tokio::time::Instant;

use crate::budget::{Budget, Charge};
use crate::epoch::connection::watch::CloseWatch;
use crate::epoch::connection::RequestHold;
use crate::epoch::notice::WaitNotice;
use crate::epoch::published::PublishedEpoch;

/// The charges one connection holds for its whole life, idle or active:
/// one of the node's `connections` and one of its client's. Once both are
/// returned, the client's waiters hear of the room.
///
/// Shared with the connection's driver, when it has one
/// ([`ConnCharges::for_driver`]): they return once the connection is
/// destroyed *and* its driver joined, whichever is last.
pub(crate) struct ConnCharges(crate::sync::Arc<Charges>);

struct Charges {
    _node: Charge,
    _client: Charge,
    _freed: Freed,
}

impl ConnCharges {
    pub(crate) fn new(node: Charge, client: Charge, notice: Arc<WaitNotice>) -> Self {
        Self(crate::sync::Arc::new(Charges {
            _node: node,
            _client: client,
            _freed: Freed(notice),
        }))
    }

    /// The same charges, for the connection's driver to hold until it is
    /// joined.
    pub(crate) fn for_driver(&self) -> Box<dyn Send> {
        Box::new(Self(crate::sync::Arc::clone(&self.0)))
    }
}

/// Tells the client's waiters, when dropped after the charges, that a
/// connection of the client is gone.
struct Freed(Arc<WaitNotice>);

impl Drop for Freed {
    fn drop(&mut self) {
        self.0.notify();
    }
}

/// Counts a connection as checked out (active, or retired once its epoch
/// retires) while alive, and keeps what reaches its epoch: counted in
/// first, then the request (or reference) let go.
pub(crate) struct ActiveGauge {
    /// Always present until [`ActiveGauge::check_in`] takes it.
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

impl ActiveGauge {
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

    /// Counts the connection in again, as dropping the gauge does, and
    /// hands over what reaches the epoch.
    fn check_in(mut self) -> Option<Held> {
        let held = self.held.take()?;
        held.epoch().conn_tally().check_in();
        Some(held)
    }
}

impl Drop for ActiveGauge {
    fn drop(&mut self) {
        if let Some(held) = &self.held {
            held.epoch().conn_tally().check_in();
        }
    }
}

/// A parked connection, kept by its epoch in the client's idle stash.
pub(crate) struct IdleConn {
    pub(crate) conn: Box<dyn Any + Send>,
    pub(crate) charges: ConnCharges,
    /// One of the node's `idle_connections`, taken when the stash accepts
    /// the connection.
    pub(crate) idle: Option<Charge>,
    pub(crate) type_id: TypeId,
    pub(crate) since: Instant,
    /// How its socket's owner says the peer closed it, when the adapter
    /// parked it with one.
    pub(crate) watch: Option<CloseWatch>,
}

impl IdleConn {
    /// A connection `conn` charged to `node` and `client` (and to `idle`
    /// when given), parked now, with no closure notice: for the stash's
    /// tests and models.
    #[cfg(test)]
    pub(crate) fn charged<T: Any + Send>(
        conn: T,
        node: &Arc<crate::budget::Budget>,
        client: &Arc<crate::budget::Budget>,
        idle: Option<&Arc<crate::budget::Budget>>,
    ) -> Self {
        Self {
            conn: Box::new(conn),
            charges: ConnCharges::new(
                node.try_reserve(1).expect("room for the node's charge"),
                client.try_reserve(1).expect("room for the client's charge"),
                Arc::new(WaitNotice::new(0, None)),
            ),
            idle: idle.map(|idle| idle.try_reserve(1).expect("room for the idle charge")),
            type_id: TypeId::of::<T>(),
            since: Instant::now(),
            watch: None,
        }
    }

    /// True when its closure notice has fired.
    pub(crate) fn is_closed(&self) -> bool {
        self.watch.as_ref().is_some_and(CloseWatch::is_closed)
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
    gauge: ActiveGauge,
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
            gauge: ActiveGauge::new(owner),
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
        self.gauge = self.gauge.into_shared();
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
    /// cleanup job: the resource, and its charges, gauge and activation in
    /// one owned value to drop only after the resource is destroyed.
    pub(crate) fn into_cleanup(self) -> (T, Box<dyn Send>) {
        let Self {
            conn,
            charges,
            tenant,
            gauge,
            idle: _,
            client: _,
            reused: _,
        } = self;
        // Tuple fields drop in order: charges, the tenant's share, then the
        // gauge, which lets the owner go after it counts the connection in.
        (*conn, Box::new((charges, tenant, gauge)))
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
            gauge,
            idle: kept,
            client,
            reused: _,
        } = self;
        let held = gauge.check_in();
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
            // Never: a gauge holds its epoch until it is checked in.
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

#[cfg(all(test, loom))]
mod loom_model;
