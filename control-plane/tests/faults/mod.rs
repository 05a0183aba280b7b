//! A client in front of a real in-memory store that can be made to fail
//! or hang, for the actor tests.

#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};

use provider_pools_control_plane::{
    BoxFuture, CallResult, ControlPlane, ControlPlaneError, LeaseGrant, LeaseKey, LeaseRequest,
    LeaseState, MemoryClient, PresenceKey, Registration, ServiceGroup,
};

/// How calls behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every call reaches the store.
    Healthy,
    /// Every call times out without reaching the store.
    Partitioned,
    /// Every call waits forever.
    Hung,
}

/// The store behind a switchable link.
#[derive(Debug)]
pub struct Faulty {
    pub store: Arc<MemoryClient>,
    mode: Mutex<Mode>,
}

impl Faulty {
    pub fn new(store: Arc<MemoryClient>) -> Arc<Self> {
        Arc::new(Self {
            store,
            mode: Mutex::new(Mode::Healthy),
        })
    }

    pub fn set(&self, mode: Mode) {
        *self.mode.lock().expect("lock") = mode;
    }

    fn through<'a, T: Send + 'a>(
        &'a self,
        call: BoxFuture<'a, CallResult<T>>,
    ) -> BoxFuture<'a, CallResult<T>> {
        let mode = *self.mode.lock().expect("lock");
        Box::pin(async move {
            match mode {
                Mode::Healthy => call.await,
                Mode::Partitioned => Err(ControlPlaneError::Timeout),
                Mode::Hung => std::future::pending().await,
            }
        })
    }
}

impl ControlPlane for Faulty {
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>> {
        self.through(self.store.register(registration))
    }

    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.through(self.store.heartbeat(key))
    }

    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.through(self.store.deregister(key))
    }

    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        self.through(self.store.discover(service))
    }

    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.through(self.store.acquire(request))
    }

    fn renew(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.through(self.store.renew(grant))
    }

    fn release(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        self.through(self.store.release(grant))
    }

    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        self.through(self.store.read_lease(key))
    }
}
