//! [`RequestHold`]: what a connection keeps of the request it serves.
//!
//! A connection checked out for a request, a dial made for one, and each
//! stream on a shared connection keep that request's holdings (its running
//! capacity, client lease and activation) alive until they are dropped, so
//! no holding is released while a resource it pays for still exists. The
//! holdings are opaque here: admission builds on the epoch and its
//! connections, not the other way round.

use std::fmt;
use std::sync::Arc;

/// A running request's holdings, kept alive and dropped as one.
pub(crate) struct RequestHold {
    _holdings: Arc<dyn Send + Sync>,
}

impl RequestHold {
    /// Holds `holdings` (a running request's shared state) until dropped.
    pub(crate) fn new(holdings: Arc<dyn Send + Sync>) -> Self {
        Self {
            _holdings: holdings,
        }
    }
}

impl fmt::Debug for RequestHold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RequestHold")
    }
}
