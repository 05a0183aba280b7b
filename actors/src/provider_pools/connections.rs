//! The connection path: check out a parked connection or dial one.
//!
//! A fresh idle connection of the caller's type is taken from its client's
//! stash directly, with no message hop, while nobody waits on the client;
//! otherwise the caller asks the epoch actor, which gates the dial, applies
//! backoff, or queues the caller (by tenant rotation) behind the dial in
//! flight or until the client, at `connections_per_client`, has a
//! connection parked or room for a dial.

use std::any::TypeId;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::admission::RunningRequest;
use crate::budget::Charge;
use crate::epoch::connection::{
    spawn_dial, ConnectError, DialJob, DialPermit, Dialer, PooledConnection,
};
use crate::epoch::idle::IdleConn;
use crate::epoch::published::PublishedEpoch;
use crate::epoch::{request_checkout, Checkout};
use crate::observe::spans;
use crate::provider_pools::ProviderPools;

impl ProviderPools {
    /// Reserves a connection to `running`'s client: a fresh idle one when
    /// parked, otherwise a new one dialed by a clone of `dialer` in a task
    /// of its own.
    ///
    /// The node's and the client's connection charges are taken before the
    /// dial starts; at most one dial per client is in flight, and callers
    /// arriving meanwhile wait for a connection. A caller whose client is at
    /// `connections_per_client` waits, within its deadline, for one of the
    /// client's connections to be parked (it takes it) or destroyed (it
    /// dials); the waiters of a client are served by tenant rotation, and a
    /// waiter holds no connection charge. During backoff or at the
    /// node-wide `connections` limit the answer is immediate. Nothing is
    /// retried, except the question to the epoch's actor when that actor
    /// stopped before answering (a panic the registry restarts): it is
    /// asked of the restarted actor, within the deadline.
    ///
    /// A dial belongs to the client, not to this call: it runs on the
    /// registry's runtime, bounded by the queue age in force when it starts
    /// (not by this request's deadline), and keeps a clone of `running` —
    /// so the activation and its epoch stay retained while it dials.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, and cancelling backs nothing off. Dropping the future
    /// (or this request's deadline passing) while its dial is in flight
    /// leaves the dial running: a success is parked in the client's idle
    /// stash, charged (destroyed instead when [`Dialer::PARK_UNCLAIMED`] is
    /// false), a failure backs the client off as a real failure. Dropping
    /// it while waiting for a connection of the client loses nothing: its
    /// turn passes to the next waiter, and a connection handed to it as it
    /// left is parked again.
    ///
    /// # Errors
    ///
    /// [`ConnectError::Unavailable`] during backoff or when the awaited dial
    /// failed, [`ConnectError::Dial`] when this caller's dial failed (also
    /// when it did not connect within its dial deadline),
    /// [`ConnectError::Capacity`], [`ConnectError::Busy`],
    /// [`ConnectError::Timeout`] at the request's deadline (also when the
    /// tenant's `connections_per_tenant` share of the client stayed taken
    /// until then), [`ConnectError::Closed`] (also when the epoch's actor
    /// stopped and none will follow), and
    /// [`ConnectError::ShareLapsed`] when the cluster share `running` was
    /// admitted under lapsed before the connection was ready (see
    /// [`RunningRequest::check_share`]; the connection is parked again).
    pub async fn reserve_connection<D: Dialer + Clone + 'static>(
        &self,
        running: &RunningRequest,
        dialer: &D,
    ) -> Result<PooledConnection<D::Conn>, ConnectError> {
        let conn = self.checkout(running, dialer).await?;
        // The last step before the caller sends: a share that lapsed while
        // the connection was found parks it again, sound and unused.
        match running.check_share() {
            Ok(()) => Ok(conn),
            Err(lapsed) => {
                conn.park();
                Err(lapsed)
            }
        }
    }

    /// A connection of `running`'s client for it: the work of
    /// [`Self::reserve_connection`] but its share check.
    ///
    /// # Cancel safety
    ///
    /// As [`Self::reserve_connection`].
    async fn checkout<D: Dialer + Clone + 'static>(
        &self,
        running: &RunningRequest,
        dialer: &D,
    ) -> Result<PooledConnection<D::Conn>, ConnectError> {
        // A rotated epoch still serves the work it accepted; a retired
        // registry has stopped its I/O owner.
        if !self.is_open() {
            return Err(ConnectError::Closed);
        }
        let (epoch, client) = running.client().epoch_entry();
        // The tenant's share of this client first, before anything shared
        // (an idle connection, the node's and the client's charges). At its
        // share, the request waits for one of its tenant's own connections
        // of this client to be parked or destroyed, within its deadline.
        let tenant = epoch
            .client_tenants(client)
            .ok_or(ConnectError::Closed)?
            .charge_within(running.plan().tenant(), 1, running.deadline())
            .await
            .map_err(|_| ConnectError::Timeout)?;
        let type_id = TypeId::of::<D::Conn>();
        let idle_age = self.inner.accounts.idle_age();
        // While callers wait on the client, the epoch actor hands out what
        // is parked by tenant rotation: nobody takes it ahead of them.
        if let Some(entry) = epoch
            .idle(client)
            .filter(|stash| !stash.notice().has_waiters())
            .and_then(|stash| stash.take(type_id, idle_age))
        {
            return reused(entry, tenant, client, running);
        }
        match self.ask_epoch(epoch, client, running, type_id).await? {
            Checkout::Idle(entry) => reused(entry, tenant, client, running),
            Checkout::Dial(permit) => {
                let dial = (permit, tenant, client);
                self.dial_for(running, dialer, dial).await
            }
            Checkout::Refused(refusal) => Err(refusal),
        }
    }

    /// Dials `client` for `running` in a task of its own, with the permit
    /// the epoch actor granted and the tenant's share charge, and waits
    /// for it within the request's deadline.
    ///
    /// # Cancel safety
    ///
    /// Leaving (deadline or drop) leaves the dial running: it completes
    /// into the idle stash or fails on its own.
    async fn dial_for<D: Dialer + Clone + 'static>(
        &self,
        running: &RunningRequest,
        dialer: &D,
        (mut permit, tenant, client): (DialPermit, Charge, usize),
    ) -> Result<PooledConnection<D::Conn>, ConnectError> {
        let lease = running.client();
        let (epoch, _) = lease.epoch_entry();
        let span = tracing::debug_span!(
            spans::DIAL,
            provider = lease.provider().as_str(),
            epoch = lease.epoch().get(),
            client = client as u64,
            outcome = tracing::field::Empty,
            failures = tracing::field::Empty,
            backoff_ms = tracing::field::Empty,
        );
        permit.trace(span.clone());
        let job = DialJob {
            permit,
            epoch: Arc::clone(epoch),
            client,
            owner: running.hold(),
            tenant,
            dial_age: self.inner.accounts.queue_age(),
            span,
        };
        let dialed = spawn_dial(&self.inner.runtime, dialer.clone(), job);
        tokio::time::timeout_at(running.deadline(), dialed)
            .await
            .map_err(|_| ConnectError::Timeout)?
    }
}

