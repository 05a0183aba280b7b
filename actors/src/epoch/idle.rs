//! The idle connections of one configured client: a short stack under one
//! lock, kept by the epoch, so that the common checkout and park take no
//! message hop.
//!
//! A request's task takes the most recently parked connection of its type
//! ([`IdleStash::take`]) and parks a verified-reusable one directly
//! (`PublishedEpoch::park`, which finds the client's stash and puts the
//! connection in it with [`park_into`]). The epoch actor keeps everything
//! else: dials, backoff, the callers waiting for a connection, the bounded
//! reclaim scan and retirement, which all reach the same stash.
//!
//! Each entry is an [`IdleConn`]: the connection, boxed, with its
//! [`ConnCharges`], its idle charge and its closure notice, if any.
//!
//! Invariants:
//! - An entry holds its connection's charges and one of the node's
//!   `idle_connections`, taken before it is pushed; a connection is
//!   destroyed (dropped) before any of its charges is returned.
//! - Nothing is dropped while the lock is held: expired and refused entries
//!   are destroyed after it is released, so a connection's `Drop` (adapter
//!   code) never runs under it, and each critical section is a few pushes
//!   and pops.
//! - Entries left when the stash itself is dropped (its last owner may be a
//!   control actor) or when a restarted epoch actor starts are destroyed
//!   with each destructor's panic contained.
//!   Elsewhere a panicking destructor unwinds in whoever destroys the
//!   entry — the epoch actor (then restarted by its supervisor, after the
//!   other entries are destroyed too) or the request's own task — and the
//!   entry's charges are released all the same.
//! - A retired epoch keeps no idle connection: retirement empties the stash,
//!   and a park that raced the retirement empties it again after pushing
//!   (the retired flag is set before the epoch actor is told, and checked
//!   after the push, so one of the two always sees the entry).
//! - A connection whose closure notice fired (its driver saw the peer
//!   close) is never taken; the notice evicts it at once (see
//!   `watch.rs`).
//! - A caller waiting on the client never misses a parked connection: the
//!   epoch actor publishes its waiters in the stash's [`WaitNotice`] before
//!   it looks at the stash a last time, under the stash's lock; a park
//!   reads that count under the same lock after its push, and wakes the
//!   actor when it is not zero.
//! - The lock and the stack's header sit on cache lines of their own:
//!   what every checkout and park writes shares no line with what the
//!   other worker threads only read.

use std::any::{Any, TypeId};
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crossbeam_utils::CachePadded;
use tokio::time::Instant;

use crate::budget::{Budget, Charge, Exhausted};
use crate::epoch::charges::ConnCharges;
use crate::epoch::notice::WaitNotice;
use crate::epoch::watch::CloseWatch;
use crate::sync::{Mutex, MutexGuard};

/// A parked connection, kept by its epoch in the client's idle stash.
pub(crate) struct IdleConn {
    pub(crate) conn: Box<dyn Any + Send>,
    pub(crate) charges: ConnCharges,
    /// One of the node's `idle_connections`, taken when the stash accepts
    /// the connection.
    pub(crate) idle: Option<Charge>,
    pub(crate) type_id: TypeId,
    pub(crate) since: Instant,
    /// How its socket's owner says the peer closed it, when the adapter
    /// parked it with one.
    pub(crate) watch: Option<CloseWatch>,
}

impl IdleConn {
    /// A connection `conn` charged to `node` and `client` (and to `idle`
    /// when given), parked now, with no closure notice: for the stash's
    /// tests and models.
    #[cfg(test)]
    pub(crate) fn charged<T: Any + Send>(
        conn: T,
        node: &Arc<crate::budget::Budget>,
        client: &Arc<crate::budget::Budget>,
        idle: Option<&Arc<crate::budget::Budget>>,
    ) -> Self {
        Self {
            conn: Box::new(conn),
            charges: ConnCharges::new(
                node.try_reserve(1).expect("room for the node's charge"),
                client.try_reserve(1).expect("room for the client's charge"),
                Arc::new(WaitNotice::new(0, None)),
            ),
            idle: idle.map(|idle| idle.try_reserve(1).expect("room for the idle charge")),
            type_id: TypeId::of::<T>(),
            since: Instant::now(),
            watch: None,
        }
    }

