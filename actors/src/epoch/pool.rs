//! The epoch actor's connection state: per client, the dial gate, the
//! backoff and the callers waiting on a dial. The parked connections
//! themselves live in the epoch's per-client idle stash (`epoch::idle`), which request
//! tasks also reach directly for the common checkout and park.
//!
//! Invariants:
//! - At most one dial in flight per client; callers arriving meanwhile wait
//!   for its outcome (bounded by the running requests that can ask).
//! - A failed or cancelled dial sets backoff = the fixed dial backoff after
//!   that many consecutive failures; during backoff a checkout is refused at
//!   once with the last error's kind. A successful dial resets it.
//! - Idle connections are taken most recent first, each checked for expiry
//!   at checkout; a retired epoch keeps none, nor does a restarted actor.
//! - A waiter is counted in the stash before the actor's last look at it;
//!   connections parked while callers wait go to them, oldest waiter first,
//!   before another dial starts.
//! - A reclaim scan touches at most its bound of idle entries.

use std::any::TypeId;
use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::connection::{
    ConnCharges, ConnectError, DialErrorKind, DialOutcome, DialPermit, IdleConn,
};
use crate::epoch::actor::Msg;
use crate::epoch::published::PublishedEpoch;
use crate::ledger::Ledger;
use crate::limits::DialBackoff;
use crate::mailbox::Mailbox;

/// The answer to a checkout.
pub(crate) enum Checkout {
    /// A parked connection of the requested type.
    Idle(IdleConn),
    /// Nothing idle: the caller dials.
    Dial(DialPermit),
    /// Refused at once.
    Refused(ConnectError),
}

#[derive(Default)]
struct ClientPool {
    dialing: bool,
    waiters: VecDeque<(TypeId, oneshot::Sender<Checkout>)>,
    failures: u32,
    backoff_until: Option<Instant>,
    last_error: Option<DialErrorKind>,
}

pub(crate) struct Pools {
    clients: Vec<ClientPool>,
    epoch: Arc<PublishedEpoch>,
    ledger: Arc<Ledger>,
    backoff: DialBackoff,
    retired: bool,
    /// Where the next reclaim scan starts.
    cursor: usize,
}

impl Pools {
    pub(crate) fn new(
        epoch: Arc<PublishedEpoch>,
        ledger: Arc<Ledger>,
        backoff: DialBackoff,
    ) -> Self {
        // A restarted actor starts empty: the failed one's idle connections
        // are destroyed with it, each releasing its charges once.
        for stash in epoch.all_idle() {
            stash.clear_contained();
            stash.set_waiting(0);
        }
        Self {
            clients: (0..epoch.client_count())
                .map(|_| ClientPool::default())
                .collect(),
            retired: epoch.is_retired(),
            epoch,
            ledger,
            backoff,
            cursor: 0,
        }
    }

    /// Answers a checkout now, or queues it behind the dial in flight.
    pub(crate) fn checkout(
        &mut self,
        mailbox: &Mailbox<Msg>,
        client: usize,
        type_id: TypeId,
        reply: oneshot::Sender<Checkout>,
    ) {
        let idle_age = self.ledger.idle_age();
        let (Some(pool), Some(stash)) = (self.clients.get_mut(client), self.epoch.idle(client))
        else {
            let _ = reply.send(Checkout::Refused(ConnectError::Closed));
            return;
        };
        if let Some(conn) = stash.take(type_id, idle_age) {
            let _ = reply.send(Checkout::Idle(conn));
            return;
        }
        if let Some(refusal) = backoff_refusal(pool, Instant::now()) {
            let _ = reply.send(Checkout::Refused(refusal));
            return;
        }
        if pool.dialing {
            // Counted before the last look: a park landing after it sees
            // the waiter and nudges this actor.
            stash.set_waiting(pool.waiters.len() + 1);
            if let Some(conn) = stash.take(type_id, idle_age) {
                stash.set_waiting(pool.waiters.len());
                let _ = reply.send(Checkout::Idle(conn));
                return;
            }
            pool.waiters.push_back((type_id, reply));
            return;
        }
        self.start_dial(mailbox, client, reply);
    }

    /// A dial ended: record success or backoff, then serve the waiters —
    /// from the stash first, then by the next dial.
    pub(crate) fn dial_done(
        &mut self,
        mailbox: &Mailbox<Msg>,
        client: usize,
        outcome: DialOutcome,
        at: Instant,
        span: &tracing::Span,
    ) {
        let backoff = self.backoff;
        let Some(pool) = self.clients.get_mut(client) else {
            return;
        };
        let failed = match outcome {
            // `start_dial` already cleared the gate when it withdrew the
            // permit; another dial may be in flight since.
            DialOutcome::Withdrawn => return,
            DialOutcome::Connected => {
                pool.failures = 0;
                pool.backoff_until = None;
                false
            }
            // The adapter had no room of its own; the origin was never
            // tried. No backoff: the gate opens for the next waiter.
            DialOutcome::Failed(DialErrorKind::Saturated) => false,
            // The caller left before dialing with its permit: nothing was
            // tried, so no backoff either.
            DialOutcome::Abandoned => false,
            DialOutcome::Failed(kind) => {
                pool.failures = pool.failures.saturating_add(1);
                pool.last_error = Some(kind);
                let delay = backoff.delay_after(pool.failures);
                pool.backoff_until = Some(at + delay);
                span.record("failures", pool.failures);
                span.record(
                    "backoff_ms",
                    u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                );
                tracing::debug!(parent: span, client, %kind, failures = pool.failures, "dial failed; backoff");
                true
            }
        };
        pool.dialing = false;
        self.parked(client);
        if failed {
            self.refuse_waiters(client);
        }
        self.serve_next_waiter(mailbox, client);
    }