/// An idle connection of `running`'s client `client` becomes `running`'s:
/// its idle slot is returned, its connection charges stay with it, and it
/// reaches its epoch through `running`'s client lease.
fn reused<T: Send + 'static>(
    entry: IdleConn,
    tenant: Charge,
    client: usize,
    running: &RunningRequest,
) -> Result<PooledConnection<T>, ConnectError> {
    let IdleConn {
        conn,
        charges,
        idle,
        ..
    } = entry;
    // No longer idle: the idle charge returns now, and the connection
    // keeps the reference to its budget for its next park.
    let idle = idle.and_then(Charge::into_budget);
    match conn.downcast::<T>() {
        Ok(conn) => Ok(
            PooledConnection::new(conn, charges, tenant, client, true, running.hold())
                .keeping_idle_budget(idle),
        ),
        // The stash matched the type; a mismatch cannot reach here, and is
        // destroyed (before `charges` is dropped) like any drop.
        Err(_) => Err(ConnectError::Closed),
    }
}

impl ProviderPools {
    /// Asks the epoch actor for a checkout of `client` for `running`. An
    /// actor that stopped before it answered (a panic the registry
    /// restarts) is asked again once its successor runs, within the
    /// request's deadline and at most [`RESTART_WAIT`] after it stopped.
    ///
    /// # Errors
    ///
    /// [`ConnectError::Closed`] when no actor follows the one that stopped,
    /// or the pools closed; [`ConnectError::Timeout`] at the deadline;
    /// [`ConnectError::Busy`] when the actor's mailbox is full.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an answer the actor gave but the caller never read is
    /// given back (see [`Pending`]).
    async fn ask_epoch(
        &self,
        epoch: &Arc<PublishedEpoch>,
        client: usize,
        running: &RunningRequest,
        type_id: TypeId,
    ) -> Result<Checkout, ConnectError> {
        let deadline = running.deadline();
        let mut actor = epoch.actor().ok_or(ConnectError::Closed)?;
        loop {
            let tenant = running.plan().tenant().clone();
            match request_checkout(&actor, client, tenant, type_id) {
                Ok(answer) => {
                    let mut pending = Pending {
                        answer,
                        epoch: Arc::clone(epoch),
                        client,
                    };
                    match tokio::time::timeout_at(deadline, &mut pending.answer).await {
                        Ok(Ok(answer)) => return Ok(answer),
                        Err(_) => return Err(ConnectError::Timeout),
                        // It stopped with the request in its mailbox.
                        Ok(Err(_)) => {}
                    }
                }
                Err(ConnectError::Closed) => {}
                Err(refused) => return Err(refused),
            }
            if !self.is_open() {
                return Err(ConnectError::Closed);
            }
            let stopped = actor.actor().get_id();
            let wait = deadline.min(Instant::now() + RESTART_WAIT);
            actor = match epoch.successor(stopped, wait).await {
                Some(successor) => successor,
                None if Instant::now() >= deadline => return Err(ConnectError::Timeout),
                None => return Err(ConnectError::Closed),
            };
        }
    }
}

/// How long a checkout waits for the successor of an epoch actor that
/// stopped before answering. The registry restarts a failed epoch actor in
/// one of its turns; an actor not replaced by then has a registry that is
/// gone, or none will follow.
const RESTART_WAIT: Duration = Duration::from_secs(1);

/// The epoch actor's answer to a checkout, while the caller waits for it.
///
/// A caller that leaves (deadline, drop) after the actor answered but before
/// it read the answer does not destroy what it was handed: a parked
/// connection is parked again for the next waiter, and an unused dial
/// permit is abandoned (no dial, no backoff).
struct Pending {
    answer: oneshot::Receiver<Checkout>,
    epoch: Arc<PublishedEpoch>,
    client: usize,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.answer.close();
        if let Ok(Checkout::Idle(entry)) = self.answer.try_recv() {
            self.epoch.park(self.client, entry);
        }
    }
}
