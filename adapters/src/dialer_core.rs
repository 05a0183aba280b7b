//! [`DialerCore`]: what every dialer of the adapters shares — the pools
//! whose provider jobs own a connection's driver (or a client's tasks), the
//! count of dials started, and the reservation of that job before anything
//! is dialed. Each dialer keeps only its protocol's part: what it connects
//! to and how it handshakes.
//!
//! Invariants:
//! - A dial counts itself before anything else, so a dial that fails at
//!   once is counted too; clones of a core (a dial runs on a clone, in its
//!   own task) share one count.
//! - The job is reserved before any socket is opened; no free worker slot
//!   is our own limit ([`DialErrorKind::Saturated`]), so the client is not
//!   put into backoff as after a failed dial.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use provider_pools_actors::{DialError, DialErrorKind, JobError, JobHandle, ProviderPools};

/// The pools and dial count one dialer (and every dialer sharing its
/// count) works with.
#[derive(Clone)]
pub(crate) struct DialerCore {
    pools: ProviderPools,
    /// Shared by every clone.
    dials: Arc<AtomicU64>,
}

impl DialerCore {
    /// A core whose jobs run on `pools`, with no dial counted yet.
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

    /// Reserves a provider job running `run` for `what` (a connection's
    /// driver, a client's tasks).
    ///
    /// # Cancel safety
    ///
    /// As [`ProviderPools::spawn`]: a job once accepted runs to completion.
    /// Each dialer's job waits on something its dial holds (the driver's
    /// hand-over, the client's callbacks), so a dropped dial ends it at once.
    ///
    /// # Errors
    ///
    /// [`DialErrorKind::Saturated`] when no worker slot (or no room in the
    /// worker pool's mailbox) is free, [`DialErrorKind::Other`] when the
    /// pools take no job; the message names `what`.
    pub(crate) async fn reserve_job<F, Fut>(
        &self,
        what: &str,
        run: F,
    ) -> Result<JobHandle<()>, DialError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.pools.spawn(run).await.map_err(|e| {
            let kind = match e {
                JobError::Capacity { .. } | JobError::Busy => DialErrorKind::Saturated,
                _ => DialErrorKind::Other,
            };
            DialError::new(kind, format!("no provider job for {what}: {e}"))
        })
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
