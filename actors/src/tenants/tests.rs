//! Unit tests for the per-tenant shares.

use std::sync::Arc;

use super::{Lowered, TenantShares};
use crate::budget::{Budget, Exhausted};
use crate::identity::TenantId;
use crate::limits::Limits;

/// The tenant named `name` (the share tables' tests use it too).
pub(super) fn tenant(name: &str) -> TenantId {
    TenantId::new(name).expect("valid tenant")
}

fn shares(metadata: u32, requests: u32) -> TenantShares {
    TenantShares::new(&Limits {
        metadata_per_tenant: metadata,
        requests_per_tenant: requests,
        ..Limits::DEFAULT
    })
}

#[test]
fn a_tenant_at_its_share_is_refused_before_the_shared_budget_is_touched() {
    let shares = shares(100, 4);
    let shared = Budget::new("metadata_bytes", 1_000);
    let held = shares
        .charge_metadata(&tenant("attacker"), &shared, 90)
        .expect("within the share");
    let refused = shares.charge_metadata(&tenant("attacker"), &shared, 20);
    assert_eq!(
        refused.err(),
        Some(Exhausted {
            resource: "metadata_per_tenant",
            used: 90,
            limit: 100,
            requested: 20,
        })
    );
    assert_eq!(shared.used(), 90, "the refusal took nothing shared");
    let victim = shares
        .charge_metadata(&tenant("victim"), &shared, 100)
        .expect("another tenant has its own share");
    assert_eq!(shared.used(), 190);
    drop((held, victim));
    assert_eq!(shared.used(), 0);
}

#[test]
fn a_full_shared_budget_refuses_and_returns_the_tenant_part() {
    let shares = shares(100, 4);
    let shared = Budget::new("metadata_bytes", 50);
    let refused = shares.charge_metadata(&tenant("a"), &shared, 60);
    assert_eq!(refused.err().map(|e| e.resource), Some("metadata_bytes"));
    // The tenant's own part was returned: its whole share is free again.
    let whole = shares.charge_metadata(&tenant("a"), &Budget::new("other", 1_000), 100);
    assert!(whole.is_ok(), "{whole:?}");
}

#[test]
fn admissions_are_counted_per_tenant_up_to_the_share() {
    let shares = shares(100, 2);
    let a = tenant("a");
    let first = shares.admit(&a).expect("one");
    let second = shares.admit(&a).expect("two");
    let third = shares
        .admit(&a)
        .err()
        .map(|e| (e.resource, e.used, e.limit));
    assert_eq!(third, Some(("requests_per_tenant", 2, 2)));
    assert!(shares.admit(&tenant("b")).is_ok(), "b has its own count");
    drop(first);
    assert!(shares.admit(&a).is_ok(), "a released one");
    drop(second);
}

#[test]
fn a_tenant_budget_starts_again_at_zero_once_its_charges_are_gone() {
    let shares = shares(100, 2);
    let shared = Budget::new("metadata_bytes", 1_000);
    let charge = shares
        .charge_metadata(&tenant("a"), &shared, 100)
        .expect("share");
    drop(charge);
    // Nothing of it is charged any more; the next charge starts at zero.
    let again = shares.charge_metadata(&tenant("a"), &shared, 100);
    assert!(again.is_ok(), "{again:?}");
}

#[test]
fn dead_entries_are_pruned_so_the_table_stays_bounded() {
    let shares = shares(100, 2);
    let shared = Budget::new("metadata_bytes", 1_000_000);
    for n in 0..1_000 {
        let charge = shares.charge_metadata(&tenant(&format!("t{n}")), &shared, 1);
        drop(charge);
    }
    assert!(shares.entries() <= 64, "{} entries", shares.entries());
}

#[test]
fn lowering_refuses_below_a_tenants_use_and_changes_nothing() {
    let shares = shares(100, 4);
    let shared = Budget::new("metadata_bytes", 1_000);
    let held = shares
        .charge_metadata(&tenant("a"), &shared, 80)
        .expect("share");
    let _other = shares
        .charge_metadata(&tenant("b"), &shared, 10)
        .expect("share");
    let lowered = |metadata, requests| Lowered {
        metadata,
        requests,
        workers: 8,
    };
    let refused = shares
        .lower(lowered(50, 4))
        .err()
        .map(|e| (e.used, e.requested));
    assert_eq!(refused, Some((80, 50)));
    // Nothing changed: b may still reach the old share.
    assert!(shares.charge_metadata(&tenant("b"), &shared, 90).is_ok());
    drop(held);
    let previous = shares
        .lower(lowered(50, 1))
        .expect("no tenant above 50 now");
    let new_tenant = shares.charge_metadata(&tenant("c"), &shared, 60);
    assert_eq!(new_tenant.err().map(|e| e.limit), Some(50));
    let c = tenant("c");
    let _one = shares.admit(&c).expect("one admission");
    assert!(shares.admit(&c).is_err(), "the lowered admissions share");
    shares.restore(previous);
    assert!(shares.charge_metadata(&c, &shared, 100).is_ok(), "restored");
}

#[test]
fn charges_keep_their_budget_alive_across_clones_of_the_table() {
    let shares = Arc::new(shares(10, 2));
    let shared = Budget::new("metadata_bytes", 100);
    let a = tenant("a");
    let held = shares.charge_metadata(&a, &shared, 10).expect("share");
    let again = shares.charge_metadata(&a, &shared, 1);
    assert_eq!(
        again.err().map(|e| e.used),
        Some(10),
        "same budget, still full"
    );
    drop(held);
}

#[test]
fn worker_slots_are_counted_per_tenant_up_to_the_share() {
    let shares = TenantShares::new(&Limits {
        workers_per_tenant: 1,
        ..Limits::DEFAULT
    });
    let held = shares.worker(&tenant("a")).expect("one");
    let refused = shares
        .worker(&tenant("a"))
        .err()
        .map(|e| (e.resource, e.limit));
    assert_eq!(refused, Some(("workers_per_tenant", 1)));
    assert!(shares.worker(&tenant("b")).is_ok(), "b has its own share");
    drop(held);
    assert!(shares.worker(&tenant("a")).is_ok());
}
