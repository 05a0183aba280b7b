use std::any::TypeId;

use tokio::sync::oneshot;

use super::{Waiter, Waiters};
use crate::epoch::Checkout;
use crate::identity::TenantId;

fn tenant(name: &str) -> TenantId {
    name.parse().expect("tenant id")
}

/// A waiter of `name` whose receiver the test keeps (or drops, to leave).
fn waiter<T: 'static>(name: &str) -> (Waiter, oneshot::Receiver<Checkout>) {
    let (reply, answer) = oneshot::channel();
    let waiter = Waiter {
        tenant: tenant(name),
        type_id: TypeId::of::<T>(),
        reply,
    };
    (waiter, answer)
}

fn order(waiters: &mut Waiters) -> Vec<String> {
    std::iter::from_fn(|| waiters.next())
        .map(|w| w.tenant.as_str().to_owned())
        .collect()
}

#[test]
fn tenants_take_turns_whatever_order_their_callers_came_in() {
    let mut waiters = Waiters::default();
    let mut keep = Vec::new();
    for name in ["a", "a", "a", "b", "c", "c"] {
        let (w, rx) = waiter::<u32>(name);
        waiters.push(w);
        keep.push(rx);
    }
    assert_eq!(waiters.len(), 6);
    assert_eq!(order(&mut waiters), ["a", "b", "c", "a", "c", "a"]);
    assert_eq!(waiters.len(), 0);
}

#[test]
fn a_departed_caller_is_skipped_and_not_counted_once_met() {
    let mut waiters = Waiters::default();
    let (gone, rx) = waiter::<u32>("a");
    drop(rx);
    waiters.push(gone);
    let (b, _b) = waiter::<u32>("b");
    waiters.push(b);
    let (a2, _a2) = waiter::<u32>("a");
    waiters.push(a2);
    // `a`'s first caller left: `a`'s turn goes to its second.
    assert_eq!(order(&mut waiters), ["a", "b"]);
    assert_eq!(waiters.len(), 0);
}

#[test]
fn a_caller_put_back_keeps_its_place_and_its_tenants_turn() {
    let mut waiters = Waiters::default();
    let mut keep = Vec::new();
    for name in ["a", "b", "a"] {
        let (w, rx) = waiter::<u32>(name);
        waiters.push(w);
        keep.push(rx);
    }
    let first = waiters.next().expect("a's first");
    assert_eq!(first.tenant.as_str(), "a");
    waiters.put_back(first);
    assert_eq!(waiters.len(), 3);
    assert_eq!(order(&mut waiters), ["a", "b", "a"]);
}

#[test]
fn a_tenant_whose_caller_does_not_fit_keeps_its_turn() {
    let mut waiters = Waiters::default();
    let (a, _a) = waiter::<&str>("a");
    waiters.push(a);
    let (b, _b) = waiter::<u32>("b");
    waiters.push(b);
    let (c, _c) = waiter::<u32>("c");
    waiters.push(c);
    let fits_u32 = |t: TypeId| t == TypeId::of::<u32>();
    let served = waiters.next_where(fits_u32).expect("b fits");
    assert_eq!(served.tenant.as_str(), "b");
    assert!(waiters.next_where(|_| false).is_none());
    // `a` was passed over twice and is still first; `c` is next after it.
    assert_eq!(order(&mut waiters), ["a", "c"]);
}

#[test]
fn departed_callers_are_pruned_before_they_pile_up() {
    let mut waiters = Waiters::default();
    let (live, _live) = waiter::<u32>("live");
    waiters.push(live);
    for _ in 0..1_000 {
        let (gone, rx) = waiter::<u32>("flood");
        drop(rx);
        waiters.push(gone);
    }
    assert!(
        waiters.len() <= 2 * super::MIN_PRUNE,
        "{} queued, at most {} expected",
        waiters.len(),
        2 * super::MIN_PRUNE
    );
    assert_eq!(order(&mut waiters), ["live"]);
}

#[test]
fn drain_takes_every_queued_caller_and_leaves_none() {
    let mut waiters = Waiters::default();
    let mut keep = Vec::new();
    for name in ["a", "b", "a"] {
        let (w, rx) = waiter::<u32>(name);
        waiters.push(w);
        keep.push(rx);
    }
    let mut drained: Vec<String> = waiters
        .drain()
        .map(|w| w.tenant.as_str().to_owned())
        .collect();
    drained.sort();
    assert_eq!(drained, ["a", "a", "b"], "every caller, to be refused");
    assert_eq!(waiters.len(), 0);
    assert!(waiters.next().is_none(), "nobody left to serve");
}
