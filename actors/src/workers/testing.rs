//! Test support shared by the worker-pool and cleanup tests: a supervisor
//! that ignores its children's events, a barrier gate that always opens,
//! and a bounded wait for a future.

use std::future::Future;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::oneshot;
use tokio::time::Instant;

/// How long any test waits for anything.
pub(crate) const WAIT: Duration = Duration::from_secs(5);

/// The deadline for a control request made now.
pub(crate) fn deadline() -> Instant {
    Instant::now() + WAIT
}

/// A supervisor that keeps running whatever its children do.
pub(crate) struct Host;

impl Actor for Host {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<()>,
        _: SupervisionEvent,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

pub(crate) async fn host() -> ActorRef<()> {
    let (host, _join) = Actor::spawn(None, Host, ()).await.expect("host starts");
    host
}

/// Awaits `future`, failing the test with `what` after [`WAIT`].
pub(crate) async fn within<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {WAIT:?}"))
}

/// Holds a blocking job on a `std::sync::Barrier` until opened; dropping the
/// gate opens it, so a failing test never leaves a job blocked.
pub(crate) struct Gate {
    barrier: Option<Arc<Barrier>>,
}

/// The job's side of a [`Gate`].
pub(crate) struct GatedJob {
    barrier: Arc<Barrier>,
    started: Option<oneshot::Sender<()>>,
}

impl Gate {
    /// A closed gate, the job side, and the signal that the job is inside.
    pub(crate) fn new() -> (Gate, GatedJob, oneshot::Receiver<()>) {
        let barrier = Arc::new(Barrier::new(2));
        let (started_tx, started_rx) = oneshot::channel();
        let held = GatedJob {
            barrier: Arc::clone(&barrier),
            started: Some(started_tx),
        };
        (
            Gate {
                barrier: Some(barrier),
            },
            held,
            started_rx,
        )
    }

    /// Lets the held job go on.
    pub(crate) fn open(mut self) {
        self.release();
    }

    fn release(&mut self) {
        if let Some(barrier) = self.barrier.take() {
            // The other party waits on a runtime blocking thread; this
            // side must not block the test's runtime.
            std::thread::spawn(move || {
                barrier.wait();
            });
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.release();
    }
}

impl GatedJob {
    /// Called by the blocking job: signals that it started, then blocks
    /// until the gate opens.
    pub(crate) fn wait(mut self) {
        if let Some(started) = self.started.take() {
            let _ = started.send(());
        }
        self.barrier.wait();
    }
}
