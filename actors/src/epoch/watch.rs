//! Closure notices: how the owner of a connection's socket (its driver)
//! tells the pools that the peer closed it, so a parked connection leaves
//! its idle stash, and its charges, at once instead of at checkout or
//! expiry.
//!
//! [`close_watch`] makes a pair: the [`CloseWatch`] goes with the
//! connection (the adapter passes it to [`PooledConnection::park_watched`]),
//! the [`CloseNotifier`] with whatever owns the socket. Dropping the
//! notifier (or calling [`CloseNotifier::closed`]) marks the connection
//! closed; if it is parked at that moment, the entry is taken out of its
//! stash and destroyed — the resource first, then its charges.
//!
//! Invariants:
//! - A checkout never returns an entry whose notifier has fired.
//! - A parked entry whose notifier fires is destroyed by the notifier's
//!   caller, outside the stash's lock; a park that races the notice
//!   evicts after its push (closed is stored before the home is read, the
//!   home before the push, and the park reads closed after its push, so
//!   one of the two sees the entry).
//! - The watch holds its epoch weakly: a driver never keeps an epoch alive.
//!
//! [`PooledConnection::park_watched`]: crate::PooledConnection::park_watched

use std::fmt;
use std::sync::{Arc, PoisonError, Weak};

use crate::sync::{AtomicBool, Mutex, MutexGuard, Ordering};

/// What keeps parked connections: an epoch, whose client's stash destroys
/// its entries whose notice fired (a stand-in in the model checks).
pub(crate) trait Stashes: Send + Sync {
    /// Destroys client `client`'s parked entries whose notice fired.
    fn evict_closed(&self, client: usize);
}

/// Where a parked connection sits: its epoch (weakly) and its client.
type Home = Option<(Weak<dyn Stashes>, usize)>;

#[derive(Default)]
struct Shared {
    closed: AtomicBool,
    home: Mutex<Home>,
}

/// The connection's side of a closure notice: parked with the connection
/// ([`PooledConnection::park_watched`](crate::PooledConnection::park_watched)).
#[derive(Clone)]
pub struct CloseWatch {
    shared: Arc<Shared>,
}

/// The socket owner's side of a closure notice: fires when dropped or
/// when [`CloseNotifier::closed`] is called, whichever comes first.
#[must_use = "dropping a notifier marks its connection closed"]
pub struct CloseNotifier {
    shared: Arc<Shared>,
}

/// A watch and its notifier for one connection.
pub fn close_watch() -> (CloseWatch, CloseNotifier) {
    let shared = Arc::new(Shared::default());
    (
        CloseWatch {
            shared: Arc::clone(&shared),
        },
        CloseNotifier { shared },
    )
}

impl CloseWatch {
    /// True once the notifier fired: the connection can carry nothing more.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    fn home(&self) -> MutexGuard<'_, Home> {
        self.shared
            .home
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records where the connection is about to be parked.
    pub(crate) fn set_home<S: Stashes + 'static>(&self, epoch: &Arc<S>, client: usize) {
        let epoch: Weak<S> = Arc::downgrade(epoch);
        let epoch: Weak<dyn Stashes> = epoch;
        *self.home() = Some((epoch, client));
    }

    /// The connection left its stash (checked out or destroyed).
    pub(crate) fn clear_home(&self) {
        *self.home() = None;
    }
}

impl CloseNotifier {
    /// Marks the connection closed now; a parked one is destroyed here.
    pub fn closed(self) {
        drop(self);
    }
}

impl Drop for CloseNotifier {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        let home = self
            .shared
            .home
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((epoch, client)) = home {
            if let Some(epoch) = epoch.upgrade() {
                epoch.evict_closed(client);
            }
        }
    }
}

impl fmt::Debug for CloseWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloseWatch")
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl fmt::Debug for CloseNotifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloseNotifier")
            .field("closed", &self.shared.closed.load(Ordering::SeqCst))
            .finish()
    }
}
