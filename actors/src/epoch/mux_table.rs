//! [`MuxTable`]: the connections of one client that carry streams, by
//! tenant — the table behind multiplexed connections
//! (`connection/mux.rs`), kept by the published epoch for each client.
//!
//! A stream opens on a connection of its tenant with room ([`MuxTable::open`]),
//! or a connection reserved for it joins the table carrying it
//! ([`MuxTable::insert`]); a stream's end counts it off
//! ([`MuxTable::close`]), and the last takes the connection out.
//!
//! Invariants:
//! - A connection in the table is one tenant's: an open only looks at
//!   connections of the asking tenant.
//! - A connection is in the table exactly while it carries a stream: the
//!   table's lock orders every open and every close, so a connection is
//!   never both parked and carrying a stream, and it leaves the table with
//!   its last stream, handed back to be parked or destroyed outside the
//!   lock.
//! - An open counts a stream only when the connection gives one (its
//!   callback sees the count and answers `None` when the connection is
//!   full or takes no new streams).

use std::any::Any;
use std::fmt;

use crate::identity::TenantId;
use crate::sync::Mutex;

/// One connection of the table: whose it is, how many streams it carries.
struct Slot {
    id: u64,
    tenant: TenantId,
    streams: u32,
    /// A `PooledConnection<T>` (or, in the model checks, any `T`).
    conn: Box<dyn Any + Send>,
}

/// The connections of one client that carry streams, by tenant.
#[derive(Default)]
pub(crate) struct MuxTable {
    slots: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    slots: Vec<Slot>,
    next_id: u64,
}

/// What [`MuxTable::close`] found: the connection's last stream ended
/// (it is handed back, out of the table), or others still run.
pub(crate) enum Closed<C> {
    Last(C),
    Others,
}

impl MuxTable {
    fn table(&self) -> crate::sync::MutexGuard<'_, Table> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A stream on a connection of `tenant` with room, counted: `open`
    /// answers the stream, or `None` when that connection is full or takes
    /// no new streams (then the next is tried).
    pub(crate) fn open<C: Any + Send, S>(
        &self,
        tenant: &TenantId,
        mut open: impl FnMut(&C, u32) -> Option<S>,
    ) -> Option<(u64, S)> {
        let mut table = self.table();
        table
            .slots
            .iter_mut()
            .filter(|slot| slot.tenant == *tenant)
            .find_map(|slot| {
                let conn = slot.conn.downcast_ref::<C>()?;
                let stream = open(conn, slot.streams)?;
                slot.streams += 1;
                Some((slot.id, stream))
            })
    }

    /// Adds `conn` for `tenant` carrying one stream, `open`'s; a
    /// connection `open` gets no stream from is handed back, unadded.
    pub(crate) fn insert<C: Any + Send, S>(
        &self,
        tenant: &TenantId,
        conn: C,
        open: impl FnOnce(&C) -> Option<S>,
    ) -> Result<(u64, S), C> {
        let Some(stream) = open(&conn) else {
            return Err(conn);
        };
        let mut table = self.table();
        let id = table.next_id;
        table.next_id += 1;
        table.slots.push(Slot {
            id,
            tenant: tenant.clone(),
            streams: 1,
            conn: Box::new(conn),
        });
        Ok((id, stream))
    }

    /// Ends one stream of connection `id`; its last takes it out.
    pub(crate) fn close<C: Any + Send>(&self, id: u64) -> Closed<C> {
        let mut table = self.table();
        let Some(at) = table.slots.iter().position(|slot| slot.id == id) else {
            debug_assert!(false, "a stream of a connection not in the table");
            return Closed::Others;
        };
        let slot = &mut table.slots[at];
        slot.streams = slot.streams.saturating_sub(1);
        if slot.streams > 0 {
            return Closed::Others;
        }
        let slot = table.slots.swap_remove(at);
        drop(table);
        match slot.conn.downcast::<C>() {
            Ok(conn) => Closed::Last(*conn),
            Err(_) => {
                debug_assert!(false, "a stream closed as another type");
                Closed::Others
            }
        }
    }

    /// Connections in the table and the streams they carry.
    pub(crate) fn counts(&self) -> (u32, u32) {
        let table = self.table();
        let conns = u32::try_from(table.slots.len()).unwrap_or(u32::MAX);
        let streams = table.slots.iter().map(|slot| slot.streams).sum();
        (conns, streams)
    }
}

impl fmt::Debug for MuxTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (conns, streams) = self.counts();
        f.debug_struct("MuxTable")
            .field("connections", &conns)
            .field("streams", &streams)
            .finish()
    }
}

#[cfg(all(test, loom))]
mod loom_model;
