//! What nodes and the leader write on the control plane's board, and how
//! it is checked on the way in.
//!
//! - A [`Report`] is one node's post for one provider: the incarnation of
//!   its registration, the table epoch it has applied, the dynamic share in
//!   force, the most it can hold, each tenant's backlog, and the weights
//!   of those tenants whose weight is not 1.
//! - A [`Table`] is the leader's fenced record for one provider: for each
//!   node (by incarnation) its grant, the bound the leader accounts it at,
//!   and its tenants' shares; and the nodes that departed, reserved at
//!   their last bound until their requests surely ended.
//!
//! Invariants:
//! - Both are JSON of at most [`MAX_BOARD_VALUE_BYTES`]; decoding refuses
//!   unknown fields, duplicate or invalid names and more than
//!   [`MAX_REPORTED_TENANTS`] tenants or [`MAX_ROWS`] rows, so a hostile
//!   peer can make a reading fail but never make it large.
//! - Tenants are listed in key order, rows in node order: the encoding of
//!   a value is a function of the value.

use std::collections::BTreeMap;

use provider_pools_actors::{ProviderPools, TenantId};
use provider_pools_control_plane::{NodeId, MAX_BOARD_VALUE_BYTES};
use serde::{Deserialize, Serialize};

use crate::error::ClusterError;

/// Most tenants one report (and one table row) lists: a node with more
/// backlogged tenants on a provider reports the largest backlogs.
pub const MAX_REPORTED_TENANTS: usize = 256;
/// Most rows (nodes) of one table.
pub const MAX_ROWS: usize = 64;
/// How many of its latest grants a row keeps.
pub const RECENT_GRANTS: usize = 8;

/// One node's post for one provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Which life of the node's registration this is: a new registration
    /// (a restart, a re-registration after loss) has a new incarnation,
    /// and a table row for another incarnation does not apply.
    pub incarnation: u64,
    /// The epoch of the last table the node applied (0: none).
    pub epoch: u64,
    /// The dynamic share in force (above the floor), as applied after that
    /// table: the node holds at most this until it reads a newer one.
    pub in_force: u32,
    /// The most dynamic share this node can hold (its startup ceiling less
    /// the floor).
    pub cap: u32,
    /// Each tenant's backlog on the provider: queued + running for a
    /// running ceiling; for a rate, the node's cap for each tenant with
    /// requests waiting (a rate's demand is not a count of requests).
    pub tenants: BTreeMap<TenantId, u32>,
    /// The weight of each listed tenant whose weight on this node is not 1
    /// (`ProviderPools::set_tenant_weight`); the leader divides the pool
    /// between tenants in proportion to their weights. Every key is also a
    /// key of `tenants`, and every weight is within
    /// `1..=ProviderPools::MAX_TENANT_WEIGHT`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub weights: BTreeMap<TenantId, u32>,
    /// The node is leaving: it wants no share (its backlog aside), so its
    /// bound can fall to zero before it deregisters.
    #[serde(default)]
    pub leaving: bool,
}

/// The leader's division of one provider's dynamic pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// Strictly increasing with every table written for the provider.
    pub epoch: u64,
    /// One row per live node, by node.
    pub rows: BTreeMap<NodeId, Row>,
    /// Nodes whose report vanished (or whose incarnation changed), still
    /// counted at their last bound until their requests surely ended.
    #[serde(default)]
    pub departed: BTreeMap<NodeId, Departed>,
}

/// A departed node's reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Departed {
    /// What it may still hold (its requests drain).
    pub bound: u32,
    /// The first table epoch that no longer counts it.
    pub until: u64,
}

/// One node's part of a [`Table`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// The registration incarnation this row is for.
    pub incarnation: u64,
    /// The dynamic share the node may hold once it reads this table.
    pub grant: u32,
    /// What the leader accounts the node at: at least its grant and at
    /// least what it may still hold from earlier tables.
    pub bound: u32,
    /// Each tenant's share on the node (its running ceiling there, floor
    /// aside).
    pub tenants: BTreeMap<TenantId, u32>,
    /// This incarnation's grants in the latest tables, oldest first, this
    /// one's last (at most [`RECENT_GRANTS`]).
    #[serde(default)]
    pub recent: Vec<u32>,
}

