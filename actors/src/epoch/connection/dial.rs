//! The dial task: a dial belongs to the client, not to the request that
//! asked for it.
//!
//! `reserve_connection` spawns one task per dial on the host-supplied
//! runtime and waits for its answer within the requester's deadline. The
//! task owns the [`DialPermit`] (the dial's connection charges and its
//! reserved outcome slot), a clone of the dialer and a hold on the
//! requester's running request (`RequestHold`). Nobody keeps its join handle: it is owned
//! by what it holds. Shutdown still waits for it, because that
//! `RequestHold` keeps the request's running slot and its client lease,
//! and so the epoch, retained (a dialing connection retains the original
//! activation) until the task ends.
//!
//! The task hands the dialer, in its `DialTarget`, the seat of the
//! connection's driver (`driver.rs`): a share of the permit's connection
//! charges, which a driver the dialer starts holds until it is joined.
//!
//! Invariants:
//! - The dial is bounded by its own deadline — the registry's queue age in
//!   force when it starts — never by the requester's; one that has not
//!   connected by then fails as [`DialErrorKind::Timeout`] and backs off.
//! - A requester that leaves (dropped future, its own deadline) cancels
//!   nothing: a success is parked in the client's idle stash, charged
//!   (unless the dialer's [`Dialer::PARK_UNCLAIMED`] is false: then it is
//!   destroyed, and nothing backs off since the dial succeeded); a failure
//!   records backoff as the real failure it is.
//! - Only the pools cancel a dial: a task dropped by the runtime drops its
//!   permit, which reports a cancelled dial.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::epoch::connection::RequestHold;
use crate::epoch::connection::{
    ConnectError, DialError, DialErrorKind, DialPermit, DialTarget, Dialer, PooledConnection,
};
use crate::epoch::published::PublishedEpoch;

/// The requester's wait for its dial. Dropped with a connection already
/// delivered but not taken (the requester left between delivery and its
/// next poll), it treats that connection as unclaimed, like the task does.
pub(crate) struct DialAnswer<T: Send + 'static> {
    answer: oneshot::Receiver<Result<PooledConnection<T>, ConnectError>>,
    park_unclaimed: bool,
}

impl<T: Send + 'static> Future for DialAnswer<T> {
    type Output = Result<PooledConnection<T>, ConnectError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.answer)
            .poll(cx)
            .map(|answer| answer.unwrap_or(Err(ConnectError::Closed)))
    }
}

impl<T: Send + 'static> Drop for DialAnswer<T> {
    fn drop(&mut self) {
        self.answer.close();
        if let Ok(Ok(unclaimed)) = self.answer.try_recv() {
            unclaimed_connection(unclaimed, self.park_unclaimed);
        }
    }
}

/// A connection whose requester left is the client's: parked, or
/// destroyed when its dialer says such connections are not reusable.
fn unclaimed_connection<T: Send + 'static>(conn: PooledConnection<T>, park: bool) {
    if park {
        conn.park();
    } else {
        drop(conn);
    }
}

/// One dial to run: the permit, the client it dials, the request that
/// asked (whose activation the dial retains), its own age and span.
pub(crate) struct DialJob {
    pub(crate) permit: DialPermit,
    pub(crate) epoch: Arc<PublishedEpoch>,
    pub(crate) client: usize,
    pub(crate) owner: RequestHold,
    /// The requester's tenant's share of the client, which the dial and
    /// then its connection hold.
    pub(crate) tenant: crate::budget::Charge,
    pub(crate) dial_age: Duration,
    pub(crate) span: tracing::Span,
}

/// Runs `job`'s dial on `runtime`, bounded by its age from now; answers on
/// the returned receiver.
pub(crate) fn spawn_dial<D>(runtime: &Handle, dialer: D, job: DialJob) -> DialAnswer<D::Conn>
where
    D: Dialer + 'static,
{
    let DialJob {
        mut permit,
        epoch,
        client,
        owner,
        tenant,
        dial_age,
        span,
    } = job;
    permit.start();
    let (reply, answer) = oneshot::channel();
    let deadline = tokio::time::Instant::now() + dial_age;
    let seat = permit.driver_seat(deadline);
    let task = async move {
        let target = DialTarget {
            target: epoch.client_target(client),
            settings: &epoch.config.settings,
            credential: epoch.credential(),
            driver: seat.as_ref(),
        };
        let dialed = tokio::time::timeout_at(deadline, dialer.dial(target))
            .await
            .unwrap_or_else(|_| {
                Err(DialError::new(
                    DialErrorKind::Timeout,
                    format!("not connected within the dial deadline ({dial_age:?})"),
                ))
            });
        permit.finish(dialed, tenant, owner, |result| {
            if let Err(Ok(unclaimed)) = reply.send(result) {
                // The requester left: the connection is the client's.
                unclaimed_connection(unclaimed, D::PARK_UNCLAIMED);
            }
        });
    };
    // Detached on purpose: the task owns its permit and activation, which
    // shutdown waits for (module doc).
    #[allow(
        clippy::disallowed_methods,
        reason = "the dial task owns its permit and activation, which shutdown waits for"
    )]
    drop(runtime.spawn(task.instrument(span)));
    DialAnswer {
        answer,
        park_unclaimed: D::PARK_UNCLAIMED,
    }
}
