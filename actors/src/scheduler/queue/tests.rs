//! Unit tests of the queue's rules, one behaviour each.

use super::properties::assert_invariants;
use super::*;

type Q = FairQueue<u32, &'static str, u32>;

fn wide() -> Ceilings {
    Ceilings {
        pending_total: 1000,
        pending_per_tenant: 1000,
        pending_per_provider: 1000,
        running_total: 1000,
        running_per_tenant: 1000,
        running_per_provider: 1000,
    }
}

fn push(q: &mut Q, tenant: &'static str, provider: u32, item: u32) -> WaiterKey {
    let key = q
        .push(tenant, provider, item)
        .map_err(|(refused, _)| refused);
    assert_invariants(q);
    key.expect("push refused")
}

/// Grants until `None` (at most `n`), as (tenant, provider, item).
fn grants(q: &mut Q, n: usize) -> Vec<(&'static str, u32, u32)> {
    let mut out = Vec::new();
    while let Some(g) = (out.len() < n).then(|| q.next_grant()).flatten() {
        assert_invariants(q);
        let (t, p) = q.keys(g.running).expect("a running key names live entries");
        out.push((*t, *p, g.item));
    }
    out
}

fn items(q: &mut Q) -> Vec<u32> {
    grants(q, usize::MAX).into_iter().map(|g| g.2).collect()
}

#[test]
fn grants_alternate_between_tenants() {
    let mut q = Q::new(wide());
    for i in 1..=3 {
        push(&mut q, "a", 0, i);
    }
    for i in 11..=13 {
        push(&mut q, "b", 0, i);
    }
    assert_eq!(items(&mut q), [1, 11, 2, 12, 3, 13]);
    assert!(q.next_grant().is_none());
}

#[test]
fn a_tenant_spread_over_fifty_providers_earns_no_extra_turns() {
    let mut q = Q::new(wide());
    for i in 0..50 {
        push(&mut q, "a", i, i);
    }
    for i in 0..50 {
        push(&mut q, "b", 99, 100 + i);
    }
    let expected: Vec<_> = (0..50)
        .flat_map(|i| [("a", i, i), ("b", 99, 100 + i)])
        .collect();
    assert_eq!(grants(&mut q, 100), expected);
}

#[test]
fn fifo_within_a_group_rotation_across_a_tenants_providers() {
    let mut q = Q::new(wide());
    for (provider, item) in [(1, 1), (1, 2), (2, 3), (1, 4), (2, 5), (3, 6)] {
        push(&mut q, "a", provider, item);
    }
    assert_eq!(items(&mut q), [1, 3, 6, 2, 5, 4]);
}

#[test]
fn each_pending_bound_refuses_at_push_and_hands_the_item_back() {
    let c = Ceilings {
        pending_total: 4,
        pending_per_tenant: 2,
        pending_per_provider: 2,
        ..wide()
    };
    let mut q = Q::new(c);
    let refused = |bound, used, limit, item| Err((Refused { bound, used, limit }, item));
    push(&mut q, "a", 0, 1);
    push(&mut q, "b", 0, 2);
    assert_eq!(
        q.push("c", 0, 3),
        refused(Bound::PendingPerProvider, 2, 2, 3)
    );
    push(&mut q, "a", 1, 4);
    assert_eq!(q.push("a", 2, 5), refused(Bound::PendingPerTenant, 2, 2, 5));
    push(&mut q, "c", 1, 6);
    assert_eq!(q.push("d", 2, 7), refused(Bound::PendingTotal, 4, 4, 7));
    assert_eq!(
        (q.pending(), q.tenant_counts(&"c"), q.tenant_counts(&"d")),
        (4, (1, 0), (0, 0))
    );
    assert_eq!(q.provider_counts(&2), (0, 0));
    assert_invariants(&q);
}

#[test]
fn a_tenant_at_its_running_ceiling_is_skipped_until_a_release() {
    let mut q = Q::new(Ceilings {
        running_per_tenant: 1,
        ..wide()
    });
    for (tenant, base) in [("a", 0), ("b", 10), ("c", 20)] {
        push(&mut q, tenant, base, base + 1);
        push(&mut q, tenant, base, base + 2);
    }
    assert_eq!(items(&mut q), [1, 11, 21]);
    q.release(&"c", &20);
    assert_eq!(items(&mut q), [22], "others are served while a and b wait");
    // Re-activated tenants join the back of the rotation, in release order.
    q.release(&"b", &10);
    q.release(&"a", &0);
    assert_eq!(items(&mut q), [12, 2]);
    assert_eq!(q.tenant_counts(&"a"), (0, 1));
}

