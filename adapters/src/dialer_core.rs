//! [`DialerCore`]: what every dialer of the adapters shares — the pools
//! that run a connection's driver (or a client's tasks), the count of dials
//! started, and the start of that driver before anything is dialed. Each
//! dialer keeps only its protocol's part: what it connects to and how it
//! handshakes.
//!
//! Invariants:
//! - A dial counts itself before anything else, so a dial that fails at
//!   once is counted too; clones of a core (a dial runs on a clone, in its
//!   own task) share one count.
//! - The driver is started before any socket is opened. It takes no
//!   provider worker slot: it holds its connection's charges (decision
//!   record 0063). No room for it now is our own limit
//!   ([`DialErrorKind::Saturated`]), so the client is not put into backoff
//!   as after a failed dial.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use provider_pools_actors::{DialError, DialErrorKind, DialTarget, JobHandle, ProviderPools};

/// The pools and dial count one dialer (and every dialer sharing its
/// count) works with.
#[derive(Clone)]
pub(crate) struct DialerCore {
    pools: ProviderPools,
    /// Shared by every clone.
    dials: Arc<AtomicU64>,
}

impl DialerCore {
    /// A core whose drivers run on `pools`, with no dial counted yet.
    pub(crate) fn new(pools: ProviderPools) -> Self {
        Self {
            pools,
            dials: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Counts one dial started.
    pub(crate) fn count_dial(&self) {
        self.dials.fetch_add(1, Ordering::Relaxed);
    }

    /// Dials started so far, by this core and every clone.
    pub(crate) fn dials(&self) -> u64 {
        self.dials.load(Ordering::Relaxed)
    }

    /// Starts the driver of the connection `target`'s dial is opening
    /// (for `what`: a connection's driver, a client's tasks): a job of the
    /// pools' driver class, which holds the connection's charges and no
    /// provider worker slot.
    ///
    /// # Cancel safety
    ///
    /// As [`ProviderPools::spawn_driver`]: a driver once accepted runs to
    /// completion. Each dialer's driver waits on something its dial holds
    /// (the driver's hand-over, the client's callbacks), so a dropped dial
    /// ends it at once.
    ///
    /// # Errors
    ///
    /// As [`ProviderPools::spawn_driver`]: [`DialErrorKind::Saturated`]
    /// when the pools have no room for it now (nothing was dialed, so no
    /// backoff), [`DialErrorKind::Other`] otherwise; the message names
    /// `what`.
    pub(crate) async fn start_driver<F, Fut>(
        &self,
        target: &DialTarget<'_>,
        what: &str,
        make: F,
    ) -> Result<JobHandle<()>, DialError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.pools
            .spawn_driver(target, make)
            .await
            .map_err(|e| DialError::new(e.kind, format!("{what}: {}", e.message)))
    }
}

impl fmt::Debug for DialerCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DialerCore")
            .field("dials", &self.dials())
            .finish_non_exhaustive()
    }
}

/// The dial error for a target that is no valid address of the protocol:
/// [`DialErrorKind::Other`] with the parser's message.
pub(crate) fn unusable_target(e: impl fmt::Display) -> DialError {
    DialError::new(DialErrorKind::Other, e.to_string())
}
