//! The leader's step: the next [`Table`] for one provider, from the last
//! one and the reports live now. A pure function, so any node computes
//! the same table from the same readings.
//!
//! Safety rule (the simulation in the tests checks it under every
//! interleaving it draws): what the nodes may admit, plus what still runs
//! on nodes that fell back, never exceeds the dynamic pool. A node never
//! holds more than its bound, and raises are paid only from the pool less
//! every reservation (a node that came back under a new incarnation while
//! its old requests drain is counted twice, never less).
//!
//! - What a node may hold now (`held`) is what it reported in force when
//!   its report acknowledges the last table. A report that acknowledges an
//!   older table adds the largest grant of the tables written since (the
//!   node may have applied any of them and not said so yet): rows keep
//!   their last [`RECENT_GRANTS`] grants for this; a node further behind
//!   is counted at its last bound. (Counting every lagging node at its
//!   bound instead would carry an old share forward for ever when a
//!   node's period runs one table behind the leader's.)
//! - A node whose report is gone (or whose incarnation changed) admits
//!   nothing above its floor: its registration expired, and it gave up its
//!   dynamic share before it could (see [`crate::share`]); it comes back
//!   only under a new incarnation, which no old row matches. Requests it
//!   admitted earlier may still run, so its last bound stays reserved
//!   (`departed`) for `quarantine` more tables — the configured drain time
//!   in periods — and only then moves.
//! - Lowering a grant is always allowed (the bound stays at `held` until
//!   the node acknowledges). Raises are paid only from what no node holds
//!   or may hold: `pool − Σ held`, divided between the nodes that want
//!   more by water-filling.
//! - What each node wants: its share of [`allocate_weighted`] over the
//!   reported backlogs and weights (a tenant's highest reported weight),
//!   at most its cap, plus an even part of whatever the backlogs
//!   leave (headroom, so new work need not wait a period). A node that
//!   reports it is leaving wants nothing, so its bound falls to zero once
//!   it acknowledges, and its departure reserves nothing.

use std::collections::BTreeMap;

use provider_pools_control_plane::NodeId;

use crate::allocate::{allocate_weighted, water_fill, Demand};
use crate::wire::{Departed, Report, Row, Table, RECENT_GRANTS};

/// The table that follows `previous` for a dynamic pool of `pool`, given
/// the live reports (one per node); a departed node stays reserved for
/// `quarantine` tables.
pub fn next_table(
    pool: u32,
    quarantine: u64,
    previous: Option<&Table>,
    reports: &BTreeMap<NodeId, Report>,
) -> Table {
    let epoch = previous.map_or(1, |table| table.epoch.saturating_add(1));
    let departed = departed(epoch, quarantine, previous, reports);
    let held = held(previous, reports);
    let wanted = wanted(pool, reports);
    let held_total: u64 = held.values().map(|&h| u64::from(h)).sum::<u64>()
        + departed.values().map(|d| u64::from(d.bound)).sum::<u64>();
    let free = u64::from(pool).saturating_sub(held_total);
    let raises: Vec<(NodeId, u64)> = reports
        .keys()
        .map(|node| {
            let want = wanted.get(node).map_or(0, |w| w.grant);
            let have = held.get(node).copied().unwrap_or(0);
            (node.clone(), u64::from(want.saturating_sub(have)))
        })
        .collect();
    let asked: u64 = raises.iter().map(|(_, r)| r).sum();
    let raised: BTreeMap<NodeId, u64> = water_fill(free.min(asked), raises).into_iter().collect();
    let mut rows = BTreeMap::new();
    for (node, report) in reports {
        let want = wanted.get(node).map_or(0, |w| w.grant);
        let have = held.get(node).copied().unwrap_or(0);
        let grant = if want <= have {
            want
        } else {
            // `raised` ≤ want − have, so the sum fits a u32.
            have + u32::try_from(raised.get(node).copied().unwrap_or(0)).unwrap_or(0)
        };
        let tenants = wanted
            .get(node)
            .map(|w| w.tenants.clone())
            .unwrap_or_default();
        let mut recent: Vec<u32> = previous
            .and_then(|table| table.rows.get(node))
            .filter(|row| row.incarnation == report.incarnation)
            .map(|row| row.recent.clone())
            .unwrap_or_default();
        recent.push(grant);
        if recent.len() > RECENT_GRANTS {
            recent.drain(..recent.len() - RECENT_GRANTS);
        }
        rows.insert(
            node.clone(),
            Row {
                incarnation: report.incarnation,
                grant,
                bound: grant.max(have),
                tenants,
                recent,
            },
        );
    }
    Table {
        epoch,
        rows,
        departed,
    }
}

