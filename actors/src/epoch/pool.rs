//! The epoch actor's connection state: per client, the idle connections,
//! the dial gate, the backoff and the callers waiting on a dial.
//!
//! Invariants:
//! - At most one dial in flight per client; callers arriving meanwhile wait
//!   for its outcome (bounded by the running requests that can ask).
//! - A failed or cancelled dial sets backoff = the fixed dial backoff after
//!   that many consecutive failures; during backoff a checkout is refused at
//!   once with the last error's kind. A successful dial resets it.
//! - Idle connections are taken most recent first, each checked for expiry
//!   at checkout; a retired epoch keeps none.
//! - A reclaim scan touches at most its bound of idle entries.

use std::any::TypeId;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

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
    /// Oldest first; checkout takes from the back.
    idle: VecDeque<IdleConn>,
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
        let now = Instant::now();
        let idle_age = self.ledger.idle_age();
        let Some(pool) = self.clients.get_mut(client) else {
            let _ = reply.send(Checkout::Refused(ConnectError::Closed));
            return;
        };
        if let Some(conn) = take_idle(pool, type_id, now, idle_age) {
            let _ = reply.send(Checkout::Idle(conn));
            return;
        }
        if let Some(refusal) = backoff_refusal(pool, now) {
            let _ = reply.send(Checkout::Refused(refusal));
            return;
        }
        if pool.dialing {
            pool.waiters.push_back((type_id, reply));
            return;
        }
        self.start_dial(mailbox, client, reply);
    }

    /// A dial ended: record success or backoff, then serve the waiters.
    pub(crate) fn dial_done(
        &mut self,
        mailbox: &Mailbox<Msg>,
        client: usize,
        outcome: DialOutcome,
        at: Instant,
        span: &tracing::Span,
    ) {
        if outcome == DialOutcome::Withdrawn {
            // `start_dial` already cleared the gate when it withdrew the
            // permit; another dial may be in flight since.
            return;
        }
        if outcome == DialOutcome::Failed(DialErrorKind::Saturated) {
            // The adapter had no room of its own; the origin was never
            // tried. No backoff: the gate opens for the next waiter.
            if let Some(pool) = self.clients.get_mut(client) {
                pool.dialing = false;
            }
            self.serve_next_waiter(mailbox, client);
            return;
        }
        let now = Instant::now();
        let backoff = self.backoff;
        let Some(pool) = self.clients.get_mut(client) else {
            return;
        };
        pool.dialing = false;
        match outcome {
            DialOutcome::Connected => {
                pool.failures = 0;
                pool.backoff_until = None;
            }
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
                if let Some(refusal) = backoff_refusal(pool, now) {
                    for (_, waiter) in pool.waiters.drain(..) {
                        let _ = waiter.send(Checkout::Refused(refusal.clone()));
                    }
                }
            }
            DialOutcome::Withdrawn => return,
        }
        self.serve_next_waiter(mailbox, client);
    }

    /// The next waiter dials (serially: one dial in flight per client).
    fn serve_next_waiter(&mut self, mailbox: &Mailbox<Msg>, client: usize) {
        while let Some((_, waiter)) = self
            .clients
            .get_mut(client)
            .and_then(|p| p.waiters.pop_front())
        {
            if self.start_dial(mailbox, client, waiter) {
                break;
            }
        }
    }

    /// A connection parked by adapter code that verified it reusable.
    pub(crate) fn park(&mut self, client: usize, mut entry: IdleConn) {
        if self.retired {
            return; // dropping `entry` destroys, then releases
        }
        let Some(pool) = self.clients.get_mut(client) else {
            return;
        };
        // A caller waiting on a dial of the same type takes it at once.
        if let Some(at) = pool.waiters.iter().position(|(t, _)| *t == entry.type_id) {
            if let Some((_, waiter)) = pool.waiters.remove(at) {
                match waiter.send(Checkout::Idle(entry)) {
                    Ok(()) => return,
                    Err(Checkout::Idle(back)) => entry = back,
                    Err(_) => return,
                }
            }
        }
        match self.ledger.idle.try_reserve(1) {
            Ok(idle) => {
                entry.idle = Some(idle);
                entry.since = Instant::now();
                pool.idle.push_back(entry);
            }
            Err(full) => tracing::debug!(%full, "idle pool full; connection destroyed"),
        }
    }

    /// Destroys expired idle connections, touching at most `bound` entries.
    /// Returns how many it touched.
    pub(crate) fn reclaim(&mut self, bound: usize) -> usize {
        let now = Instant::now();
        let idle_age = self.ledger.idle_age();
        let clients = self.clients.len();
        let mut touched = 0;
        for step in 0..clients {
            let index = (self.cursor + step) % clients;
            let pool = &mut self.clients[index];
            while touched < bound {
                let expired = pool
                    .idle
                    .front()
                    .is_some_and(|oldest| now.duration_since(oldest.since) >= idle_age);
                if !expired {
                    break;
                }
                touched += 1;
                pool.idle.pop_front();
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
        for pool in &mut self.clients {
            pool.idle.clear();
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
        let park = mailbox.reserve_release();
        Ok(DialPermit::new(
            charges,
            done,
            park,
            Arc::clone(&self.epoch),
            Arc::clone(&self.ledger),
            client,
        ))
    }
}

fn take_idle(
    pool: &mut ClientPool,
    type_id: TypeId,
    now: Instant,
    idle_age: Duration,
) -> Option<IdleConn> {
    let mut skipped = Vec::new();
    let mut found = None;
    while let Some(entry) = pool.idle.pop_back() {
        if now.duration_since(entry.since) >= idle_age {
            continue; // expired: dropped here, destroyed before release
        }
        if entry.type_id == type_id {
            found = Some(entry);
            break;
        }
        skipped.push(entry);
    }
    pool.idle.extend(skipped.into_iter().rev());
    found
}

fn backoff_refusal(pool: &ClientPool, now: Instant) -> Option<ConnectError> {
    let until = pool.backoff_until.filter(|until| now < *until)?;
    Some(ConnectError::Unavailable {
        kind: pool.last_error.unwrap_or(DialErrorKind::Other),
        retry_after: until - now,
    })
}
