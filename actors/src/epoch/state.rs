//! The epoch actor's connection state: per client, the dial gate, the
//! backoff and the callers waiting for a connection. The parked connections
//! themselves live in the epoch's per-client idle stash (`epoch::idle`),
//! which request tasks also reach directly for the common checkout and park.
//!
//! Invariants:
//! - At most one dial in flight per client: the gate records the dial that
//!   holds it, and only that dial's outcome opens it (a permit withdrawn
//!   before it reached a caller never held it). A caller that finds nothing
//!   idle waits here (`epoch::waiters`, by tenant rotation) behind the dial
//!   in flight, or while the client is at `connections_per_client`, until a
//!   parked connection or room for a dial reaches it, within its own
//!   deadline. It holds no connection charge while it waits: the node's and
//!   the client's are taken once, when its dial starts.
//! - A failed or cancelled dial sets backoff = the fixed dial backoff after
//!   that many consecutive failures; during backoff a checkout is refused at
//!   once with the last error's kind, and every waiter with it. A
//!   successful dial resets it. The node-wide `connections` limit refuses
//!   at once too.
//! - Idle connections are taken most recent first, each checked for expiry
//!   at checkout; a retired epoch keeps none, nor does a restarted actor.
//! - No lost wake-up: the waiter count is published in the client's
//!   [`WaitNotice`](crate::epoch::notice::WaitNotice) before the actor's
//!   last look at the stash and the client budget, and a park or a
//!   destroyed connection of the client after that look sends a `Wake`.
//! - A reclaim scan touches at most its bound of idle entries.
//! - The waiters go with the actor: when it stops (drained, or failed),
//!   the registry sets its clients' waiter counts back to zero before any
//!   restart (`PublishedEpoch::forget_waiters`), so the node's `waiting`
//!   gauge never keeps counting callers of a stopped actor — a departed
//!   caller is otherwise counted until the actor's next look, which a stop
//!   that overtakes a queued `Wake` never comes to. The registry does it,
//!   not the state's `Drop`, because the registry hears every stop before
//!   it restarts the actor: one writer at a time sets the counts.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::accounts::Accounts;
use crate::epoch::charges::ConnCharges;
use crate::epoch::connection::{ConnectError, DialErrorKind, DialOutcome, DialPermit};
use crate::epoch::idle::IdleStash;
use crate::epoch::published::PublishedEpoch;
use crate::epoch::waiters::{Waiter, Waiters};
use crate::epoch::{Checkout, Msg};
use crate::limits::DialBackoff;
use crate::mailbox::Mailbox;

#[derive(Default)]
struct ClientState {
    /// The dial holding the client's gate, if any.
    dialing: Option<u64>,
    waiters: Waiters,
    failures: u32,
    backoff_until: Option<Instant>,
    last_error: Option<DialErrorKind>,
}

/// Why no dial could be reserved.
enum NoDial {
    /// The client is at `connections_per_client`: wait for one to go.
    ClientFull,
    /// Answered at once.
    Refused(ConnectError),
}

pub(crate) struct Clients {
    clients: Vec<ClientState>,
    epoch: Arc<PublishedEpoch>,
    accounts: Arc<Accounts>,
    backoff: DialBackoff,
    retired: bool,
    /// Where the next reclaim scan starts.
    cursor: usize,
    /// The id of the next dial permit (unique within this actor).
    next_dial: u64,
}

impl Clients {
    pub(crate) fn new(
        mailbox: &Mailbox<Msg>,
        epoch: Arc<PublishedEpoch>,
        accounts: Arc<Accounts>,
        backoff: DialBackoff,
    ) -> Self {
        // A restarted actor starts empty: the failed one's idle connections
        // are destroyed with it, each releasing its charges once, and its
        // waiters heard `Closed` when their replies were dropped with it.
        for stash in epoch.all_idle() {
            stash.clear_contained();
            stash.notice().set_waiting(0);
            stash.notice().arm(mailbox.reserve_release());
        }
        Self {
            clients: (0..epoch.client_count())
                .map(|_| ClientState::default())
                .collect(),
            retired: epoch.is_retired(),
            epoch,
            accounts,
            backoff,
            cursor: 0,
            next_dial: 0,
        }
    }

