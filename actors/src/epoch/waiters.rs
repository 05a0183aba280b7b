//! [`Waiters`]: the callers waiting for a connection of one client, served
//! by tenant rotation.
//!
//! A caller waits here behind the client's dial in flight, or while the
//! client is at `connections_per_client`, until a parked connection or room
//! for a dial reaches it. Each tenant queues its own callers in arrival
//! order; the tenants take turns, so one tenant's waiters never stand in
//! front of every other tenant's.
//!
//! Invariants:
//! - [`Waiters::next`] serves the front tenant's oldest caller and moves that
//!   tenant to the back of the rotation (it leaves the rotation when it has
//!   nobody left waiting); a tenant that starts waiting joins at the back.
//! - A caller that left (its receiver dropped) is never served: it is
//!   skipped, and pruned whenever the queue has doubled since the last
//!   prune, so a client nothing frees for a long time does not accumulate
//!   departed callers past twice the live ones.
//! - `len` counts every queued caller, departed or not: it is what the
//!   stash's notice publishes, and over-counting only costs a wake-up.

use std::any::TypeId;
use std::collections::{HashMap, VecDeque};

use tokio::sync::oneshot;

use crate::epoch::Checkout;
use crate::identity::TenantId;

/// One caller waiting for a connection of a given type.
pub(crate) struct Waiter {
    pub(crate) tenant: TenantId,
    pub(crate) type_id: TypeId,
    pub(crate) reply: oneshot::Sender<Checkout>,
}

/// The callers waiting on one client, per tenant, in rotation.
#[derive(Default)]
pub(crate) struct Waiters {
    /// Tenants with someone waiting, next to be served first.
    rotation: VecDeque<TenantId>,
    queues: HashMap<TenantId, VecDeque<Waiter>>,
    len: usize,
    /// `len` at which departed callers are pruned next.
    prune_at: usize,
}

const MIN_PRUNE: usize = 64;

impl Waiters {
    /// Callers queued, departed ones included.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Queues `waiter` behind its tenant's earlier callers.
    pub(crate) fn push(&mut self, waiter: Waiter) {
        if self.len >= self.prune_at.max(MIN_PRUNE) {
            self.prune();
        }
        let queue = match self.queues.get_mut(&waiter.tenant) {
            Some(queue) => queue,
            None => {
                self.rotation.push_back(waiter.tenant.clone());
                self.queues.entry(waiter.tenant.clone()).or_default()
            }
        };
        queue.push_back(waiter);
        self.len += 1;
    }

    /// Puts `waiter`, just taken by [`next`](Self::next) and not served,
    /// back where it was: first of its tenant, its tenant first in turn.
    pub(crate) fn put_back(&mut self, waiter: Waiter) {
        let tenant = waiter.tenant.clone();
        match self.queues.get_mut(&tenant) {
            Some(queue) => {
                queue.push_front(waiter);
                if let Some(at) = self.rotation.iter().position(|t| *t == tenant) {
                    self.rotation.remove(at);
                }
            }
            None => {
                self.queues.insert(tenant.clone(), VecDeque::from([waiter]));
            }
        }
        self.rotation.push_front(tenant);
        self.len += 1;
    }

    /// The next live caller by the rotation; departed ones met on the way
    /// are dropped.
    pub(crate) fn next(&mut self) -> Option<Waiter> {
        self.next_where(|_| true)
    }

    /// The next live caller by the rotation whose connection type passes
    /// `fits`; tenants whose oldest live caller does not fit keep their
    /// turn. Each tenant is looked at once.
    pub(crate) fn next_where(&mut self, mut fits: impl FnMut(TypeId) -> bool) -> Option<Waiter> {
        let mut at = 0;
        while at < self.rotation.len() {
            let tenant = &self.rotation[at];
            let Some(queue) = self.queues.get_mut(tenant) else {
                self.rotation.remove(at);
                continue;
            };
            while queue.front().is_some_and(|w| w.reply.is_closed()) {
                queue.pop_front();
                self.len -= 1;
            }
            let found = match queue.front() {
                Some(front) if fits(front.type_id) => queue.pop_front(),
                Some(_) => {
                    // Not served: it keeps its place in the rotation.
                    at += 1;
                    continue;
                }
                None => None,
            };
            let tenant = self.rotation.remove(at)?;
            if queue.is_empty() {
                self.queues.remove(&tenant);
            } else {
                self.rotation.push_back(tenant);
            }
            if let Some(found) = found {
                self.len -= 1;
                return Some(found);
            }
        }
        None
    }

    /// Takes every queued caller (to refuse them all).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Waiter> {
        self.rotation.clear();
        self.len = 0;
        std::mem::take(&mut self.queues)
            .into_values()
            .flat_map(VecDeque::into_iter)
    }

    fn prune(&mut self) {
        for queue in self.queues.values_mut() {
            queue.retain(|w| !w.reply.is_closed());
        }
        self.queues.retain(|_, queue| !queue.is_empty());
        let queues = &self.queues;
        self.rotation.retain(|t| queues.contains_key(t));
        self.len = self.queues.values().map(VecDeque::len).sum();
        self.prune_at = self.len.saturating_mul(2);
    }
}

#[cfg(test)]
mod tests;
