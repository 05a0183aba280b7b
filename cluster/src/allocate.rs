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
//! - Tenants are served by weighted water-filling (a tenant's weight is 1
//!   unless [`allocate_weighted`] is given another): in increasing order of
//!   backlog per unit of weight (then tenant key), a tenant whose backlog
//!   fits within its weight's part of what is left takes its backlog; the
//!   tenants left after that share what remains in proportion to their
//!   weights, each its exact part rounded down, and the units the
//!   rounding leaves go one each to the largest remainders (ties to the
//!   later served). With every weight 1 this is the equal split: the shares
//!   of tenants short of their backlog differ by at most one unit, the
//!   later served holding the extra.
//! - Each tenant's share is divided between its nodes by the same
//!   water-filling over its per-node backlogs.
//! - A node's share of the provider is the sum of its tenants' shares.
//!
//! Invariants (the property tests check each):
//! - The nodes' shares sum to `min(ceiling, total backlog)`: never above
//!   the global ceiling, and no unit idle while some tenant waits.
//! - No tenant, and no (node, tenant), gets more than its backlog.
//! - Weighted max-min fairness: a tenant short of its backlog gets, per
//!   unit of weight, at least as much as any other tenant, within one unit
//!   of rounding each: for `i` short and any `j`,
//!   `(share_j - 1) × weight_i < (share_i + 1) × weight_j`. With equal
//!   weights, a tenant short of its backlog gets at least as much, less one
//!   unit, as any other tenant.
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
    allocate_weighted(ceiling, demands, &BTreeMap::new())
}

/// Divides `ceiling` between the nodes of `demands` as [`allocate`] does,
/// with each tenant's global share in proportion to its weight in
/// `weights` (a tenant not listed, or listed with 0, has weight 1); see
/// the module documentation for the exact rules. The division between a
/// tenant's nodes does not depend on its weight.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use provider_pools_cluster::{allocate_weighted, Demand};
///
/// // Three tenants of weights 1, 2 and 4 waiting for more than 70 units.
/// let demand = |node, tenant, backlog| Demand { node, tenant, backlog };
/// let demands = [demand(1, "a", 50), demand(2, "b", 50), demand(1, "c", 50)];
/// let weights = BTreeMap::from([("b", 2), ("c", 4)]);
/// let allocation = allocate_weighted(70, &demands, &weights);
/// assert_eq!(allocation.tenants[&(1, "a")], 10);
/// assert_eq!(allocation.tenants[&(2, "b")], 20);
/// assert_eq!(allocation.tenants[&(1, "c")], 40);
/// ```
pub fn allocate_weighted<N, T>(
    ceiling: u32,
    demands: &[Demand<N, T>],
    weights: &BTreeMap<T, u32>,
) -> Allocation<N, T>
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
    let backlogs: Vec<(T, u64, u64)> = by_tenant
        .iter()
        .map(|(tenant, nodes)| {
            let weight = weights.get(tenant).copied().unwrap_or(1).max(1);
            (tenant.clone(), nodes.values().sum(), u64::from(weight))
        })
        .collect();
    let total: u64 = backlogs.iter().map(|(_, b, _)| b).sum();
    let shares = weighted_fill(u64::from(ceiling).min(total), backlogs);

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

/// Divides `units` (at most the sum of the backlogs) over `demands` —
/// (key, backlog, weight ≥ 1) — by weighted water-filling; see the module
/// rules. The result keeps `demands`' order.
pub(crate) fn weighted_fill<K: Ord + Clone>(
    units: u64,
    demands: Vec<(K, u64, u64)>,
) -> Vec<(K, u64)> {
    // Served in increasing backlog per weight, then key: `b_a / w_a` is
    // compared with `b_b / w_b` as `b_a × w_b` with `b_b × w_a`, in u128.
    let mut order: Vec<usize> = (0..demands.len()).collect();
    order.sort_by(|&a, &b| {
        let (key_a, backlog_a, weight_a) = &demands[a];
        let (key_b, backlog_b, weight_b) = &demands[b];
        (u128::from(*backlog_a) * u128::from(*weight_b))
            .cmp(&(u128::from(*backlog_b) * u128::from(*weight_a)))
            .then_with(|| key_a.cmp(key_b))
    });
    let mut shares = vec![0u64; demands.len()];
    let mut left = u128::from(units);
    let mut weight_left: u128 = demands.iter().map(|(_, _, w)| u128::from(*w)).sum();
    // Backlogs within their weight's part of what is left are met whole.
    let mut served = 0;
    while let Some(&i) = order.get(served) {
        let (_, backlog, weight) = demands[i];
        if u128::from(backlog) * weight_left > left * u128::from(weight) {
            break;
        }
        shares[i] = backlog;
        left -= u128::from(backlog);
        weight_left -= u128::from(weight);
        served += 1;
    }
    // The rest share what is left by weight: each its exact part rounded
    // down, then one more unit to each of the largest remainders (the
    // later served first on a tie). Each exact part is below its backlog,
    // so the unit added never passes it.
    let rest = &order[served..];
    if let Some(weight_left) = std::num::NonZeroU128::new(weight_left) {
        let mut given: u128 = 0;
        let mut remainders: Vec<(u128, usize, usize)> = Vec::with_capacity(rest.len());
        for (place, &i) in rest.iter().enumerate() {
            let exact = left * u128::from(demands[i].2);
            let floor = exact / weight_left;
            shares[i] = u64::try_from(floor).unwrap_or(u64::MAX);
            given += floor;
            remainders.push((exact % weight_left, place, i));
        }
        remainders.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        let extra = usize::try_from(left - given).unwrap_or(usize::MAX);
        for &(_, _, i) in remainders.iter().take(extra) {
            shares[i] += 1;
        }
    }
    demands
        .into_iter()
        .zip(shares)
        .map(|((key, _, _), share)| (key, share))
        .collect()
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