    /// Answers a checkout now, or queues it until a connection or room for
    /// a dial reaches it.
    pub(crate) fn checkout(&mut self, mailbox: &Mailbox<Msg>, client: usize, waiter: Waiter) {
        let idle_age = self.accounts.idle_age();
        let (Some(pool), Some(stash)) = (self.clients.get_mut(client), self.epoch.idle(client))
        else {
            let _ = waiter.reply.send(Checkout::Refused(ConnectError::Closed));
            return;
        };
        if pool.waiters.len() == 0 {
            if let Some(conn) = stash.take(waiter.type_id, idle_age) {
                let _ = waiter.reply.send(Checkout::Idle(conn));
                return;
            }
        }
        if let Some(refusal) = backoff_refusal(pool, Instant::now()) {
            let _ = waiter.reply.send(Checkout::Refused(refusal));
            return;
        }
        pool.waiters.push(waiter);
        self.serve(mailbox, client);
    }

    /// A park or a destroyed connection of `client` while callers waited:
    /// re-arm the notice, then serve them.
    pub(crate) fn wake(&mut self, mailbox: &Mailbox<Msg>, client: usize) {
        if let Some(stash) = self.epoch.idle(client) {
            stash.notice().arm(mailbox.reserve_release());
        }
        self.serve(mailbox, client);
    }

    /// Dial `dial` ended: record success or backoff, open the gate if that
    /// dial held it, then serve the waiters — from the stash first, then by
    /// the next dial.
    pub(crate) fn dial_done(
        &mut self,
        mailbox: &Mailbox<Msg>,
        client: usize,
        dial: u64,
        outcome: DialOutcome,
        at: Instant,
        span: &tracing::Span,
    ) {
        let backoff = self.backoff;
        let Some(pool) = self.clients.get_mut(client) else {
            return;
        };
        match outcome {
            DialOutcome::Connected => {
                pool.failures = 0;
                pool.backoff_until = None;
            }
            // The adapter had no room of its own; the origin was never
            // tried. No backoff: the gate opens for the next waiter.
            DialOutcome::Failed(DialErrorKind::Saturated) => {}
            // No dial happened: the permit was withdrawn before it reached
            // a caller (which never held the gate), or the caller left
            // before dialing with it. Nothing was tried, so no backoff.
            DialOutcome::Withdrawn | DialOutcome::Abandoned => {}
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
            }
        }
        if pool.dialing == Some(dial) {
            pool.dialing = None;
        }
        self.serve(mailbox, client);
    }

    /// Serves `client`'s waiters by tenant rotation: parked connections
    /// first, then one dial when none is in flight and the client has room.
    /// During backoff every waiter is refused.
    fn serve(&mut self, mailbox: &Mailbox<Msg>, client: usize) {
        let idle_age = self.accounts.idle_age();
        let (Some(pool), Some(stash)) = (self.clients.get_mut(client), self.epoch.idle(client))
        else {
            return;
        };
        // Published before the last looks below, so a park or a release
        // after them sends a `Wake`.
        stash.notice().set_waiting(pool.waiters.len());
        hand_out_parked(&self.epoch, client, pool, stash, idle_age);
        if let Some(refusal) = backoff_refusal(pool, Instant::now()) {
            for waiter in pool.waiters.drain() {
                let _ = waiter.reply.send(Checkout::Refused(refusal.clone()));
            }
        }
        let dials = Dials {
            epoch: &self.epoch,
            accounts: &self.accounts,
            mailbox,
            client,
            idle_age,
            next: &mut self.next_dial,
        };
        dials.start(pool, stash);
        stash.notice().set_waiting(pool.waiters.len());
    }

    /// Destroys expired idle connections, touching at most `bound` entries.
    /// Returns how many it touched.
    pub(crate) fn reclaim(&mut self, bound: usize) -> usize {
        let idle_age = self.accounts.idle_age();
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
}