#[test]
fn a_provider_at_its_ceiling_blocks_its_groups_across_tenants() {
    let mut q = Q::new(Ceilings {
        running_per_provider: 1,
        ..wide()
    });
    push(&mut q, "a", 0, 1);
    push(&mut q, "a", 1, 2);
    push(&mut q, "b", 0, 11);
    push(&mut q, "b", 2, 12);
    // b's group on provider 0 is blocked, its group on provider 2 served.
    assert_eq!(items(&mut q), [1, 12, 2]);
    assert_eq!(q.provider_counts(&0), (1, 1));
    q.release(&"a", &0);
    assert_eq!(grants(&mut q, 9), [("b", 0, 11)]);
}

#[test]
fn the_total_ceiling_stops_every_grant() {
    let mut q = Q::new(Ceilings {
        running_total: 2,
        ..wide()
    });
    for (tenant, provider, item) in [("a", 0, 1), ("a", 0, 2), ("b", 1, 11), ("b", 1, 12)] {
        push(&mut q, tenant, provider, item);
    }
    assert_eq!(items(&mut q), [1, 11]);
    q.release(&"b", &1);
    assert_eq!(items(&mut q), [2]);
    q.release(&"a", &0);
    assert_eq!(items(&mut q), [12]);
    assert_eq!((q.pending(), q.running()), (0, 2));
}

#[test]
fn cancel_removes_a_waiter_from_the_middle_and_refunds_it() {
    let mut q = Q::new(wide());
    let keys: Vec<_> = (1..=3).map(|i| push(&mut q, "a", 0, i)).collect();
    assert_eq!(q.cancel(keys[1]), Some(2));
    assert_invariants(&q);
    assert_eq!(
        (q.pending(), q.tenant_counts(&"a"), q.provider_counts(&0)),
        (2, (2, 0), (2, 0))
    );
    assert_eq!(q.cancel(keys[1]), None, "already cancelled");
    let granted = q.next_grant().expect("a waiter");
    assert_eq!((granted.key, granted.item), (keys[0], 1));
    assert_eq!(q.cancel(keys[0]), None, "already granted");
    assert_eq!((q.pending(), q.running()), (1, 1));
    assert_eq!(items(&mut q), [3]);
}

#[test]
fn a_stale_key_never_cancels_the_waiter_that_reuses_its_slot() {
    let mut q = Q::new(wide());
    let old = push(&mut q, "a", 0, 1);
    assert_eq!(q.cancel(old), Some(1));
    let new = push(&mut q, "a", 0, 2);
    assert_eq!(new.index, old.index);
    assert_ne!(new, old);
    assert_eq!(q.cancel(old), None);
    assert_eq!(q.pending(), 1);
    assert_eq!(q.cancel(new), Some(2));
}

#[test]
fn cancelling_the_last_waiters_drops_groups_tenants_and_blocked_groups() {
    let mut q = Q::new(Ceilings {
        running_per_provider: 1,
        ..wide()
    });
    push(&mut q, "a", 0, 1);
    assert_eq!(items(&mut q), [1]);
    let blocked = push(&mut q, "b", 0, 11);
    let active = push(&mut q, "c", 1, 21);
    assert_eq!(q.cancel(blocked), Some(11));
    assert_eq!(q.cancel(active), Some(21));
    assert_invariants(&q);
    q.release(&"a", &0);
    assert!(q.next_grant().is_none());
    let shown = format!("{q:?}");
    assert!(
        shown.contains("tenants: 0, providers: 0, groups: 0"),
        "{shown}"
    );
}

