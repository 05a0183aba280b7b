//! The stream path: a running request's stream on a multiplexed
//! connection of its tenant (see [`crate::epoch::connection::mux`]).

use std::sync::Arc;

use crate::admission::RunningRequest;
use crate::epoch::connection::mux::Multiplexed;
use crate::epoch::connection::{ConnectError, Dialer, PooledConnection, PooledStream};
use crate::provider_pools::ProviderPools;

impl ProviderPools {
    /// A stream for `running` on a connection of its client that its
    /// tenant already streams on, when one has room; otherwise a
    /// connection reserved as by [`Self::reserve_connection`] (an idle one
    /// or a dial, with every charge) that then carries the stream and
    /// later ones of the same tenant.
    ///
    /// A connection carries at most [`Multiplexed::max_streams`] streams,
    /// and only one tenant's. Two requests that find no room at once may
    /// each reserve a connection; both serve later streams.
    ///
    /// # Cancel safety
    ///
    /// As [`Self::reserve_connection`]: a stream is counted only once this
    /// returns it, and dropping the [`PooledStream`] ends it.
    ///
    /// # Errors
    ///
    /// Those of [`Self::reserve_connection`];
    /// [`ConnectError::ShareLapsed`] also when a stream on a shared
    /// connection is refused by the share check;
    /// [`ConnectError::NoStream`] when a dialed connection opens no stream
    /// (its peer allows none); that connection is destroyed. An idle
    /// connection that opens none is destroyed and the next one taken.
    pub async fn reserve_stream<D>(
        &self,
        running: &RunningRequest,
        dialer: &D,
    ) -> Result<PooledStream<D::Conn>, ConnectError>
    where
        D: Dialer + Clone + 'static,
        D::Conn: Multiplexed,
    {
        if !self.is_open() {
            return Err(ConnectError::Closed);
        }
        let (epoch, client) = running.client().epoch_entry();
        let table = epoch.mux(client).ok_or(ConnectError::Closed)?;
        let tenant = running.plan().tenant();
        let shared = table.open::<PooledConnection<D::Conn>, _>(tenant, |conn, streams| {
            let conn = conn.get();
            (streams < conn.max_streams())
                .then(|| conn.open_stream())
                .flatten()
        });
        if let Some((id, stream)) = shared {
            let lease = PooledStream::new(
                stream,
                (Arc::clone(epoch), client, id),
                true,
                running.hold(),
            );
            // On refusal the lease's drop ends the stream it counted.
            running.check_share()?;
            return Ok(lease);
        }
        // Bounded by the deadline and the client's idle connections: each
        // turn that continues destroyed one; a dialed connection ends it.
        loop {
            let conn = self.reserve_connection(running, dialer).await?;
            let reused = conn.is_reused();
            let inserted = table.insert(tenant, conn.into_shared(), |conn| {
                let conn = conn.get();
                (conn.max_streams() > 0)
                    .then(|| conn.open_stream())
                    .flatten()
            });
            match inserted {
                Ok((id, stream)) => {
                    return Ok(PooledStream::new(
                        stream,
                        (Arc::clone(epoch), client, id),
                        reused,
                        running.hold(),
                    ))
                }
                // A parked connection that opens no more streams (past
                // its life, or its peer lowered its limit while it idled):
                // destroyed, and the next one taken.
                Err(unopened) if reused => drop(unopened),
                // A dialed one that opens none: its peer allows none.
                // Destroyed, never parked.
                Err(unopened) => {
                    drop(unopened);
                    return Err(ConnectError::NoStream);
                }
            }
        }
    }
}
