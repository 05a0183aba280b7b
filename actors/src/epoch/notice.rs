//! [`WaitNotice`]: how a client's parks and destroyed connections reach the
//! epoch actor while callers wait for a connection of that client.
//!
//! The epoch actor keeps the callers waiting on a client (behind its dial in
//! flight, or for a connection while the client is at
//! `connections_per_client`). Two things done outside the actor can serve
//! them: a request's task parking a connection in the client's stash, and a
//! connection of the client being destroyed (its client charge returned, so
//! a dial fits). Each is followed by [`WaitNotice::notify`], which sends the
//! actor one `Wake` when callers wait.
//!
//! Invariants:
//! - No lost wake-up: the actor publishes its waiter count
//!   ([`WaitNotice::set_waiting`]) before it looks at the stash and the
//!   client budget a last time, and a notifier changes the stash or the
//!   budget before it reads the count, so at least one of the two sees the
//!   other. A release of the budget reads it after a `SeqCst` fence, which
//!   pairs with the one after the actor's write ([`WaitNotice::notify`]).
//!   A park reads it while it holds the stash's lock, after its push
//!   ([`IdleStash::put`](crate::epoch::idle::IdleStash::put)): the actor's
//!   last look takes the same lock after its write, so the lock orders the
//!   two and the park needs no fence ([`WaitNotice::wake`]).
//! - At most one `Wake` per client is in the actor's mailbox, sent on a
//!   release slot reserved for it, so a full mailbox never loses it; the
//!   actor re-arms the slot ([`WaitNotice::arm`]) before it looks, so a
//!   change after the re-arm sends the next one.
//! - With nobody waiting, a release's notify is one fence and one load,
//!   and a park's costs nothing beyond the load under its lock.

use std::sync::{Arc, PoisonError};

use crate::accounts::Accounts;
use crate::epoch::Msg as EpochMsg;
use crate::mailbox::ReleaseSlot;
use crate::sync::{fence, AtomicUsize, Mutex, Ordering::SeqCst};

/// A reserved way to send one `Wake` to the epoch actor.
pub(crate) trait WakeSlot: Send {
    /// Sends `Wake { client }`; a stopped actor loses it.
    fn wake(self, client: usize);
}

impl WakeSlot for ReleaseSlot<EpochMsg> {
    fn wake(self, client: usize) {
        // A stopped actor has no waiters left to serve.
        let _ = self.send(EpochMsg::Wake { client });
    }
}

/// One client's waiter count and its reserved wake-up slot.
pub(crate) struct WaitNotice<S = ReleaseSlot<EpochMsg>> {
    client: usize,
    waiting: AtomicUsize,
    slot: Mutex<Option<S>>,
    /// The node's accounts, whose `connections_waiting` gauge follows the
    /// count (none in the models).
    accounts: Option<Arc<Accounts>>,
}

impl<S: WakeSlot> WaitNotice<S> {
    /// The notice of client `client`, unarmed and with nobody waiting,
    /// counting its waiters in `accounts`' gauge when given.
    pub(crate) fn new(client: usize, accounts: Option<Arc<Accounts>>) -> Self {
        Self {
            client,
            waiting: AtomicUsize::new(0),
            slot: Mutex::new(None),
            accounts,
        }
    }

    /// Records how many callers the epoch actor keeps waiting on this
    /// client, before the actor's last look at the stash and the budget.
    pub(crate) fn set_waiting(&self, waiting: usize) {
        let before = self.waiting.swap(waiting, SeqCst);
        fence(SeqCst);
        if let Some(accounts) = &self.accounts {
            // One writer at a time sets the count — the epoch actor, or
            // the registry once that actor stopped and before a restart —
            // and the swap returns what it replaced, so the gauge moves by
            // exactly what this client's count moved.
            let gauge = &accounts.gauges.connections_waiting;
            let (up, down) = (
                waiting.saturating_sub(before),
                before.saturating_sub(waiting),
            );
            gauge.fetch_add(
                u32::try_from(up).unwrap_or(u32::MAX),
                crate::sync::Ordering::AcqRel,
            );
            gauge.fetch_sub(
                u32::try_from(down).unwrap_or(u32::MAX),
                crate::sync::Ordering::AcqRel,
            );
        }
    }

    /// True when callers wait on this client.
    pub(crate) fn has_waiters(&self) -> bool {
        self.waiting.load(SeqCst) > 0
    }

    /// Gives the notice a fresh slot of the (current) epoch actor's
    /// mailbox, replacing (and so returning) any older one.
    pub(crate) fn arm(&self, slot: Option<S>) {
        let old = std::mem::replace(
            &mut *self.slot.lock().unwrap_or_else(PoisonError::into_inner),
            slot,
        );
        drop(old);
    }

    /// Tells the epoch actor, when callers wait, that this client's
    /// connection budget changed. Call after the change.
    pub(crate) fn notify(&self) {
        fence(SeqCst);
        if self.waiting.load(SeqCst) == 0 {
            return;
        }
        self.wake();
    }

    /// Tells the epoch actor that this client's stash changed, when the
    /// park that changed it saw callers waiting under the stash's lock.
    pub(crate) fn wake(&self) {
        let slot = self
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // A slot already taken means a `Wake` is on its way, and the actor,
        // re-arming before it looks, will see this change too.
        if let Some(slot) = slot {
            slot.wake(self.client);
        }
    }
}

impl<S> std::fmt::Debug for WaitNotice<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitNotice")
            .field("client", &self.client)
            .field("waiting", &self.waiting.load(SeqCst))
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, loom))]
mod loom_model;