#[test]
fn set_ceilings_refuses_below_per_tenant_or_per_provider_use() {
    let mut q = Q::new(wide());
    for i in 1..=3 {
        push(&mut q, "a", 0, i);
    }
    push(&mut q, "b", 0, 11);
    assert_eq!(items(&mut q).len(), 4);
    push(&mut q, "a", 0, 4);
    push(&mut q, "a", 1, 5);
    // a: 2 pending, 3 running; provider 0: 1 pending, 4 running.
    let refused = |bound, used, requested| {
        Err(InUse {
            bound,
            used,
            requested,
        })
    };
    let with = |f: fn(&mut Ceilings)| {
        let mut c = wide();
        f(&mut c);
        c
    };
    let cases = [
        (
            with(|c| c.pending_per_tenant = 1),
            refused(Bound::PendingPerTenant, 2, 1),
        ),
        (
            with(|c| c.pending_per_provider = 0),
            refused(Bound::PendingPerProvider, 1, 0),
        ),
        (
            with(|c| c.running_per_tenant = 2),
            refused(Bound::RunningPerTenant, 3, 2),
        ),
        (
            with(|c| c.running_per_provider = 3),
            refused(Bound::RunningPerProvider, 4, 3),
        ),
    ];
    for (new, expected) in cases {
        assert_eq!(q.set_ceilings(new), expected);
        assert_eq!(q.ceilings(), wide(), "a refusal changes nothing");
    }
    let at_use = Ceilings {
        pending_per_tenant: 2,
        running_per_tenant: 3,
        running_per_provider: 4,
        ..wide()
    };
    assert_eq!(q.set_ceilings(at_use), Ok(()));
    assert_eq!(items(&mut q), [], "a and provider 0 are at their ceilings");
    assert_invariants(&q);
}

#[test]
fn totals_may_be_lowered_below_use() {
    let mut q = Q::new(wide());
    for i in 1..=4 {
        push(&mut q, "a", i, i);
    }
    assert_eq!(grants(&mut q, 2).len(), 2);
    let lowered = Ceilings {
        pending_total: 1,
        running_total: 1,
        ..wide()
    };
    assert_eq!(q.set_ceilings(lowered), Ok(()));
    let refused = Refused {
        bound: Bound::PendingTotal,
        used: 2,
        limit: 1,
    };
    assert_eq!(q.push("b", 0, 9), Err((refused, 9)));
    assert_eq!(items(&mut q), []);
    q.release(&"a", &1);
    assert_eq!(items(&mut q), [], "still at the lowered total");
    q.release(&"a", &2);
    assert_eq!(items(&mut q), [3]);
}

#[test]
fn raising_ceilings_reactivates_parked_tenants_and_blocked_groups() {
    let c = Ceilings {
        running_per_tenant: 1,
        running_per_provider: 1,
        ..wide()
    };
    let mut q = Q::new(c);
    push(&mut q, "a", 0, 1);
    push(&mut q, "a", 1, 2);
    push(&mut q, "b", 2, 11);
    push(&mut q, "b", 2, 12);
    push(&mut q, "c", 0, 21);
    assert_eq!(
        items(&mut q),
        [1, 11],
        "c's group is blocked behind provider 0"
    );
    let raised = Ceilings {
        running_per_tenant: 2,
        running_per_provider: 2,
        ..wide()
    };
    assert_eq!(q.set_ceilings(raised), Ok(()));
    // Parked tenants in creation order, then unblocked groups.
    assert_eq!(items(&mut q), [2, 12, 21]);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "nothing running")]
fn releasing_what_is_not_running_is_a_caller_bug() {
    let mut q = Q::new(wide());
    q.release(&"a", &0);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "stale")]
fn a_running_key_releases_once() {
    let mut q = Q::new(wide());
    push(&mut q, "a", 0, 1);
    let grant = q.next_grant().expect("a waiter");
    q.release_running(grant.running);
    assert_eq!((q.pending(), q.running()), (0, 0));
    q.release_running(grant.running);
}

/// Both halves of a running key must be live: a key whose provider was
/// forgotten (and re-created) is stale even while its tenant still runs.
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "stale")]
fn a_key_of_a_forgotten_provider_is_stale_while_its_tenant_lives() {
    let mut q = Q::new(wide());
    push(&mut q, "a", 0, 1);
    push(&mut q, "a", 1, 2);
    let _first = q.next_grant().expect("a waiter");
    let second = q.next_grant().expect("a waiter");
    let (_, &provider) = q.keys(second.running).expect("live");
    q.release_running(second.running);
    assert_eq!(q.provider_counts(&provider), (0, 0), "provider forgotten");
    push(&mut q, "a", provider, 3);
    let _again = q.next_grant().expect("the re-created provider's waiter");
    // Tenant "a" is still live (its first grant runs); the provider is not
    // the one the old key named.
    q.release_running(second.running);
}

#[test]
fn a_tenant_of_weight_two_takes_two_turns_per_round() {
    let mut q = Q::new(wide());
    q.set_weight("a", 2);
    for i in 1..=4 {
        push(&mut q, "a", 0, i);
    }
    for i in 11..=13 {
        push(&mut q, "b", 0, i);
    }
    assert_eq!(items(&mut q), [1, 2, 11, 3, 4, 12, 13]);
}