    /// True when its closure notice has fired.
    pub(crate) fn is_closed(&self) -> bool {
        self.watch.as_ref().is_some_and(CloseWatch::is_closed)
    }
}

/// One client's parked connections, oldest first.
pub(crate) struct IdleStash {
    /// On cache lines of its own: every checkout and park of the client
    /// writes the lock, from every worker thread, and a line it shared
    /// with the epoch's read-mostly fields would make each of those reads
    /// a miss whenever another thread had just taken the lock.
    entries: CachePadded<Mutex<VecDeque<IdleConn>>>,
    /// The callers the epoch actor keeps waiting on this client, and how
    /// parks and destroyed connections wake it.
    notice: Arc<WaitNotice>,
}

impl fmt::Debug for IdleStash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdleStash")
            .field("idle", &self.lock().len())
            .field("notice", &self.notice)
            .finish()
    }
}

impl IdleStash {
    /// The empty stash of client `client`, its waiters counted in
    /// `accounts`' gauge when given.
    pub(crate) fn new(client: usize, accounts: Option<Arc<crate::accounts::Accounts>>) -> Self {
        Self {
            entries: CachePadded::new(Mutex::new(VecDeque::new())),
            notice: Arc::new(WaitNotice::new(client, accounts)),
        }
    }

    /// The client's waiter count and wake-up, shared with every connection
    /// charged to the client.
    pub(crate) fn notice(&self) -> &Arc<WaitNotice> {
        &self.notice
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<IdleConn>> {
        // Nothing that can panic runs under the lock; a poisoned one still
        // holds consistent entries.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The most recently parked fresh connection of type `type_id`; expired
    /// and closed entries met on the way are destroyed (after the lock is
    /// released).
    pub(crate) fn take(&self, type_id: TypeId, idle_age: Duration) -> Option<IdleConn> {
        let now = Instant::now();
        let mut expired = Vec::new();
        let mut skipped = Vec::new();
        let mut entries = self.lock();
        let mut found = None;
        while let Some(entry) = entries.pop_back() {
            if entry.is_closed() || now.saturating_duration_since(entry.since) >= idle_age {
                expired.push(entry);
            } else if entry.type_id == type_id {
                found = Some(entry);
                break;
            } else {
                skipped.push(entry);
            }
        }
        if !skipped.is_empty() {
            entries.extend(skipped.into_iter().rev());
        }
        drop(entries);
        drop(expired);
        if let Some(watch) = found.as_ref().and_then(|entry| entry.watch.as_ref()) {
            watch.clear_home();
        }
        found
    }

    /// Destroys the entries whose closure notice fired (after the lock is
    /// released). Returns how many it destroyed.
    pub(crate) fn evict_closed(&self) -> usize {
        let mut closed = Vec::new();
        let mut entries = self.lock();
        let mut kept = VecDeque::with_capacity(entries.len());
        for entry in entries.drain(..) {
            if entry.is_closed() {
                closed.push(entry);
            } else {
                kept.push_back(entry);
            }
        }
        *entries = kept;
        drop(entries);
        let evicted = closed.len();
        drop(closed);
        evicted
    }

    /// Pushes an accepted entry; returns whether callers wait on the
    /// client, read under the lock after the push (the epoch actor's last
    /// look takes the lock after it counts them, so one of the two sees
    /// the other).
    pub(in crate::epoch) fn put(&self, entry: IdleConn) -> bool {
        let mut entries = self.lock();
        entries.push_back(entry);
        let waiting = self.notice.has_waiters();
        drop(entries);
        waiting
    }

    /// Entries parked now (for the model checks).
    #[cfg(all(test, loom))]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Pushes an entry as it is, without the checks of [`park_into`].
    #[cfg(test)]
    pub(crate) fn restore(&self, entry: IdleConn) {
        self.lock().push_back(entry);
    }

    /// Takes the oldest entry, whatever its type (to destroy it when a
    /// caller of another type needs its room).
    pub(crate) fn take_oldest(&self) -> Option<IdleConn> {
        let oldest = self.lock().pop_front();
        if let Some(watch) = oldest.as_ref().and_then(|entry| entry.watch.as_ref()) {
            watch.clear_home();
        }
        oldest
    }

    /// Destroys expired entries, oldest first, touching at most `bound`.
    /// Returns how many it destroyed.
    pub(crate) fn reclaim(&self, idle_age: Duration, bound: usize) -> usize {
        let now = Instant::now();
        let mut expired = Vec::new();
        let mut entries = self.lock();
        while expired.len() < bound {
            let stale = entries
                .front()
                .is_some_and(|oldest| now.saturating_duration_since(oldest.since) >= idle_age);
            if !stale {
                break;
            }
            expired.extend(entries.pop_front());
        }
        drop(entries);
        let touched = expired.len();
        drop(expired);
        touched
    }

    /// Destroys every entry (retirement). A panicking destructor unwinds
    /// here, after every other entry is destroyed.
    pub(crate) fn clear(&self) {
        let entries = std::mem::take(&mut *self.lock());
        drop(entries);
    }

    /// Destroys every entry a failed epoch actor left, each destructor's
    /// panic contained: a restarted actor must start whatever the
    /// connections of the one it replaces do.
    pub(crate) fn clear_contained(&self) {
        let entries = std::mem::take(&mut *self.lock());
        destroy_contained(entries);
    }
}

impl Drop for IdleStash {
    fn drop(&mut self) {
        // The last owner of an epoch may be a control actor (the registry
        // dropping a retired record): what is still parked is destroyed
        // here with each destructor contained.
        let entries = std::mem::take(
            self.entries
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
        );
        destroy_contained(entries);
    }
}

/// Destroys `entries` one by one with each destructor's panic contained,
/// so a panicking one neither fails the actor doing it nor keeps the rest
/// from being destroyed and released.
fn destroy_contained(entries: VecDeque<IdleConn>) {
    for entry in entries {
        crate::contain::drop_contained(entry, "an idle connection");
    }
}

/// The node's `idle_connections` budget a park charges, and the reference
/// to it the parked connection kept, if any.
pub(crate) struct Idle<'a> {
    pub(crate) budget: &'a Arc<Budget>,
    pub(crate) kept: Option<Arc<Budget>>,
}

impl Idle<'_> {
    /// One idle charge, on the kept reference when there is one.
    fn charge(self) -> Result<Charge, Exhausted> {
        match self.kept {
            Some(kept) => {
                debug_assert!(Arc::ptr_eq(&kept, self.budget), "another budget");
                kept.try_reserve_owned(1)
            }
            None => self.budget.try_reserve(1),
        }
    }
}

