//! The allocation: one provider's global ceiling divided between tenants,
//! max-min fair over their global backlog, then each tenant's share
//! divided between the nodes where that backlog waits.
//!
//! Rules (exact; integer units; ties broken by key order, so the result is
//! a function of the demands as a set — input order does not matter):
//!
//! - A tenant's backlog is the sum of its published backlogs over nodes;
//!   entries with no backlog take no part.
//! - The units handed out are `min(ceiling, total backlog)`.
//! - Tenants are served by water-filling: in increasing order of backlog
//!   (then tenant key), each gets the least of its backlog and an equal
//!   split, rounded down, of what is left among the tenants not yet served.
//!   The last served thus takes what remains, and the shares of tenants
//!   short of their backlog differ by at most one unit (the later served
//!   holding the extra).
//! - Each tenant's share is divided between its nodes by the same
//!   water-filling over its per-node backlogs.
//! - A node's share of the provider is the sum of its tenants' shares.
//!
//! Invariants (the property tests check each):
//! - The nodes' shares sum to `min(ceiling, total backlog)`: never above
//!   the global ceiling, and no unit idle while some tenant waits.
//! - No tenant, and no (node, tenant), gets more than its backlog.
//! - Max-min fairness: a tenant short of its backlog gets at least as much,
//!   less one unit, as any other tenant.
//! - A tenant's global share does not depend on how many nodes its backlog
//!   is spread over.

use std::collections::BTreeMap;

/// One node's published backlog (pending + running requests) for one tenant
/// of the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand<N, T> {
    /// The publishing node.
    pub node: N,
    /// The tenant.
    pub tenant: T,
    /// Its pending and running requests for the provider on that node.
    pub backlog: u32,
}

/// How one provider's global ceiling is divided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation<N, T> {
    /// Each node's share of the provider's running requests (only nodes
    /// with some share).
    pub nodes: BTreeMap<N, u32>,
    /// Each (node, tenant)'s share (only those with some share): the
    /// tenant's running ceiling on that node.
    pub tenants: BTreeMap<(N, T), u32>,
}

impl<N: Ord, T: Ord> Allocation<N, T> {
    /// The units handed out: the sum of the nodes' shares.
    pub fn total(&self) -> u64 {
        self.nodes.values().map(|&n| u64::from(n)).sum()
    }
}

/// Divides `ceiling` between the nodes of `demands`; see the module
/// documentation for the exact rules.
///
/// # Examples
///
/// ```
/// use provider_pools_cluster::{allocate, Demand};
///
/// // Tenant "a" waits on three nodes, tenant "b" on one; 12 units.
/// let demand = |node, tenant, backlog| Demand { node, tenant, backlog };
/// let demands = [
///     demand(1, "a", 10),
///     demand(2, "a", 10),
///     demand(3, "a", 10),
///     demand(3, "b", 10),
/// ];
/// let allocation = allocate(12, &demands);
/// // Each tenant gets half, wherever its backlog waits.
/// assert_eq!(allocation.tenants[&(3, "b")], 6);
/// assert_eq!(allocation.nodes.values().sum::<u32>(), 12);
/// ```
pub fn allocate<N, T>(ceiling: u32, demands: &[Demand<N, T>]) -> Allocation<N, T>
where
    N: Ord + Clone,
    T: Ord + Clone,
{
    // Backlog per tenant, and per node within each tenant.
    let mut by_tenant: BTreeMap<T, BTreeMap<N, u64>> = BTreeMap::new();
    for demand in demands.iter().filter(|d| d.backlog > 0) {
        *by_tenant
            .entry(demand.tenant.clone())
            .or_default()
            .entry(demand.node.clone())
            .or_default() += u64::from(demand.backlog);
    }
    let backlogs: Vec<(T, u64)> = by_tenant
        .iter()
        .map(|(tenant, nodes)| (tenant.clone(), nodes.values().sum()))
        .collect();
    let total: u64 = backlogs.iter().map(|(_, b)| b).sum();
    let shares = water_fill(u64::from(ceiling).min(total), backlogs);

    let mut allocation = Allocation {
        nodes: BTreeMap::new(),
        tenants: BTreeMap::new(),
    };
    for (tenant, share) in shares {
        let Some(nodes) = by_tenant.remove(&tenant) else {
            continue;
        };
        let split = water_fill(share, nodes.into_iter().collect());
        for (node, units) in split.into_iter().filter(|(_, u)| *u > 0) {
            // `units` ≤ `share` ≤ `ceiling`, a u32.
            let units = u32::try_from(units).unwrap_or(u32::MAX);
            *allocation.nodes.entry(node.clone()).or_default() += units;
            allocation.tenants.insert((node, tenant.clone()), units);
        }
    }
    allocation
}

/// Divides `units` (at most the sum of the demands) over `demands` by
/// water-filling; see the module rules. The result keeps `demands`' order.
pub(crate) fn water_fill<K: Ord + Clone>(units: u64, demands: Vec<(K, u64)>) -> Vec<(K, u64)> {
    let mut order: Vec<usize> = (0..demands.len()).collect();
    order.sort_by(|&a, &b| (demands[a].1, &demands[a].0).cmp(&(demands[b].1, &demands[b].0)));
    let mut shares = vec![0u64; demands.len()];
    let mut left = units;
    for (served, &i) in order.iter().enumerate() {
        let waiting = (order.len() - served) as u64;
        let share = demands[i].1.min(left / waiting);
        shares[i] = share;
        left -= share;
    }
    demands
        .into_iter()
        .zip(shares)
        .map(|((key, _), share)| (key, share))
        .collect()
}

#[cfg(test)]
mod tests;