#[test]
fn a_weighted_tenants_turns_go_round_its_providers() {
    let mut q = Q::new(wide());
    q.set_weight("a", 3);
    for (provider, item) in [(1, 1), (2, 2), (1, 3), (2, 4)] {
        push(&mut q, "a", provider, item);
    }
    push(&mut q, "b", 9, 11);
    assert_eq!(items(&mut q), [1, 2, 3, 11, 4]);
}

#[test]
fn a_weight_set_back_to_one_applies_from_the_next_grant() {
    let mut q = Q::new(wide());
    q.set_weight("a", 3);
    for i in 1..=4 {
        push(&mut q, "a", 0, i);
    }
    for i in 11..=12 {
        push(&mut q, "b", 0, i);
    }
    assert_eq!(grants(&mut q, 1)[0].2, 1);
    q.set_weight("a", 1);
    assert_eq!(q.weight_of(&"a"), 1);
    assert_eq!(items(&mut q), [2, 11, 3, 12, 4]);
}

#[test]
fn a_weight_outlives_the_tenants_idle_spell() {
    let mut q = Q::new(wide());
    q.set_weight("a", 2);
    push(&mut q, "a", 0, 1);
    let g = q.next_grant().expect("granted");
    q.release_running(g.running);
    assert_eq!(q.tenant_counts(&"a"), (0, 0));
    for i in 1..=3 {
        push(&mut q, "a", 0, i);
    }
    for i in 11..=12 {
        push(&mut q, "b", 0, i);
    }
    assert_eq!(items(&mut q), [1, 2, 11, 3, 12]);
}

#[test]
fn a_weighted_tenant_at_its_ceiling_gives_up_its_remaining_turns() {
    let mut q = Q::new(wide());
    q.set_weight("a", 4);
    assert!(q
        .set_own_ceiling(Owner::Tenant("a"), Some(2), false)
        .is_ok());
    for i in 1..=4 {
        push(&mut q, "a", 0, i);
    }
    for i in 11..=13 {
        push(&mut q, "b", 0, i);
    }
    assert_eq!(items(&mut q), [1, 2, 11, 12, 13]);
    assert_eq!(q.tenant_counts(&"a"), (2, 2));
}

fn least_held() -> Q {
    let mut q = Q::new(wide());
    q.set_fairness(Fairness::LeastHeld);
    q
}

#[test]
fn least_held_grants_the_tenant_holding_the_fewest_slots_first() {
    let mut q = least_held();
    for i in 1..=3 {
        push(&mut q, "a", 0, i);
    }
    assert_eq!(grants(&mut q, 2).len(), 2);
    for i in 11..=12 {
        push(&mut q, "b", 0, i);
    }
    // "a" is ahead in the rotation but holds two slots; at two each, the
    // rotation breaks the tie.
    assert_eq!(items(&mut q), [11, 12, 3]);
}

#[test]
fn least_held_weighs_slots_by_the_tenants_weight() {
    let mut q = least_held();
    q.set_weight("a", 2);
    for i in 1..=4 {
        push(&mut q, "a", 0, i);
    }
    assert_eq!(grants(&mut q, 2).len(), 2);
    for i in 11..=13 {
        push(&mut q, "b", 0, i);
    }
    // Two slots of weight 2 weigh as one of weight 1.
    assert_eq!(items(&mut q), [11, 3, 12, 4, 13]);
}

#[test]
fn least_held_inside_a_tenant_serves_the_provider_it_holds_fewest_of() {
    let mut q = least_held();
    push(&mut q, "a", 1, 1);
    push(&mut q, "a", 1, 2);
    assert_eq!(grants(&mut q, 1)[0].2, 1);
    push(&mut q, "a", 2, 3);
    push(&mut q, "a", 2, 4);
    // Provider 2 holds none of "a"'s slots; then one each, and the
    // provider rotation breaks the tie.
    assert_eq!(items(&mut q), [3, 2, 4]);
}

#[test]
fn least_held_keeps_the_ceilings() {
    let mut q = least_held();
    assert!(q
        .set_own_ceiling(Owner::Tenant("b"), Some(1), false)
        .is_ok());
    for i in 1..=2 {
        push(&mut q, "a", 0, i);
    }
    for i in 11..=12 {
        push(&mut q, "b", 0, i);
    }
    assert_eq!(items(&mut q), [1, 11, 2]);
    assert_eq!(q.tenant_counts(&"b"), (1, 1));
}