impl<'a> From<&'a Arc<Budget>> for Idle<'a> {
    fn from(budget: &'a Arc<Budget>) -> Self {
        Self { budget, kept: None }
    }
}

/// Parks `entry` in `stash`, touching only these parts: the epoch's retired
/// flag (`retired`), the node's `idle` budget; `homed` runs just before the
/// push with the entry's closure notice, when it has one (it points the
/// notice at the stash). An entry that
/// already holds its idle charge keeps it; one refused (the epoch is
/// retired, or the idle pool is full) is destroyed.
pub(crate) fn park_into<'a>(
    stash: &IdleStash,
    retired: &dyn Fn() -> bool,
    idle: impl Into<Idle<'a>>,
    mut entry: IdleConn,
    homed: impl FnOnce(&CloseWatch),
) {
    if retired() {
        return; // dropping `entry` destroys, then releases
    }
    if entry.idle.is_none() {
        match idle.into().charge() {
            Ok(charge) => entry.idle = Some(charge),
            Err(full) => {
                tracing::debug!(%full, "idle pool full; connection destroyed");
                return;
            }
        }
    }
    let watch = entry.watch.clone();
    if let Some(watch) = &watch {
        homed(watch);
    }
    let waiting = stash.put(entry);
    if watch.as_ref().is_some_and(CloseWatch::is_closed) {
        // The notice fired around the push and may have missed the entry.
        stash.evict_closed();
    }
    if retired() {
        // Raced a retirement that may have emptied the stash before the
        // push: empty it again.
        stash.clear();
    } else if waiting {
        stash.notice().wake();
    }
}

#[cfg(test)]
mod tests;

#[cfg(all(test, loom))]
mod loom_model;
