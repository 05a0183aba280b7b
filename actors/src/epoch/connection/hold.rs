//! [`RequestHold`]: what a connection keeps of the request it serves.
//!
//! A connection checked out for a request, a dial made for one, and each
//! stream on a shared connection keep that request's holdings (its running
//! capacity, client lease and activation) alive until they are dropped, so
//! no holding is released while a resource it pays for still exists. The
//! holdings are opaque here but for the epoch their client lease is on
//! ([`Holdings`]): admission builds on the epoch and its connections, not
//! the other way round.

use std::fmt;
use std::sync::Arc;

use crate::epoch::published::PublishedEpoch;

/// What a connection sees of the holdings it keeps: the epoch the
/// request's client lease is on, which the holdings keep alive.
pub(crate) trait Holdings: Send + Sync {
    /// The epoch of the request's client lease.
    fn epoch(&self) -> &Arc<PublishedEpoch>;
}

/// A running request's holdings, kept alive and dropped as one.
pub(crate) struct RequestHold {
    holdings: Arc<dyn Holdings>,
}

impl RequestHold {
    /// Holds `holdings` (a running request's shared state) until dropped.
    pub(crate) fn new(holdings: Arc<dyn Holdings>) -> Self {
        Self { holdings }
    }

    /// The epoch the request's client lease is on, alive while this hold is.
    pub(crate) fn epoch(&self) -> &Arc<PublishedEpoch> {
        self.holdings.epoch()
    }
}

impl fmt::Debug for RequestHold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RequestHold")
    }
}
