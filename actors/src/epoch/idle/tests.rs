use std::any::{Any, TypeId};
use std::sync::Arc;
use std::time::Duration;

use super::IdleConn;
use super::IdleStash;
use crate::budget::Budget;

const AGE: Duration = Duration::from_secs(30);

struct Budgets {
    node: Arc<Budget>,
    client: Arc<Budget>,
    idle: Arc<Budget>,
}

impl Budgets {
    fn new() -> Self {
        Self {
            node: Budget::new("connections", 16),
            client: Budget::new("connections_per_client", 16),
            idle: Budget::new("idle_connections", 16),
        }
    }

    fn entry<T: Any + Send>(&self, conn: T) -> IdleConn {
        IdleConn::charged(conn, &self.node, &self.client, Some(&self.idle))
    }

    fn used(&self) -> (u32, u32, u32) {
        (self.node.used(), self.client.used(), self.idle.used())
    }
}

fn value<T: Any + Copy>(entry: &IdleConn) -> T {
    *entry.conn.downcast_ref::<T>().expect("type")
}

#[tokio::test(start_paused = true)]
async fn take_returns_the_most_recent_of_its_type_and_keeps_the_others_in_order() {
    let b = Budgets::new();
    let stash = IdleStash::new(0, None);
    stash.restore(b.entry(1u32));
    stash.restore(b.entry(2u32));
    stash.restore(b.entry("other"));

    let taken = stash.take(TypeId::of::<u32>(), AGE).expect("a u32");
    assert_eq!(value::<u32>(&taken), 2, "most recently parked first");
    drop(taken);
    assert_eq!(b.used(), (2, 2, 2), "the taken entry released its charges");

    let other = stash
        .take(TypeId::of::<&str>(), AGE)
        .expect("the other type");
    assert_eq!(value::<&str>(&other), "other");
    let last = stash.take(TypeId::of::<u32>(), AGE).expect("the older u32");
    assert_eq!(value::<u32>(&last), 1);
    assert!(stash.take(TypeId::of::<u32>(), AGE).is_none());
}

#[tokio::test(start_paused = true)]
async fn an_expired_entry_is_destroyed_at_checkout_never_returned() {
    let b = Budgets::new();
    let stash = IdleStash::new(0, None);
    stash.restore(b.entry(1u32));
    tokio::time::advance(AGE).await;
    stash.restore(b.entry(2u32));

    let taken = stash.take(TypeId::of::<u32>(), AGE).expect("the fresh one");
    assert_eq!(value::<u32>(&taken), 2);
    assert!(stash.take(TypeId::of::<u32>(), AGE).is_none(), "1 expired");
    assert_eq!(b.used(), (1, 1, 1), "only the taken entry is still charged");
}

#[tokio::test(start_paused = true)]
async fn reclaim_destroys_expired_entries_oldest_first_within_its_bound() {
    let b = Budgets::new();
    let stash = IdleStash::new(0, None);
    for i in 0..5u32 {
        stash.restore(b.entry(i));
    }
    tokio::time::advance(AGE).await;
    stash.restore(b.entry(9u32));

    assert_eq!(stash.reclaim(AGE, 3), 3);
    assert_eq!(b.used(), (3, 3, 3));
    assert_eq!(stash.reclaim(AGE, 3), 2, "stops at the first fresh entry");
    assert_eq!(stash.reclaim(AGE, 3), 0);
    let fresh = stash.take(TypeId::of::<u32>(), AGE).expect("fresh");
    assert_eq!(value::<u32>(&fresh), 9);
}

#[test]
fn clear_destroys_everything_and_releases_every_charge() {
    let b = Budgets::new();
    let stash = IdleStash::new(0, None);
    stash.restore(b.entry(1u32));
    stash.restore(b.entry(2u64));
    stash.clear();
    assert_eq!(b.used(), (0, 0, 0));
}

/// A connection whose destructor panics (adapter code gone wrong).
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("injected: an idle connection's destructor panics");
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_destructor_unwinds_from_clear_after_every_entry_is_released() {
    let b = Budgets::new();
    let stash = IdleStash::new(0, None);
    stash.restore(b.entry(Bomb));
    stash.restore(b.entry(1u32));
    stash.restore(b.entry(2u32));

    // In the epoch actor this panic fails the actor, whose supervisor
    // restarts it: the destructor is adapter code it ran.
    let cleared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| stash.clear()));

    assert!(cleared.is_err(), "the destructor's panic unwinds");
    assert_eq!(b.used(), (0, 0, 0), "all three released, the bomb too");
    assert!(stash.take(TypeId::of::<u32>(), AGE).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_stash_dropped_with_a_panicking_entry_contains_it_and_releases_all() {
    let b = Budgets::new();
    let stash = IdleStash::new(0, None);
    stash.restore(b.entry(Bomb));
    stash.restore(b.entry(2u32));

    // Where the last owner of a retired epoch is a control actor.
    drop(stash);

    assert_eq!(b.used(), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn clear_contained_survives_a_panicking_destructor_and_releases_all() {
    let b = Budgets::new();
    let stash = IdleStash::new(0, None);
    stash.restore(b.entry(Bomb));
    stash.restore(b.entry(3u32));

    // What a restarted epoch actor does with its predecessor's entries.
    stash.clear_contained();

    assert_eq!(b.used(), (0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_checkout_never_returns_a_connection_whose_close_was_reported_however_many_are_parked() {
    let b = Budgets::new();
    let stash = IdleStash::new(0, None);
    stash.restore(b.entry(0u32));
    for n in 1..=10u32 {
        let (watch, notifier) = crate::epoch::watch::close_watch();
        let mut entry = b.entry(n);
        entry.watch = Some(watch);
        stash.restore(entry);
        notifier.closed();
    }
    assert_eq!(b.used(), (11, 11, 11));
    let taken = stash.take(TypeId::of::<u32>(), AGE).expect("the open one");
    assert_eq!(value::<u32>(&taken), 0, "every closed one was skipped");
    assert_eq!(
        b.used(),
        (1, 1, 1),
        "the ten closed ones were destroyed and released"
    );
    drop(taken);
    assert!(stash.take(TypeId::of::<u32>(), AGE).is_none());
}

#[tokio::test(start_paused = true)]
async fn evicting_closed_entries_keeps_the_open_ones_in_order() {
    let b = Budgets::new();
    let stash = IdleStash::new(0, None);
    let mut notifiers = Vec::new();
    for n in 1..=4u32 {
        let (watch, notifier) = crate::epoch::watch::close_watch();
        let mut entry = b.entry(n);
        entry.watch = Some(watch);
        stash.restore(entry);
        notifiers.push(notifier);
    }
    // Close 2 and 4; their notices have no home (restored, not parked),
    // so the eviction is explicit here.
    drop(notifiers.remove(3));
    drop(notifiers.remove(1));
    assert_eq!(stash.evict_closed(), 2);
    assert_eq!(b.used(), (2, 2, 2));
    let newest = stash.take(TypeId::of::<u32>(), AGE).expect("3");
    assert_eq!(value::<u32>(&newest), 3);
    let oldest = stash.take(TypeId::of::<u32>(), AGE).expect("1");
    assert_eq!(value::<u32>(&oldest), 1);
}
