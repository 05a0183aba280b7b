//! [`MemoryClient`]: the control plane of one process, held in memory.
//!
//! Invariants:
//! - At most 65,536 registrations, lease slots, posts and fenced records
//!   together and 16 MiB of estimated retained bytes by default;
//!   [`MemoryClient::with_limits`] only tightens them.
//! - A post goes with its registration: expiry, deregistration and
//!   replacement (`register` again) drop it, as etcd does. A fenced record
//!   is written only under a lease held now (on the client's clock) with
//!   the grant's holder and token, and kept after release and expiry.
//! - A refused change (a limit, an overflow, a conflict) leaves the store as
//!   it was.
//! - Calls never wait: each runs under a short lock held across no await.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::board::{Board, FencedRecord, Post};
use crate::client::{BoxFuture, CallResult, ControlPlane};
use crate::clock::{Clock, TokioClock};
use crate::error::ControlPlaneError;
use crate::lease::{LeaseGrant, LeaseKey, LeaseRequest, LeaseState};
use crate::name::{ServiceGroup, TopicName};
use crate::presence::{PresenceKey, Registration};
use crate::store::{StoreLimits, StoreState, StoreStats};

/// An in-memory control plane.
///
/// ```
/// use std::time::Duration;
/// use provider_pools_control_plane::{
///     ControlPlane, LeaseKey, LeaseName, LeaseRequest, MemoryClient, NodeId,
/// };
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let client = MemoryClient::new();
/// let key = LeaseKey::Global(LeaseName::new("scheduler")?);
/// let grant = client
///     .acquire(LeaseRequest::new(key, NodeId::new("node-a")?, Duration::from_secs(10))?)
///     .await?;
/// assert_eq!(grant.token.get(), 1);
/// # Ok::<(), provider_pools_control_plane::ControlPlaneError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct MemoryClient {
    state: Mutex<StoreState>,
    clock: Arc<dyn Clock>,
}

impl MemoryClient {
    /// A client with the default limits on tokio's clock.
    pub fn new() -> Self {
        Self::with_clock(StoreLimits::MEMORY, Arc::new(TokioClock::new()))
    }

    /// A client with tighter limits.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming the limit that is zero or above
    /// the default.
    pub fn with_limits(limits: StoreLimits) -> Result<Self, ControlPlaneError> {
        let limits = limits.within(StoreLimits::MEMORY)?;
        Ok(Self::with_clock(limits, Arc::new(TokioClock::new())))
    }

    /// A client reading time from `clock` (limits as checked by the caller
    /// through [`StoreLimits::within`]).
    pub fn with_clock(limits: StoreLimits, clock: Arc<dyn Clock>) -> Self {
        Self {
            state: Mutex::new(StoreState::new(limits)),
            clock,
        }
    }

    /// Current and peak estimated bytes, records and rejections.
    pub fn stats(&self) -> StoreStats {
        self.lock().stats()
    }

    fn lock(&self) -> MutexGuard<'_, StoreState> {
        // A panic under the lock cannot leave a half-made change: every
        // operation checks before it mutates.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `operation` when the future is first polled: a future dropped
    /// before that never touches the store.
    fn run<'a, T: Send + 'a>(
        &'a self,
        operation: impl FnOnce(&mut StoreState, u64) -> CallResult<T> + Send + 'a,
    ) -> BoxFuture<'a, CallResult<T>> {
        Box::pin(async move {
            let now_ms = self.clock.now_ms();
            operation(&mut self.lock(), now_ms)
        })
    }
}

impl Default for MemoryClient {
    fn default() -> Self {
        Self::new()
    }
}

impl ControlPlane for MemoryClient {
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>> {
        self.run(|state, now| state.register(registration, now))
    }

    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.run(move |state, now| state.heartbeat(&key, now))
    }

    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.run(move |state, _| {
            state.deregister(&key);
            Ok(())
        })
    }

    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        self.run(move |state, now| Ok(state.discover(&service, now)))
    }

    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.run(|state, now| state.acquire(request, now))
    }

    fn renew(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.run(|state, now| state.renew(grant, now))
    }

    fn release(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        self.run(move |state, now| state.release(&grant, now))
    }

    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        self.run(move |state, now| Ok(state.read_lease(&key, now)))
    }
}

/// Posts and fenced records in the same store, under the same limits.
impl Board for MemoryClient {
    fn post(
        &self,
        key: PresenceKey,
        topic: TopicName,
        value: Vec<u8>,
    ) -> BoxFuture<'_, CallResult<()>> {
        self.run(move |state, now| state.post(key, topic, value, now))
    }

    fn read_posts(
        &self,
        service: ServiceGroup,
        topic: TopicName,
    ) -> BoxFuture<'_, CallResult<Vec<Post>>> {
        self.run(move |state, now| Ok(state.read_posts(&service, &topic, now)))
    }

    fn write_fenced(&self, grant: LeaseGrant, value: Vec<u8>) -> BoxFuture<'_, CallResult<()>> {
        self.run(move |state, now| state.write_fenced(grant, value, now))
    }

    fn read_fenced(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<FencedRecord>>> {
        self.run(move |state, _| Ok(state.read_fenced(&key)))
    }
}
