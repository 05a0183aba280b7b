//! [`Failover`]: one control plane over several endpoints of the same
//! cluster (the members of an etcd cluster), moving to the next one when
//! a call fails for want of an answer.
//!
//! Invariants:
//! - No call is replayed: the call that failed returns its error (an
//!   unknown outcome stays unknown); the next call goes to the next
//!   endpoint.
//! - Only failures that say nothing about the request's content move it
//!   (offline, timeout, transport, a server status, an unknown outcome);
//!   an answer such as `LeaseHeld` or `NotRegistered` is the cluster's,
//!   whichever member gave it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use provider_pools_control_plane::{
    Board, BoxFuture, CallResult, ControlPlane, ControlPlaneError, FencedRecord, LeaseGrant,
    LeaseKey, LeaseRequest, LeaseState, Post, PresenceKey, Registration, ServiceGroup, TopicName,
};

use crate::error::ClusterError;

/// Several endpoints of one control plane, tried in turn.
#[derive(Debug)]
pub struct Failover {
    clients: Vec<Arc<dyn Board>>,
    current: AtomicUsize,
}

impl Failover {
    /// Calls go to `clients[0]` first.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Config`] naming `cluster.endpoints` when there is
    /// none.
    pub fn new(clients: Vec<Arc<dyn Board>>) -> Result<Self, ClusterError> {
        if clients.is_empty() {
            return Err(ClusterError::config("cluster.endpoints", "none given"));
        }
        Ok(Self {
            clients,
            current: AtomicUsize::new(0),
        })
    }

    /// The index of the endpoint the next call goes to.
    pub fn current(&self) -> usize {
        self.current.load(Ordering::Relaxed)
    }

    fn client(&self) -> (usize, &Arc<dyn Board>) {
        let at = self.current() % self.clients.len();
        (at, &self.clients[at])
    }

    /// Moves on from endpoint `at` when `result` failed for want of an
    /// answer (another call may have moved on already).
    fn after<T>(&self, at: usize, result: CallResult<T>) -> CallResult<T> {
        if let Err(error) = &result {
            if unanswered(error) {
                let next = (at + 1) % self.clients.len();
                let _ =
                    self.current
                        .compare_exchange(at, next, Ordering::Relaxed, Ordering::Relaxed);
            }
        }
        result
    }
}

fn unanswered(error: &ControlPlaneError) -> bool {
    matches!(
        error,
        ControlPlaneError::Offline
            | ControlPlaneError::Timeout
            | ControlPlaneError::Transport(_)
            | ControlPlaneError::Status { .. }
            | ControlPlaneError::OutcomeUnknown { .. }
    )
}

/// Forwards one call to the current endpoint and moves on after it.
macro_rules! forward {
    ($self:ident . $call:ident ( $($arg:expr),* )) => {{
        let (at, client) = $self.client();
        let call = client.$call($($arg),*);
        Box::pin(async move { $self.after(at, call.await) })
    }};
}

impl ControlPlane for Failover {
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>> {
        forward!(self.register(registration))
    }

    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        forward!(self.heartbeat(key))
    }

    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        forward!(self.deregister(key))
    }

    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        forward!(self.discover(service))
    }

    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        forward!(self.acquire(request))
    }

    fn renew(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        forward!(self.renew(grant))
    }

    fn release(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        forward!(self.release(grant))
    }

    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        forward!(self.read_lease(key))
    }
}

impl Board for Failover {
    fn post(
        &self,
        key: PresenceKey,
        topic: TopicName,
        value: Vec<u8>,
    ) -> BoxFuture<'_, CallResult<()>> {
        forward!(self.post(key, topic, value))
    }

    fn read_posts(
        &self,
        service: ServiceGroup,
        topic: TopicName,
    ) -> BoxFuture<'_, CallResult<Vec<Post>>> {
        forward!(self.read_posts(service, topic))
    }

    fn write_fenced(&self, grant: LeaseGrant, value: Vec<u8>) -> BoxFuture<'_, CallResult<()>> {
        forward!(self.write_fenced(grant, value))
    }

    fn read_fenced(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<FencedRecord>>> {
        forward!(self.read_fenced(key))
    }
}
