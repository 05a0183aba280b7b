//! A node's side of one provider's division: which dynamic share to put
//! in force after reading a table, and when to give it up.
//!
//! Rules (what [`crate::plan`]'s accounting relies on):
//! - Without contact — no heartbeat that succeeded within the lease's time
//!   to live less the skew margin, by this node's monotonic clock — the
//!   target is zero: the node keeps only its floor, before its
//!   registration (and with it its report) can expire.
//! - Only a row for this node's incarnation counts; none means zero.
//! - A leaving node aims at zero and acknowledges the table it read, so
//!   the leader can count it at zero.
//! - A table newer than the last one applied may raise the share to its
//!   grant. The table applied already (or an older one) may only lower
//!   it: the leader may have counted a lower report against it since.
//! - The share in force is what the engine accepted: a lowering below
//!   current use is put in force at that use (it drains toward the
//!   target), so it never rises above the previous share in force.

use provider_pools_control_plane::NodeId;

use crate::wire::Table;

/// What this node holds of one provider's dynamic pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Holding {
    /// The epoch of the last table applied (0: none).
    pub epoch: u64,
    /// The dynamic share in force.
    pub in_force: u32,
}

impl Holding {
    /// The share to aim for, and the epoch it acknowledges, after reading
    /// `table` (if any) as `node` of `incarnation`, with or without
    /// contact; a node `leaving` aims at zero and acknowledges the table.
    pub fn target(
        &self,
        table: Option<&Table>,
        node: &NodeId,
        incarnation: u64,
        in_contact: bool,
        leaving: bool,
    ) -> (u64, u32) {
        if !in_contact {
            return (self.epoch, 0);
        }
        let Some(table) = table else {
            return (self.epoch, 0);
        };
        if leaving {
            return (table.epoch.max(self.epoch), 0);
        }
        let grant = table
            .rows
            .get(node)
            .filter(|row| row.incarnation == incarnation)
            .map_or(0, |row| row.grant);
        if table.epoch > self.epoch {
            (table.epoch, grant)
        } else {
            (self.epoch, grant.min(self.in_force))
        }
    }
}
