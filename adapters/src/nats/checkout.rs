//! [`CheckedOut`]: a checked-out NATS connection that is parked or closed, never
//! just dropped, and [`CheckedOut::run`], one operation on it bounded by the
//! request's deadline and the client's first fault.
//!
//! Invariants:
//! - A connection is parked only when the operation succeeded (or failed
//!   in a way that leaves the connection sound) and the client is healthy.
//! - Every other end — an error, a fault, the deadline, a dropped future —
//!   hands the connection to the cleanup actor, which drains the client
//!   and releases the connection's charges only after its tasks are gone.
//!   Only when cleanup refuses (no slot, shut down) is the connection
//!   dropped in place; its driver job still accounts for the client until
//!   the client's tasks have ended.

use std::future::Future;

use provider_pools_actors::{PooledConnection, ProviderPools, RunningRequest};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::nats::connection::NatsConnection;
use crate::nats::dialer::NatsDialer;
use crate::nats::error::NatsError;
use crate::nats::health::{self, Fault, Health};

/// A connection checked out for one operation (or one fetched batch).
#[derive(Debug)]
pub(crate) struct CheckedOut {
    conn: Option<PooledConnection<NatsConnection>>,
    pools: ProviderPools,
}

impl CheckedOut {
    /// Checks out a connection that is still reusable: an idle one whose
    /// client failed meanwhile is closed and the next one taken.
    pub(crate) async fn reserve(
        pools: &ProviderPools,
        running: &RunningRequest,
        dialer: &NatsDialer,
    ) -> Result<Self, NatsError> {
        // Bounded: a dead idle connection is closed on each turn, and the
        // idle pool of a client is finite; the last turn dials.
        for _ in 0..4 {
            let conn = pools.reserve_connection(running, dialer).await?;
            let held = Self {
                conn: Some(conn),
                pools: pools.clone(),
            };
            if held.conn().is_reusable() {
                return Ok(held);
            }
        }
        let conn = pools.reserve_connection(running, dialer).await?;
        Ok(Self {
            conn: Some(conn),
            pools: pools.clone(),
        })
    }

    pub(crate) fn conn(&self) -> &NatsConnection {
        match &self.conn {
            Some(conn) => conn.get(),
            // `conn` is taken only by `finish` and `drop`, which consume.
            None => unreachable_connection(),
        }
    }

    pub(crate) fn conn_mut(&mut self) -> &mut NatsConnection {
        match &mut self.conn {
            Some(conn) => conn.get_mut(),
            None => unreachable_connection(),
        }
    }

    /// Runs `operation` until the deadline or the client's first fault,
    /// then parks the connection when `operation` left it sound, or closes
    /// it.
    pub(crate) async fn run<T>(
        mut self,
        deadline: Instant,
        operation: impl AsyncFnOnce(&mut NatsConnection) -> Result<T, NatsError>,
    ) -> Result<T, NatsError> {
        let outcome = self.attempt(deadline, operation).await;
        let sound = match &outcome {
            Ok(_) => true,
            Err(e) => e.keeps_connection(),
        };
        self.finish(sound);
        outcome
    }

    /// Runs `operation` until the deadline or the client's first fault,
    /// keeping the connection for the caller.
    pub(crate) async fn attempt<T>(
        &mut self,
        deadline: Instant,
        operation: impl AsyncFnOnce(&mut NatsConnection) -> Result<T, NatsError>,
    ) -> Result<T, NatsError> {
        let mut health = self.conn().health();
        let work = operation(self.conn_mut());
        bounded(deadline, &mut health, work).await
    }

    /// Parks the connection when `sound` and the client is healthy, else
    /// closes it.
    pub(crate) fn finish(mut self, sound: bool) {
        if let Some(conn) = self.conn.take() {
            if sound && conn.get().is_reusable() {
                conn.park();
            } else {
                close(&self.pools, conn);
            }
        }
    }
}

impl Drop for CheckedOut {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            close(&self.pools, conn);
        }
    }
}

/// Hands `conn` to the cleanup actor; drops it in place when refused.
fn close(pools: &ProviderPools, conn: PooledConnection<NatsConnection>) {
    match pools.close_connection(conn) {
        // The close goes on without us; a failure stays with the cleanup
        // actor, still charged.
        Ok(ticket) => drop(ticket),
        Err(refused) => {
            // Destroy, then release.
            drop(refused.resource);
            drop(refused.charge);
        }
    }
}

/// Runs `work` until `deadline` or the first fault `health` reports.
pub(crate) async fn bounded<T>(
    deadline: Instant,
    health: &mut watch::Receiver<Health>,
    work: impl Future<Output = Result<T, NatsError>>,
) -> Result<T, NatsError> {
    tokio::time::timeout_at(deadline, async {
        tokio::select! {
            biased;
            fault = health::fault(health) => Err(fault_error(fault)),
            done = work => done,
        }
    })
    .await
    .unwrap_or(Err(NatsError::Timeout))
}

/// The error an operation ends with when its client faults.
pub(crate) fn fault_error(fault: Fault) -> NatsError {
    match fault {
        Fault::Denied => NatsError::Denied,
        other => NatsError::protocol("waiting for the server", other),
    }
}

#[cold]
fn unreachable_connection() -> ! {
    // A `CheckedOut` always holds its connection until it is consumed.
    panic!("a held nats connection was used after it was released")
}
