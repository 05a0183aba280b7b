//! Property tests of the allocation's invariants (module documentation of
//! `allocate`), over random demands of up to 5 nodes × 6 tenants with
//! random weights, and two cases written out: a tenant spread over three
//! nodes against one on a single node, and weights 1:2:4.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{allocate, allocate_weighted, water_fill, weighted_fill, Allocation, Demand};

/// Random demands: (node, tenant, backlog), some with no backlog.
fn demands() -> impl Strategy<Value = Vec<Demand<u8, u8>>> {
    prop::collection::vec((0u8..5, 0u8..6, 0u32..40), 0..24).prop_map(|entries| {
        entries
            .into_iter()
            .map(|(node, tenant, backlog)| Demand {
                node,
                tenant,
                backlog,
            })
            .collect()
    })
}

/// Each tenant's global backlog and global share.
fn per_tenant(
    demands: &[Demand<u8, u8>],
    allocation: &Allocation<u8, u8>,
) -> BTreeMap<u8, (u64, u64)> {
    let mut tenants: BTreeMap<u8, (u64, u64)> = BTreeMap::new();
    for d in demands {
        tenants.entry(d.tenant).or_default().0 += u64::from(d.backlog);
    }
    for ((_, tenant), &units) in &allocation.tenants {
        tenants.entry(*tenant).or_default().1 += u64::from(units);
    }
    tenants
}

proptest! {
    #[test]
    fn the_nodes_shares_sum_to_the_ceiling_or_the_whole_backlog(
        ceiling in 0u32..120,
        demands in demands(),
    ) {
        let allocation = allocate(ceiling, &demands);
        let backlog: u64 = demands.iter().map(|d| u64::from(d.backlog)).sum();
        prop_assert_eq!(allocation.total(), u64::from(ceiling).min(backlog));
        let by_tenants: u64 = allocation.tenants.values().map(|&u| u64::from(u)).sum();
        prop_assert_eq!(by_tenants, allocation.total());
    }

    #[test]
    fn no_node_and_tenant_gets_more_than_its_backlog(
        ceiling in 0u32..120,
        demands in demands(),
    ) {
        let allocation = allocate(ceiling, &demands);
        let mut backlog: BTreeMap<(u8, u8), u64> = BTreeMap::new();
        for d in &demands {
            *backlog.entry((d.node, d.tenant)).or_default() += u64::from(d.backlog);
        }
        for (key, &units) in &allocation.tenants {
            prop_assert!(units > 0, "a zero share is listed for {:?}", key);
            prop_assert!(u64::from(units) <= backlog[key], "{:?} gets {} of {}", key, units, backlog[key]);
        }
    }

    #[test]
    fn a_tenant_short_of_its_backlog_gets_within_one_unit_of_every_other(
        ceiling in 0u32..120,
        demands in demands(),
    ) {
        let allocation = allocate(ceiling, &demands);
        let tenants = per_tenant(&demands, &allocation);
        for (short, &(backlog, share)) in &tenants {
            if share < backlog {
                for (other, &(_, other_share)) in &tenants {
                    prop_assert!(
                        other_share <= share + 1,
                        "tenant {} short at {} while tenant {} has {}",
                        short, share, other, other_share
                    );
                }
            }
        }
    }

    #[test]
    fn the_result_does_not_depend_on_the_order_of_the_demands(
        ceiling in 0u32..120,
        demands in demands(),
    ) {
        let mut reversed = demands.clone();
        reversed.reverse();
        prop_assert_eq!(allocate(ceiling, &demands), allocate(ceiling, &reversed));
    }

    #[test]
    fn a_tenants_share_does_not_depend_on_how_many_nodes_hold_its_backlog(
        ceiling in 0u32..120,
        backlog in 1u32..40,
        spread in 1u8..5,
        other in 1u32..40,
    ) {
        // Tenant 0's backlog on one node, or split over `spread` nodes.
        let split = |nodes: u8| -> Vec<Demand<u8, u8>> {
            let mut demands: Vec<_> = (0..nodes)
                .map(|node| Demand {
                    node,
                    tenant: 0,
                    backlog: backlog / u32::from(nodes)
                        + u32::from(u32::from(node) < backlog % u32::from(nodes)),
                })
                .collect();
            demands.push(Demand { node: 0, tenant: 1, backlog: other });
            demands
        };
        let one = allocate(ceiling, &split(1));
        let many = allocate(ceiling, &split(spread));
        let share = |a: &Allocation<u8, u8>, tenant: u8| -> u32 {
            a.tenants.iter().filter(|((_, t), _)| *t == tenant).map(|(_, &u)| u).sum()
        };
        prop_assert_eq!(share(&one, 0), share(&many, 0));
        prop_assert_eq!(share(&one, 1), share(&many, 1));
    }
}

#[test]
fn a_tenant_on_three_nodes_and_one_on_a_single_node_get_equal_global_shares() {
    let demands = [
        demand("n1", "spread", 20),
        demand("n2", "spread", 20),
        demand("n3", "spread", 20),
        demand("n3", "local", 20),
    ];
    let allocation = allocate(30, &demands);
    let expected: BTreeMap<_, _> = [
        (("n1", "spread"), 5),
        (("n2", "spread"), 5),
        (("n3", "local"), 15),
        (("n3", "spread"), 5),
    ]
    .into_iter()
    .collect();
    assert_eq!(allocation.tenants, expected);
    let nodes: BTreeMap<_, _> = [("n1", 5), ("n2", 5), ("n3", 20)].into_iter().collect();
    assert_eq!(allocation.nodes, nodes);
}

