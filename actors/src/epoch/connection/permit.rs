//! [`DialPermit`]: the right to run one dial for one client, charged before
//! the dial starts.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::accounts::Accounts;
use crate::epoch::charges::ConnCharges;
use crate::epoch::connection::RequestHold;
use crate::epoch::connection::{ConnectError, DialError, DialErrorKind, PooledConnection};
use crate::epoch::published::PublishedEpoch;
use crate::epoch::Msg as EpochMsg;
use crate::mailbox::ReleaseSlot;

/// How a dial ended, as the epoch actor learns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DialOutcome {
    /// A connection was opened.
    Connected,
    /// The dial failed or was cancelled: backoff.
    Failed(DialErrorKind),
    /// No dial was attempted: the caller had gone before the permit
    /// reached it, so the permit never held the client's dial gate.
    Withdrawn,
    /// The permit reached the caller but no dial was started with it (the
    /// caller left between the actor's answer and its own read): no dial
    /// happened, so no backoff, and the gate the permit held opens for the
    /// next waiter.
    Abandoned,
}

impl DialOutcome {
    /// The stable code recorded on the dial's span.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Self::Connected => "connected",
            Self::Failed(kind) => kind.name(),
            Self::Withdrawn => "withdrawn",
            Self::Abandoned => "abandoned",
        }
    }
}

/// Granted by the epoch actor to the one caller that may dial a client now.
///
/// The dial runs in a task of its own (`connection::dial`), which owns the
/// permit and the requester's `RequestHold` — so a dial
/// retains the original activation, and its epoch — and reports the outcome
/// with [`DialPermit::finish`]. Dropping the permit unfinished (the pools
/// cancelled the dial: the runtime dropped its task) counts as a cancelled
/// dial.
pub(crate) struct DialPermit {
    charges: Option<ConnCharges>,
    done: Option<ReleaseSlot<EpochMsg>>,
    epoch: Arc<PublishedEpoch>,
    accounts: Arc<Accounts>,
    client: usize,
    /// Unique within the epoch actor that granted it: its outcome opens the
    /// client's dial gate only if this permit holds it.
    id: u64,
    /// The dial's span; it travels to the epoch actor with the outcome.
    span: tracing::Span,
    /// A dial task took the permit: dropped unfinished, the dial was
    /// cancelled; before that, it was only abandoned.
    started: bool,
    /// Still counted in the `connecting` gauge.
    connecting: bool,
}

impl DialPermit {
    pub(crate) fn new(
        charges: ConnCharges,
        done: ReleaseSlot<EpochMsg>,
        epoch: Arc<PublishedEpoch>,
        accounts: Arc<Accounts>,
        client: usize,
        id: u64,
    ) -> Self {
        accounts
            .gauges
            .connections_connecting
            .fetch_add(1, Ordering::AcqRel);
        Self {
            charges: Some(charges),
            done: Some(done),
            epoch,
            accounts,
            client,
            id,
            span: tracing::Span::none(),
            started: false,
            connecting: true,
        }
    }

    /// Marks the dial as started (its task owns the permit now).
    pub(crate) fn start(&mut self) {
        self.started = true;
    }

    /// The seat of the connection's driver: a share of the dial's
    /// connection charges, and the dial's `deadline`.
    pub(crate) fn driver_seat(
        &self,
        deadline: tokio::time::Instant,
    ) -> Option<crate::epoch::connection::DriverSeat> {
        let charges = self.charges.as_ref()?.for_driver();
        Some(crate::epoch::connection::DriverSeat::new(charges, deadline))
    }

    /// Attaches the dial's span (`pools.dial`): the outcome is recorded on
    /// it, and the epoch actor records the backoff it sets.
    pub(crate) fn trace(&mut self, span: tracing::Span) {
        self.span = span;
    }

    /// Ends the dial: a success becomes a connection owned by `owner` and
    /// goes to `deliver` (the requester, or the idle stash when it left)
    /// *before* the outcome is reported, so the epoch actor, looking at the
    /// stash when it hears of the success, finds a connection parked there;
    /// a failure is reported first, then delivered as
    /// [`ConnectError::Dial`].
    pub(crate) fn finish<T: Send + 'static>(
        mut self,
        dialed: Result<T, DialError>,
        tenant: crate::budget::Charge,
        owner: RequestHold,
        deliver: impl FnOnce(Result<PooledConnection<T>, ConnectError>),
    ) {
        // The permit's epoch is the one the requester's client lease is
        // on: the connection reaches it through `owner`.
        debug_assert!(Arc::ptr_eq(owner.epoch(), &self.epoch), "another epoch");
        match (dialed, self.charges.take()) {
            (Ok(conn), Some(charges)) => {
                let conn = PooledConnection::new(
                    Box::new(conn),
                    charges,
                    tenant,
                    self.client,
                    false,
                    owner,
                );
                // Counted active now: no longer connecting, before anyone
                // can use it (a requester done within microseconds may
                // shut the registry down before the report below).
                self.uncount();
                deliver(Ok(conn));
                self.report(DialOutcome::Connected);
            }
            (Ok(conn), None) => {
                // Unreachable: only `finish` takes the charges. Destroyed
                // before the report.
                drop(conn);
                self.report(DialOutcome::Connected);
                deliver(Err(ConnectError::Closed));
            }
            (Err(e), _) => {
                self.report(DialOutcome::Failed(e.kind));
                deliver(Err(ConnectError::Dial(e)));
            }
        }
    }

    /// Gives the permit up before dialing (the caller was gone): no dial
    /// happened, so no backoff.
    pub(crate) fn withdraw(mut self) {
        self.report(DialOutcome::Withdrawn);
    }

    /// Takes this dial out of the `connecting` gauge, once.
    fn uncount(&mut self) {
        if std::mem::take(&mut self.connecting) {
            self.accounts
                .gauges
                .connections_connecting
                .fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn report(&mut self, outcome: DialOutcome) {
        self.uncount();
        if let Some(slot) = self.done.take() {
            let span = std::mem::replace(&mut self.span, tracing::Span::none());
            span.record("outcome", outcome.code());
            // A stopped epoch actor has no dial state left to update.
            let _ = slot.send(EpochMsg::DialDone {
                client: self.client,
                dial: self.id,
                outcome,
                at: tokio::time::Instant::now(),
                span,
            });
        }
    }
}

impl Drop for DialPermit {
    fn drop(&mut self) {
        let outcome = match self.started {
            true => DialOutcome::Failed(DialErrorKind::Cancelled),
            false => DialOutcome::Abandoned,
        };
        self.report(outcome);
    }
}

impl std::fmt::Debug for DialPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DialPermit")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}