    /// During backoff, every waiter is refused at once.
    fn refuse_waiters(&mut self, client: usize) {
        let (Some(pool), Some(stash)) = (self.clients.get_mut(client), self.epoch.idle(client))
        else {
            return;
        };
        if let Some(refusal) = backoff_refusal(pool, Instant::now()) {
            for (_, waiter) in pool.waiters.drain(..) {
                let _ = waiter.send(Checkout::Refused(refusal.clone()));
            }
            stash.set_waiting(0);
        }
    }

    /// The next waiter dials (serially: one dial in flight per client).
    fn serve_next_waiter(&mut self, mailbox: &Mailbox<Msg>, client: usize) {
        while let Some((_, waiter)) = self
            .clients
            .get_mut(client)
            .and_then(|p| p.waiters.pop_front())
        {
            self.sync_waiting(client);
            if self.start_dial(mailbox, client, waiter) {
                break;
            }
        }
    }

    /// Connections were parked while callers waited: each waiter, oldest
    /// first, takes the most recent fresh one of its type.
    pub(crate) fn parked(&mut self, client: usize) {
        let idle_age = self.ledger.idle_age();
        let retired = self.retired;
        let (Some(pool), Some(stash)) = (self.clients.get_mut(client), self.epoch.idle(client))
        else {
            return;
        };
        let mut at = 0;
        while at < pool.waiters.len() {
            let Some(entry) = stash.take(pool.waiters[at].0, idle_age) else {
                at += 1;
                continue;
            };
            let Some((_, waiter)) = pool.waiters.remove(at) else {
                break;
            };
            if let Err(Checkout::Idle(back)) = waiter.send(Checkout::Idle(entry)) {
                // The caller left; the connection stays idle (a retired
                // epoch destroys it here, and its `Retire` is on the way).
                if !retired {
                    stash.restore(back);
                }
            }
        }
        stash.set_waiting(pool.waiters.len());
    }

    fn sync_waiting(&self, client: usize) {
        if let (Some(pool), Some(stash)) = (self.clients.get(client), self.epoch.idle(client)) {
            stash.set_waiting(pool.waiters.len());
        }
    }

    /// Destroys expired idle connections, touching at most `bound` entries.
    /// Returns how many it touched.
    pub(crate) fn reclaim(&mut self, bound: usize) -> usize {
        let idle_age = self.ledger.idle_age();
        let clients = self.clients.len();
        let mut touched = 0;
        for step in 0..clients {
            let index = (self.cursor + step) % clients;
            if let Some(stash) = self.epoch.idle(index) {
                touched += stash.reclaim(idle_age, bound - touched);
            }
            if touched >= bound {
                self.cursor = index;
                return touched;
            }
        }
        self.cursor = 0;
        touched
    }

    /// Retirement: destroy every idle connection; keep serving accepted work.
    pub(crate) fn retire(&mut self) {
        self.retired = true;
        for stash in self.epoch.all_idle() {
            stash.clear();
        }
    }

    /// Reserves the connection and mailbox room for a dial and hands the
    /// permit to `reply`. Returns true when a dial started.
    fn start_dial(
        &mut self,
        mailbox: &Mailbox<Msg>,
        client: usize,
        reply: oneshot::Sender<Checkout>,
    ) -> bool {
        let permit = match self.reserve_dial(mailbox, client) {
            Ok(permit) => permit,
            Err(refusal) => {
                let _ = reply.send(Checkout::Refused(refusal));
                return false;
            }
        };
        if let Some(pool) = self.clients.get_mut(client) {
            pool.dialing = true;
        }
        match reply.send(Checkout::Dial(permit)) {
            Ok(()) => true,
            Err(Checkout::Dial(permit)) => {
                // The caller left before its turn; no dial happened.
                if let Some(pool) = self.clients.get_mut(client) {
                    pool.dialing = false;
                }
                permit.withdraw();
                false
            }
            Err(_) => false,
        }
    }

    fn reserve_dial(
        &self,
        mailbox: &Mailbox<Msg>,
        client: usize,
    ) -> Result<DialPermit, ConnectError> {
        let per_client = self
            .epoch
            .client_connections(client)
            .ok_or(ConnectError::Closed)?;
        let charges = ConnCharges::new(
            self.ledger.connections.try_reserve(1)?,
            per_client.try_reserve(1)?,
        );
        let done = mailbox.reserve_release().ok_or(ConnectError::Busy)?;
        Ok(DialPermit::new(
            charges,
            done,
            Arc::clone(&self.epoch),
            Arc::clone(&self.ledger),
            client,
        ))
    }
}

fn backoff_refusal(pool: &ClientPool, now: Instant) -> Option<ConnectError> {
    let until = pool.backoff_until.filter(|until| now < *until)?;
    Some(ConnectError::Unavailable {
        kind: pool.last_error.unwrap_or(DialErrorKind::Other),
        retry_after: until - now,
    })
}