#[test]
fn no_backlog_gets_nothing() {
    let demands = [Demand {
        node: 1,
        tenant: 1,
        backlog: 0,
    }];
    let allocation = allocate(10, &demands);
    assert!(allocation.nodes.is_empty() && allocation.tenants.is_empty());
}

/// One written-out demand.
fn demand<N, T>(node: N, tenant: T, backlog: u32) -> Demand<N, T> {
    Demand {
        node,
        tenant,
        backlog,
    }
}

/// Random weights (1..=8) for some of the tenants 0..6.
fn weights() -> impl Strategy<Value = BTreeMap<u8, u32>> {
    prop::collection::btree_map(0u8..6, 1u32..=8, 0..6)
}

proptest! {
    #[test]
    fn with_every_weight_one_the_weighted_fill_is_the_equal_fill(
        units in 0u64..200,
        backlogs in prop::collection::vec(0u64..60, 0..8),
    ) {
        let total: u64 = backlogs.iter().sum();
        let plain: Vec<(usize, u64)> = backlogs.iter().copied().enumerate().collect();
        let weighted: Vec<(usize, u64, u64)> =
            backlogs.iter().enumerate().map(|(k, &b)| (k, b, 1)).collect();
        prop_assert_eq!(
            weighted_fill(units.min(total), weighted),
            water_fill(units.min(total), plain)
        );
    }

    #[test]
    fn weighted_shares_sum_to_the_ceiling_or_the_whole_backlog_and_none_passes_its_backlog(
        ceiling in 0u32..120,
        demands in demands(),
        weights in weights(),
    ) {
        let allocation = allocate_weighted(ceiling, &demands, &weights);
        let backlog: u64 = demands.iter().map(|d| u64::from(d.backlog)).sum();
        prop_assert_eq!(allocation.total(), u64::from(ceiling).min(backlog));
        for (tenant, &(backlog, share)) in &per_tenant(&demands, &allocation) {
            prop_assert!(share <= backlog, "tenant {} gets {} of {}", tenant, share, backlog);
        }
    }

    #[test]
    fn a_tenant_short_of_its_backlog_gets_its_weighted_part_within_rounding(
        ceiling in 0u32..120,
        demands in demands(),
        weights in weights(),
    ) {
        let allocation = allocate_weighted(ceiling, &demands, &weights);
        let weight = |t: &u8| u64::from(weights.get(t).copied().unwrap_or(1));
        let tenants = per_tenant(&demands, &allocation);
        for (short, &(backlog, share)) in &tenants {
            if share < backlog {
                for (other, &(_, other_share)) in &tenants {
                    prop_assert!(
                        other_share.saturating_sub(1) * weight(short) < (share + 1) * weight(other),
                        "tenant {} (weight {}) short at {} while tenant {} (weight {}) has {}",
                        short, weight(short), share, other, weight(other), other_share
                    );
                }
            }
        }
    }

    #[test]
    fn the_weighted_result_does_not_depend_on_the_order_of_the_demands(
        ceiling in 0u32..120,
        demands in demands(),
        weights in weights(),
    ) {
        let mut reversed = demands.clone();
        reversed.reverse();
        prop_assert_eq!(
            allocate_weighted(ceiling, &demands, &weights),
            allocate_weighted(ceiling, &reversed, &weights)
        );
    }

    #[test]
    fn backlogged_tenants_share_in_proportion_to_their_weights(
        ceiling in 0u32..2_000,
        weights in prop::collection::vec(1u32..=16, 1..6),
    ) {
        // Every tenant waits for the whole ceiling: each gets its exact
        // weighted part, rounded one way or the other.
        let demands: Vec<Demand<u8, u8>> = (0..weights.len() as u8)
            .map(|tenant| Demand { node: tenant % 2, tenant, backlog: ceiling })
            .collect();
        let by_tenant: BTreeMap<u8, u32> =
            weights.iter().enumerate().map(|(t, &w)| (t as u8, w)).collect();
        let allocation = allocate_weighted(ceiling, &demands, &by_tenant);
        let total_weight: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        for (tenant, &(_, share)) in &per_tenant(&demands, &allocation) {
            let exact = u64::from(ceiling) * u64::from(by_tenant[tenant]);
            prop_assert!(
                share * total_weight + total_weight > exact && exact + total_weight > share * total_weight,
                "tenant {} of weight {} gets {} of {} (exact {}/{})",
                tenant, by_tenant[tenant], share, ceiling, exact, total_weight
            );
        }
    }
}

#[test]
fn weights_one_two_four_divide_a_flooded_ceiling_one_two_four() {
    // Tenant "c" waits on two nodes; its weight, not its spread, sets its share.
    let demands = [
        demand("n1", "a", 100),
        demand("n2", "b", 100),
        demand("n1", "c", 50),
        demand("n2", "c", 50),
    ];
    let weights = BTreeMap::from([("a", 1), ("b", 2), ("c", 4)]);
    let allocation = allocate_weighted(70, &demands, &weights);
    let expected = BTreeMap::from([
        (("n1", "a"), 10),
        (("n2", "b"), 20),
        (("n1", "c"), 20),
        (("n2", "c"), 20),
    ]);
    assert_eq!(allocation.tenants, expected);
}

#[test]
fn a_light_tenant_keeps_its_whole_backlog_beside_heavy_weights() {
    let demands = [
        demand(1, "light", 3),
        demand(1, "heavy", 100),
        demand(2, "plain", 100),
    ];
    let weights = BTreeMap::from([("heavy", 8)]);
    let allocation = allocate_weighted(39, &demands, &weights);
    // 3 to the light tenant; the other 36 split 8:1.
    assert_eq!(allocation.tenants[&(1, "light")], 3);
    assert_eq!(allocation.tenants[&(1, "heavy")], 32);
    assert_eq!(allocation.tenants[&(2, "plain")], 4);
}
