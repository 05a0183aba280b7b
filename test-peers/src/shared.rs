//! [`SharedPeer`]: one peer shared by the tests of a binary that run at
//! the same time, stopped once the last of them lets go.

use std::sync::{Arc, Mutex, Weak};

use crate::peer::Peer;

/// A peer started on first use and shared while anyone holds it: tests
/// that overlap share one process (each keeps its own key space), and when
/// the last holder drops its handle the peer is killed, so no process
/// outlives the test binary. Declare it as a `static`:
///
/// ```no_run
/// use provider_pools_test_peers::{Etcd, SharedPeer};
///
/// static ETCD: SharedPeer = SharedPeer::new(Etcd::start);
///
/// let etcd = ETCD.get();
/// println!("etcd at {}", etcd.addr());
/// ```
#[derive(Debug)]
pub struct SharedPeer {
    start: fn() -> Peer,
    current: Mutex<Weak<Peer>>,
}

impl SharedPeer {
    /// A peer that `start` starts when needed.
    pub const fn new(start: fn() -> Peer) -> Self {
        Self {
            start,
            current: Mutex::new(Weak::new()),
        }
    }

    /// The running peer, started now if nobody holds one.
    ///
    /// # Panics
    ///
    /// As `start` does (a missing binary, a peer that never answers).
    pub fn get(&self) -> Arc<Peer> {
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(peer) = current.upgrade() {
            return peer;
        }
        let peer = Arc::new((self.start)());
        *current = Arc::downgrade(&peer);
        peer
    }
}