impl Report {
    /// The report as posted.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Encode`] past [`MAX_BOARD_VALUE_BYTES`] (it cannot
    /// be, with at most [`MAX_REPORTED_TENANTS`] tenants of bounded ids),
    /// or when a weight is out of range or names a tenant not listed.
    pub fn encode(&self) -> Result<Vec<u8>, ClusterError> {
        if let Some(reason) = self.weights_refused() {
            return Err(ClusterError::Encode {
                what: "report",
                reason: reason.to_owned(),
            });
        }
        encode("report", self, self.tenants.len() <= MAX_REPORTED_TENANTS)
    }

    /// Why the report's weights are refused, if they are.
    fn weights_refused(&self) -> Option<&'static str> {
        let most = ProviderPools::MAX_TENANT_WEIGHT;
        if self.weights.values().any(|w| !(1..=most).contains(w)) {
            return Some("a tenant weight outside 1..=the most a tenant may have");
        }
        if self.weights.keys().any(|t| !self.tenants.contains_key(t)) {
            return Some("a weight for a tenant the report does not list");
        }
        None
    }

    /// A report as read back.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Decode`] naming what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Self, ClusterError> {
        let report: Self = decode("report", bytes)?;
        if report.tenants.len() > MAX_REPORTED_TENANTS {
            return Err(ClusterError::decode("report", "too many tenants"));
        }
        if let Some(reason) = report.weights_refused() {
            return Err(ClusterError::decode("report", reason));
        }
        Ok(report)
    }
}

impl Table {
    /// The table as written.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Encode`] when it has too many rows or tenants, or
    /// is larger than a board value.
    pub fn encode(&self) -> Result<Vec<u8>, ClusterError> {
        let bounded = self.rows.len() <= MAX_ROWS
            && self.departed.len() <= MAX_ROWS
            && self
                .rows
                .values()
                .all(|row| row.tenants.len() <= MAX_REPORTED_TENANTS);
        encode("table", self, bounded)
    }

    /// A table as read back.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Decode`] naming what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Self, ClusterError> {
        let table: Self = decode("table", bytes)?;
        if table.rows.len() > MAX_ROWS || table.departed.len() > MAX_ROWS {
            return Err(ClusterError::decode("table", "too many rows"));
        }
        if table.rows.values().any(|row| {
            row.tenants.len() > MAX_REPORTED_TENANTS
                || row.grant > row.bound
                || row.recent.len() > RECENT_GRANTS
        }) {
            return Err(ClusterError::decode(
                "table",
                "a row has too many tenants or grants, or a grant above its bound",
            ));
        }
        Ok(table)
    }
}

fn encode<V: Serialize>(
    what: &'static str,
    value: &V,
    bounded: bool,
) -> Result<Vec<u8>, ClusterError> {
    if !bounded {
        return Err(ClusterError::Encode {
            what,
            reason: "too many rows or tenants".to_owned(),
        });
    }
    let bytes = serde_json::to_vec(value).map_err(|error| ClusterError::Encode {
        what,
        reason: error.to_string(),
    })?;
    if bytes.len() > MAX_BOARD_VALUE_BYTES {
        return Err(ClusterError::Encode {
            what,
            reason: format!("{} bytes, above {MAX_BOARD_VALUE_BYTES}", bytes.len()),
        });
    }
    Ok(bytes)
}

fn decode<'a, V: Deserialize<'a>>(what: &'static str, bytes: &'a [u8]) -> Result<V, ClusterError> {
    if bytes.len() > MAX_BOARD_VALUE_BYTES {
        return Err(ClusterError::decode(what, "larger than a board value"));
    }
    serde_json::from_slice(bytes).map_err(|error| ClusterError::decode(what, error.to_string()))
}

#[cfg(test)]
mod tests;