/// Hands parked connections to `client`'s waiters that want their type,
/// in rotation order.
fn hand_out_parked(
    epoch: &Arc<PublishedEpoch>,
    client: usize,
    pool: &mut ClientState,
    stash: &IdleStash,
    idle_age: Duration,
) {
    loop {
        let mut taken = None;
        let Some(waiter) = pool.waiters.next_where(|type_id| {
            taken = stash.take(type_id, idle_age);
            taken.is_some()
        }) else {
            return;
        };
        let Some(entry) = taken else {
            pool.waiters.put_back(waiter);
            return;
        };
        if let Err(Checkout::Idle(back)) = waiter.reply.send(Checkout::Idle(entry)) {
            // The caller left; the connection stays idle (a retired
            // epoch destroys it).
            epoch.park(client, back);
        }
    }
}

/// What starting one client's dials needs.
struct Dials<'a> {
    epoch: &'a Arc<PublishedEpoch>,
    accounts: &'a Arc<Accounts>,
    mailbox: &'a Mailbox<Msg>,
    client: usize,
    idle_age: Duration,
    /// The epoch's next dial id.
    next: &'a mut u64,
}

impl Dials<'_> {
    /// Gives the next waiters a dial permit until one holds the client's
    /// dial gate or the client is full.
    fn start(self, pool: &mut ClientState, stash: &IdleStash) {
        let Self {
            epoch,
            accounts,
            mailbox,
            client,
            idle_age,
            next,
        } = self;
        while pool.dialing.is_none() {
            let Some(waiter) = pool.waiters.next() else {
                break;
            };
            let dial = *next;
            *next += 1;
            let mut reserved = reserve_dial(epoch, accounts, mailbox, client, dial);
            if matches!(reserved, Err(NoDial::ClientFull)) {
                // A connection of its type parked since the look above
                // serves it; what is still parked then fits no waiter: the
                // oldest makes room, or a caller of another connection type
                // would wait behind it until it expired.
                if let Some(entry) = stash.take(waiter.type_id, idle_age) {
                    if let Err(Checkout::Idle(back)) = waiter.reply.send(Checkout::Idle(entry)) {
                        epoch.park(client, back);
                    }
                    continue;
                }
                if let Some(unwanted) = stash.take_oldest() {
                    drop(unwanted);
                    reserved = reserve_dial(epoch, accounts, mailbox, client, dial);
                }
            }
            let permit = match reserved {
                Ok(permit) => permit,
                Err(NoDial::ClientFull) => {
                    pool.waiters.put_back(waiter);
                    break;
                }
                Err(NoDial::Refused(refusal)) => {
                    let _ = waiter.reply.send(Checkout::Refused(refusal));
                    continue;
                }
            };
            match waiter.reply.send(Checkout::Dial(permit)) {
                Ok(()) => pool.dialing = Some(dial),
                // The caller left before its turn; no dial happened, and
                // its permit never held the gate.
                Err(Checkout::Dial(permit)) => permit.withdraw(),
                Err(_) => {}
            }
        }
    }
}

/// Reserves the client's and the node's connection charges and the mailbox
/// room for a dial's outcome.
fn reserve_dial(
    epoch: &Arc<PublishedEpoch>,
    accounts: &Arc<Accounts>,
    mailbox: &Mailbox<Msg>,
    client: usize,
    dial: u64,
) -> Result<DialPermit, NoDial> {
    let (Some(per_client), Some(stash)) = (epoch.client_connections(client), epoch.idle(client))
    else {
        return Err(NoDial::Refused(ConnectError::Closed));
    };
    let own = per_client.try_reserve(1).map_err(|_| NoDial::ClientFull)?;
    let node = accounts
        .connections
        .try_reserve(1)
        .map_err(|full| NoDial::Refused(full.into()))?;
    let charges = ConnCharges::new(node, own, Arc::clone(stash.notice()));
    let done = mailbox
        .reserve_release()
        .ok_or(NoDial::Refused(ConnectError::Busy))?;
    Ok(DialPermit::new(
        charges,
        done,
        Arc::clone(epoch),
        Arc::clone(accounts),
        client,
        dial,
    ))
}

fn backoff_refusal(pool: &ClientState, now: Instant) -> Option<ConnectError> {
    let until = pool.backoff_until.filter(|until| now < *until)?;
    Some(ConnectError::Unavailable {
        kind: pool.last_error.unwrap_or(DialErrorKind::Other),
        retry_after: until - now,
    })
}
