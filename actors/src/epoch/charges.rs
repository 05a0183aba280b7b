//! [`ConnCharges`]: what one connection costs for its whole life, idle or
//! active — one of the node's `connections` and one of its client's.
//!
//! The charges are taken before the dial that makes the connection starts
//! (the epoch actor reserves them for a dial permit), follow the connection
//! into the idle stash and back out, and are shared with the connection's
//! driver, when it has one.
//!
//! Invariants:
//! - The node's and the client's charge return exactly once, after every
//!   holder (the connection, its driver) has let go: a connection is
//!   destroyed before its charges are returned.
//! - Once both are returned, the client's [`WaitNotice`] is told, so a
//!   caller waiting for room on the client hears of it.

use std::sync::Arc;

use crate::budget::Charge;
use crate::epoch::notice::WaitNotice;

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

#[cfg(all(test, loom))]
mod loom_model;
