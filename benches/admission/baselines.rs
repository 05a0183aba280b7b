//! The baselines the engine's admission is read against: each is one
//! [`Cycle`] (acquire a permit, drop it) a task of a loaded row runs, or a
//! lone caller awaits.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use mea::admission::FairShare;
use provider_pools::TenantId;
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, oneshot, Semaphore};

use super::{Cycle, Hold};

/// A fair-FIFO limiter as a runtime author would hand-roll it: permits and
/// a queue of parked waiters behind one mutex; a release hands its permit
/// straight to the oldest waiter.
pub(crate) struct FifoLimiter {
    state: Mutex<FifoState>,
}

struct FifoState {
    permits: u32,
    waiters: VecDeque<oneshot::Sender<()>>,
}

struct FifoPermit<'a>(&'a FifoLimiter);

impl FifoLimiter {
    pub(crate) fn new(permits: u32) -> Self {
        Self {
            state: Mutex::new(FifoState {
                permits,
                waiters: VecDeque::new(),
            }),
        }
    }

    async fn acquire(&self) -> FifoPermit<'_> {
        let wait = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.permits > 0 {
                state.permits -= 1;
                None
            } else {
                let (tx, rx) = oneshot::channel();
                state.waiters.push_back(tx);
                Some(rx)
            }
        };
        if let Some(rx) = wait {
            rx.await.expect("a release hands the permit over");
        }
        FifoPermit(self)
    }
}

impl Drop for FifoPermit<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(waiter) = state.waiters.pop_front() {
            if waiter.send(()).is_ok() {
                return;
            }
        }
        state.permits += 1;
    }
}

/// mea's fair-share limiter, keyed by the tenant a task admits as.
pub(crate) struct MeaFairShare {
    limiter: FairShare<TenantId>,
    tenants: Vec<TenantId>,
}

impl MeaFairShare {
    /// `permits` shared by `tenants` tenants, named as the fixture names them.
    pub(crate) fn new(permits: u32, tenants: usize) -> Self {
        Self {
            limiter: FairShare::new(permits as usize),
            tenants: (0..tenants)
                .map(|t| TenantId::new(format!("tenant-{t}")).expect("tenant"))
                .collect(),
        }
    }
}

impl Cycle for MeaFairShare {
    async fn cycle(&self, task: usize, hold: Hold) {
        let tenant = self.tenants[task % self.tenants.len()].clone();
        let permit = self.limiter.acquire(tenant).await;
        hold.keep().await;
        drop(permit);
    }
}

/// The bare semaphore: the unfair floor.
pub(crate) struct Bare(pub(crate) Semaphore);

impl Cycle for Bare {
    async fn cycle(&self, _task: usize, hold: Hold) {
        let permit = self.0.acquire().await.expect("open semaphore");
        hold.keep().await;
        drop(permit);
    }
}

impl Cycle for FifoLimiter {
    async fn cycle(&self, _task: usize, hold: Hold) {
        let permit = self.acquire().await;
        hold.keep().await;
        drop(permit);
    }
}

/// The single-owner floor: one task owns the permits and a FIFO of
/// waiters, and is reached only by messages.
pub(crate) struct OwnerTask {
    requests: mpsc::UnboundedSender<Request>,
}

enum Request {
    Acquire(oneshot::Sender<()>),
    Release,
}

impl OwnerTask {
    pub(crate) fn start(runtime: &Runtime, permits: u32) -> Self {
        let (requests, mut inbox) = mpsc::unbounded_channel();
        // A benchmark fixture, not library code: it runs until the sender
        // side is dropped with the fixture.
        #[allow(clippy::disallowed_methods)]
        runtime.spawn(async move {
            let (mut free, mut waiters) = (permits, VecDeque::new());
            let mut batch = Vec::with_capacity(256);
            while inbox.recv_many(&mut batch, 256).await > 0 {
                for request in batch.drain(..) {
                    match request {
                        Request::Acquire(waiter) if free > 0 => {
                            free -= 1;
                            let _ = waiter.send(());
                        }
                        Request::Acquire(waiter) => waiters.push_back(waiter),
                        Request::Release => match waiters.pop_front() {
                            Some(waiter) => {
                                let _ = waiter.send(());
                            }
                            None => free += 1,
                        },
                    }
                }
            }
        });
        Self { requests }
    }
}

impl Cycle for OwnerTask {
    async fn cycle(&self, _task: usize, hold: Hold) {
        let (tx, rx) = oneshot::channel();
        self.requests
            .send(Request::Acquire(tx))
            .expect("owner running");
        rx.await.expect("owner answers");
        hold.keep().await;
        self.requests.send(Request::Release).expect("owner running");
    }
}