/// The reservations of table `epoch`: the last table's still running, and
/// every row of it whose node (or incarnation) no longer reports. A node
/// departing twice keeps one entry: the sum of bounds, the later end.
fn departed(
    epoch: u64,
    quarantine: u64,
    previous: Option<&Table>,
    reports: &BTreeMap<NodeId, Report>,
) -> BTreeMap<NodeId, Departed> {
    let Some(previous) = previous else {
        return BTreeMap::new();
    };
    let mut departed: BTreeMap<NodeId, Departed> = previous
        .departed
        .iter()
        .filter(|(_, d)| d.until > epoch)
        .map(|(node, d)| (node.clone(), *d))
        .collect();
    let until = epoch.saturating_add(quarantine);
    for (node, row) in &previous.rows {
        let reporting = reports
            .get(node)
            .is_some_and(|report| report.incarnation == row.incarnation);
        if reporting || row.bound == 0 || quarantine == 0 {
            continue;
        }
        let entry = departed
            .entry(node.clone())
            .or_insert(Departed { bound: 0, until });
        entry.bound = entry.bound.saturating_add(row.bound);
        entry.until = entry.until.max(until);
    }
    departed
}

/// What each reporting node may hold now.
fn held(previous: Option<&Table>, reports: &BTreeMap<NodeId, Report>) -> BTreeMap<NodeId, u32> {
    reports
        .iter()
        .map(|(node, report)| {
            let row = previous
                .and_then(|table| table.rows.get(node))
                .filter(|row| row.incarnation == report.incarnation);
            // Tables written since the one the report acknowledges: the
            // node may have applied any of them.
            let behind = previous.map_or(0, |table| table.epoch.saturating_sub(report.epoch));
            let since = match row {
                _ if behind == 0 => 0,
                Some(row) if behind <= row.recent.len() as u64 => {
                    let from = row.recent.len() - behind as usize;
                    row.recent[from..].iter().copied().max().unwrap_or(0)
                }
                Some(row) => row.bound,
                None => 0,
            };
            (node.clone(), report.in_force.max(since))
        })
        .collect()
}

/// Each tenant's weight for the division: the highest any live report
/// gives it (nodes keep weights in memory, so one restarted since the last
/// change reports 1 until the host sets it again; the highest keeps the
/// weight the host set while that happens).
fn weights(reports: &BTreeMap<NodeId, Report>) -> BTreeMap<provider_pools_actors::TenantId, u32> {
    let mut weights = BTreeMap::new();
    for report in reports.values().filter(|report| !report.leaving) {
        for (tenant, &weight) in &report.weights {
            let entry = weights.entry(tenant.clone()).or_insert(weight);
            *entry = (*entry).max(weight);
        }
    }
    weights
}

struct Wanted {
    grant: u32,
    tenants: BTreeMap<provider_pools_actors::TenantId, u32>,
}

/// Each node's fair share of the pool over the reported backlogs, capped,
/// plus an even part of what the backlogs leave.
fn wanted(pool: u32, reports: &BTreeMap<NodeId, Report>) -> BTreeMap<NodeId, Wanted> {
    let demands: Vec<_> = reports
        .iter()
        .filter(|(_, report)| !report.leaving)
        .flat_map(|(node, report)| {
            report.tenants.iter().map(move |(tenant, &backlog)| Demand {
                node: node.clone(),
                tenant: tenant.clone(),
                backlog,
            })
        })
        .collect();
    let allocation = allocate_weighted(pool, &demands, &weights(reports));
    let mut wanted: BTreeMap<NodeId, Wanted> = reports
        .iter()
        .map(|(node, report)| {
            let share = allocation.nodes.get(node).copied().unwrap_or(0);
            (
                node.clone(),
                Wanted {
                    grant: share.min(report.cap),
                    tenants: BTreeMap::new(),
                },
            )
        })
        .collect();
    for ((node, tenant), share) in allocation.tenants {
        if let Some(w) = wanted.get_mut(&node) {
            w.tenants.insert(tenant, share);
        }
    }
    let given: u64 = wanted.values().map(|w| u64::from(w.grant)).sum();
    let left = u64::from(pool).saturating_sub(given);
    let room: Vec<(NodeId, u64)> = reports
        .iter()
        .map(|(node, report)| {
            let grant = wanted.get(node).map_or(0, |w| w.grant);
            let room = if report.leaving {
                0
            } else {
                report.cap.saturating_sub(grant)
            };
            (node.clone(), u64::from(room))
        })
        .collect();
    let roomy: u64 = room.iter().map(|(_, r)| r).sum();
    for (node, extra) in water_fill(left.min(roomy), room) {
        if let Some(w) = wanted.get_mut(&node) {
            w.grant = w.grant.saturating_add(u32::try_from(extra).unwrap_or(0));
        }
    }
    wanted
}

#[cfg(test)]
mod tests;
