//! The HTTP client's bounded request queue and its one worker.
//!
//! A call reserves nothing before it is queued: [`RequestQueue::submit`]
//! either places the job in the bounded channel or fails at once. The
//! caller's future ([`PendingReply`]) owns the result slot through an `Arc`; the
//! queued job sees it only through a `Weak`.
//!
//! Invariants:
//! - A full queue refuses at once with `LimitExceeded { limit: "request
//!   queue" }`; nothing waits for room.
//! - A future dropped before the worker dequeues its job never runs: the
//!   worker finds the `Weak` dead and skips it. Dropping the `Arc` drops
//!   the slot's waker and result at once; only the job and the slot's
//!   allocation wait in the queue until dequeued.
//! - Once dispatched a call runs to its end (a remote effect cannot be
//!   undone); its answer is dropped if its caller is gone.
//! - A job dropped without an answer (its worker stopped or was dropped)
//!   answers `Offline`, so no caller waits forever.
//! - One worker runs one job at a time. A stuck transport delays every job
//!   behind it; expiry is observed when the worker reaches a job, not by an
//!   independent timer. Transports honour their deadlines.
//!
//! Shutdown order: drop every client handle (the channel closes), then the
//! worker drains what is queued — skipping abandoned jobs, answering
//! expired ones `Timeout` — and [`HttpWorker::run`] returns.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

use tokio::sync::mpsc;

use crate::client::{BoxFuture, CallResult};
use crate::error::ControlPlaneError;
use crate::transport::HttpTransport;
use crate::v1::exchange::{Decode, Exchange};

/// Where one call's answer lands.
struct Slot<T> {
    state: Mutex<SlotState<T>>,
}

struct SlotState<T> {
    result: Option<CallResult<T>>,
    waker: Option<Waker>,
}

impl<T> Slot<T> {
    fn lock(&self) -> MutexGuard<'_, SlotState<T>> {
        // No code panics under this lock; a poisoned one holds a whole state.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The caller's side of a queued call: resolves when the worker answers.
pub(crate) struct PendingReply<T> {
    slot: Arc<Slot<T>>,
}

impl<T> Future for PendingReply<T> {
    type Output = CallResult<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<CallResult<T>> {
        let mut state = self.slot.lock();
        match state.result.take() {
            Some(result) => Poll::Ready(result),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A queued job, whatever its answer's type.
trait Job: Send {
    /// Runs the job unless its caller is gone, and answers it.
    fn run<'a>(self: Box<Self>, transport: &'a dyn HttpTransport) -> BoxFuture<'a, ()>;
}

/// One queued call.
struct Call<T> {
    owner: Option<Weak<Slot<T>>>,
    exchange: Option<Exchange>,
    decode: Decode<T>,
}

impl<T> Call<T> {
    /// Hands `result` to the caller, if it still waits.
    fn answer(&mut self, result: CallResult<T>) {
        let Some(slot) = self.owner.take().and_then(|owner| owner.upgrade()) else {
            return;
        };
        let waker = {
            let mut state = slot.lock();
            state.result = Some(result);
            state.waker.take()
        };
        drop(slot);
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T: Send + 'static> Job for Call<T> {
    fn run<'a>(mut self: Box<Self>, transport: &'a dyn HttpTransport) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let alive = self
                .owner
                .as_ref()
                .is_some_and(|owner| owner.strong_count() > 0);
            let Some(exchange) = self.exchange.take().filter(|_| alive) else {
                // Abandoned before dispatch: the operation never runs.
                self.owner = None;
                return;
            };
            let result = exchange.execute(transport, self.decode).await;
            self.answer(result);
        })
    }
}

impl<T> Drop for Call<T> {
    fn drop(&mut self) {
        if self.owner.is_some() {
            self.answer(Err(ControlPlaneError::Offline));
        }
    }
}

/// The client's end of the queue.
#[derive(Clone)]
pub(crate) struct RequestQueue {
    sender: mpsc::Sender<Box<dyn Job>>,
}

impl RequestQueue {
    /// A queue of `capacity` waiting jobs (checked 1–4,096 by the config)
    /// and the worker that drains it through `transport`.
    pub(crate) fn new(capacity: usize, transport: Arc<dyn HttpTransport>) -> (Self, HttpWorker) {
        let (sender, receiver) = mpsc::channel(capacity);
        (
            Self { sender },
            HttpWorker {
                receiver,
                transport,
            },
        )
    }

    /// Queues `exchange`, returning the future of its answer.
    ///
    /// # Errors
    ///
    /// `LimitExceeded { limit: "request queue" }` when the queue is full,
    /// `Offline` when the worker has stopped.
    pub(crate) fn submit<T: Send + 'static>(
        &self,
        exchange: Exchange,
        decode: Decode<T>,
    ) -> Result<PendingReply<T>, ControlPlaneError> {
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState {
                result: None,
                waker: None,
            }),
        });
        let call = Call {
            owner: Some(Arc::downgrade(&slot)),
            exchange: Some(exchange),
            decode,
        };
        match self.sender.try_send(Box::new(call)) {
            Ok(()) => Ok(PendingReply { slot }),
            Err(mpsc::error::TrySendError::Full(call)) => {
                drop(slot);
                drop(call);
                Err(ControlPlaneError::LimitExceeded {
                    limit: "request queue",
                })
            }
            Err(mpsc::error::TrySendError::Closed(call)) => {
                drop(slot);
                drop(call);
                Err(ControlPlaneError::Offline)
            }
        }
    }
}

impl fmt::Debug for RequestQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestQueue")
            .field("capacity", &self.sender.max_capacity())
            .field("free", &self.sender.capacity())
            .finish()
    }
}

/// The worker of one [`HttpControlPlaneClient`](super::HttpControlPlaneClient):
/// spawn [`run`](Self::run) on the runtime of your choice.
#[must_use = "the client's calls wait until its worker runs"]
pub struct HttpWorker {
    receiver: mpsc::Receiver<Box<dyn Job>>,
    transport: Arc<dyn HttpTransport>,
}

impl HttpWorker {
    /// Executes queued calls one at a time until every client handle is
    /// dropped and the queue is drained.
    ///
    /// # Cancel safety
    ///
    /// Dropping this future stops the worker: the call it was executing
    /// and every queued call answer `Offline` (a call already sent may
    /// still apply remotely); later calls fail with `Offline` at once.
    pub async fn run(mut self) {
        while let Some(job) = self.receiver.recv().await {
            job.run(&*self.transport).await;
        }
    }
}

impl fmt::Debug for HttpWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpWorker")
            .field("queued", &self.receiver.len())
            .field("transport", &self.transport)
            .finish()
    }
}
