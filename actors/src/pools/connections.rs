//! The connection path: check out a parked connection or dial one.
//!
//! A fresh idle connection of the caller's type is taken from its client's
//! stash directly, with no message hop; only when none is idle does the
//! caller ask the epoch actor, which gates the dial, applies backoff, or
//! queues the caller behind the dial in flight.

use std::any::TypeId;
use std::sync::Arc;

use tokio::sync::oneshot;
use tracing::Instrument;

use crate::admission::RunningRequest;
use crate::connection::{ConnectError, DialTarget, Dialer, IdleConn, PooledConnection};
use crate::epoch::actor::Msg as EpochMsg;
use crate::epoch::pool::Checkout;
use crate::epoch::published::PublishedEpoch;
use crate::mailbox::MailboxError;
use crate::observe::spans;
use crate::pools::ProviderPools;

impl ProviderPools {
    /// Reserves a connection to `running`'s client: a fresh idle one when
    /// parked, otherwise a new one dialed by `dialer` in this task.
    ///
    /// The node's and the client's connection charges are taken before the
    /// dial starts; at most one dial per client is in flight, and callers
    /// arriving meanwhile share its outcome. During backoff or at a limit
    /// the answer is immediate. Nothing is retried.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future while dialing drops the dial (counted as a
    /// cancelled dial: the client backs off) and returns its charges;
    /// dropping it while waiting on another caller's dial loses nothing.
    ///
    /// # Errors
    ///
    /// [`ConnectError::Unavailable`] during backoff or when the awaited dial
    /// failed, [`ConnectError::Dial`] when this caller's dial failed,
    /// [`ConnectError::Capacity`], [`ConnectError::Busy`],
    /// [`ConnectError::Timeout`] at the request's deadline (also when the
    /// tenant's `connections_per_tenant` share of the client stayed taken
    /// until then), and
    /// [`ConnectError::Closed`].
    pub async fn reserve_connection<D: Dialer>(
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
        let idle_age = self.inner.ledger.idle_age();
        if let Some(entry) = epoch
            .idle(client)
            .and_then(|stash| stash.take(type_id, idle_age))
        {
            return reused(entry, tenant, epoch, client, running);
        }
        let mailbox = epoch.actor().ok_or(ConnectError::Closed)?;
        let (reply, answer) = oneshot::channel();
        let msg = EpochMsg::Checkout {
            client,
            type_id,
            reply,
        };
        mailbox.try_send(msg).map_err(|err| match err {
            MailboxError::Busy(_) | MailboxError::Timeout(_) => ConnectError::Busy,
            MailboxError::Closed => ConnectError::Closed,
        })?;
        let answer = tokio::time::timeout_at(running.deadline(), answer)
            .await
            .map_err(|_| ConnectError::Timeout)?
            .map_err(|_| ConnectError::Closed)?;
        match answer {
            Checkout::Idle(entry) => reused(entry, tenant, epoch, client, running),
            Checkout::Dial(mut permit) => {
                let lease = running.client();
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
                let target = DialTarget {
                    target: epoch.client_target(client),
                    settings: &epoch.config.settings,
                    credential: epoch.credential(),
                };
                let dial = dialer.dial(target).instrument(span);
                let dialed = tokio::time::timeout_at(running.deadline(), dial)
                    .await
                    .map_err(|_| ConnectError::Timeout);
                match dialed {
                    Ok(dialed) => permit.finish(dialed, tenant, running.clone()),
                    // Dropping the permit reports a cancelled dial.
                    Err(timeout) => Err(timeout),
                }
            }
            Checkout::Refused(refusal) => Err(refusal),
        }
    }
}

/// An idle connection becomes `running`'s: its idle slot is returned, its
/// connection charges stay with it.
fn reused<T: Send + 'static>(
    entry: IdleConn,
    tenant: crate::budget::Charge,
    epoch: &Arc<PublishedEpoch>,
    client: usize,
    running: &RunningRequest,
) -> Result<PooledConnection<T>, ConnectError> {
    let IdleConn {
        conn,
        charges,
        idle,
        ..
    } = entry;
    drop(idle);
    match conn.downcast::<T>() {
        Ok(conn) => Ok(PooledConnection::new(
            conn,
            charges,
            tenant,
            Arc::clone(epoch),
            client,
            true,
            running.clone(),
        )),
        // The stash matched the type; a mismatch cannot reach here, and is
        // destroyed (before `charges` is dropped) like any drop.
        Err(_) => Err(ConnectError::Closed),
    }
}
