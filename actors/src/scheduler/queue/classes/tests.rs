//! The class rules, one behaviour each, and the flood harness: what a
//! flood from below leaves a higher class, and what a flood from above
//! leaves a lower one.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::super::properties::assert_invariants;
use super::super::{Ceilings, FairQueue, WaiterKey};
use crate::priority::{MinShares, Priority};

type Q = FairQueue<u32, &'static str, u32>;

const SYSTEM: u32 = Priority::System.rank() as u32;
const INTERACTIVE: u32 = Priority::Interactive.rank() as u32;
const BATCH: u32 = Priority::Batch.rank() as u32;

/// Ceilings that never bind but for `running_total`.
fn slots(running_total: u32) -> Ceilings {
    Ceilings {
        pending_total: 10_000,
        pending_per_tenant: 10_000,
        pending_per_provider: 10_000,
        running_total,
        running_per_tenant: running_total,
        running_per_provider: running_total,
    }
}

fn queue(running_total: u32, shares: [u8; 3]) -> Q {
    let mut q = Q::new(slots(running_total));
    q.set_min_shares(MinShares::new(shares).expect("valid shares"));
    q
}

fn push(q: &mut Q, tenant: &'static str, class: u32, item: u32) -> WaiterKey {
    let key = (q.push_in(tenant, 0, class, item)).map_err(|(refused, _)| refused);
    assert_invariants(q);
    key.expect("push refused")
}

/// Grants until `None`, as items.
fn items(q: &mut Q) -> Vec<u32> {
    let mut out = Vec::new();
    while let Some(g) = q.next_grant() {
        assert_invariants(q);
        out.push(g.item);
    }
    out
}

#[test]
fn a_higher_class_is_served_first_whatever_queued_before_it() {
    let mut q = queue(1, [0, 0, 0]);
    push(&mut q, "a", BATCH, 1);
    assert_eq!(items(&mut q), [1]);
    push(&mut q, "a", BATCH, 2);
    push(&mut q, "b", INTERACTIVE, 3);
    push(&mut q, "c", SYSTEM, 4);
    q.release_in(&"a", &0, BATCH);
    assert_eq!(items(&mut q), [4], "system first");
    q.release_in(&"c", &0, SYSTEM);
    assert_eq!(items(&mut q), [3], "then interactive");
    q.release_in(&"b", &0, INTERACTIVE);
    assert_eq!(items(&mut q), [2], "batch last");
}

#[test]
fn a_class_below_its_minimum_is_served_before_higher_classes() {
    // Batch's minimum: 25 % of 4 slots, one slot.
    let mut q = queue(4, [0, 0, 25]);
    for i in 0..8 {
        push(&mut q, "i", INTERACTIVE, i);
    }
    push(&mut q, "b", BATCH, 100);
    push(&mut q, "b", BATCH, 101);
    // Batch holds none: its first grant comes first; then interactive.
    assert_eq!(items(&mut q), [100, 0, 1, 2]);
    assert_eq!(
        (q.class_running(INTERACTIVE), q.class_running(BATCH)),
        (3, 1)
    );
    // Interactive's releases stay interactive's: batch is at its minimum.
    q.release_in(&"i", &0, INTERACTIVE);
    assert_eq!(items(&mut q), [3]);
    // Batch's release goes back to batch, though interactive waits.
    q.release_in(&"b", &0, BATCH);
    assert_eq!(items(&mut q), [101]);
}

#[test]
fn a_lower_class_never_takes_a_higher_class_s_unused_minimum() {
    // Interactive's minimum: half of 8 slots.
    let mut q = queue(8, [0, 50, 0]);
    for i in 0..10 {
        push(&mut q, "b", BATCH, i);
    }
    assert_eq!(items(&mut q).len(), 4, "batch borrows only the rest");
    // Interactive finds its minimum free at once.
    for i in 100..104 {
        push(&mut q, "i", INTERACTIVE, i);
    }
    assert_eq!(items(&mut q), [100, 101, 102, 103]);
    // Interactive releasing one of its minimum keeps it for interactive.
    q.release_in(&"i", &0, INTERACTIVE);
    assert!(q.next_grant().is_none(), "batch may not take it");
    // What interactive runs above its minimum is borrowed, and returns to
    // whoever waits: here batch.
    push(&mut q, "i", INTERACTIVE, 104);
    push(&mut q, "i", INTERACTIVE, 105);
    assert_eq!(items(&mut q), [104], "one slot was free");
    q.release_in(&"b", &0, BATCH);
    assert_eq!(
        items(&mut q),
        [105],
        "interactive above its minimum borrows"
    );
    q.release_in(&"i", &0, INTERACTIVE);
    assert_eq!(items(&mut q), [4], "batch borrows what interactive left");
}

#[test]
fn a_higher_class_borrows_a_lower_class_s_unused_minimum() {
    let mut q = queue(4, [0, 0, 50]);
    for i in 0..6 {
        push(&mut q, "i", INTERACTIVE, i);
    }
    assert_eq!(items(&mut q), [0, 1, 2, 3], "every slot, batch's included");
    push(&mut q, "b", BATCH, 100);
    q.release_in(&"i", &0, INTERACTIVE);
    assert_eq!(
        items(&mut q),
        [100],
        "batch's minimum comes back at a release"
    );
}

#[test]
fn classes_share_the_tenant_and_provider_ceilings() {
    let mut q = Q::new(Ceilings {
        running_per_tenant: 2,
        ..slots(10)
    });
    q.set_min_shares(MinShares::NONE);
    push(&mut q, "a", BATCH, 1);
    push(&mut q, "a", INTERACTIVE, 2);
    push(&mut q, "a", SYSTEM, 3);
    assert_eq!(items(&mut q), [3, 2], "two of tenant a's, whatever class");
    q.release_in(&"a", &0, SYSTEM);
    assert_eq!(items(&mut q), [1]);
}

/// A deterministic pseudo-random sequence (a 64-bit LCG's high bits).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = (self.0)
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// What one run of the flood harness measured.
struct Flooded {
    /// The interactive tenant's waits, in ticks, sorted.
    waits: Vec<u64>,
    /// Batch's share of slot-time.
    batch_share: f64,
    /// The fewest batch requests running at the end of a tick while
    /// batch had one waiting.
    batch_floor: u32,
}

impl Flooded {
    fn p99(&self) -> u64 {
        self.waits[self.waits.len() * 99 / 100]
    }
}

/// 20 slots, at most 8 per tenant. One interactive tenant's requests
/// arrive at random (at most one per tick, with probability `arrival` in
/// 100) and hold their slot 5–24 ticks. With `flood`, four batch tenants
/// keep 50 requests queued each, holding 30 ticks, and `floods_above`
/// interactive tenants keep 50 queued each, holding 10 ticks. Slot-time
/// and waits are counted over 40,000 ticks after a warm-up of 1,000.
fn flood(shares: [u8; 3], arrival: u64, flood: bool, floods_above: u32) -> Flooded {
    const BATCH_TENANTS: [&str; 4] = ["b0", "b1", "b2", "b3"];
    const ABOVE: [&str; 4] = ["f0", "f1", "f2", "f3"];
    let mut q = Q::new(Ceilings {
        running_per_tenant: 8,
        ..slots(20)
    });
    q.set_min_shares(MinShares::new(shares).expect("valid shares"));
    let mut random = Lcg(7);
    // Arrival tick of each interactive request, by item.
    let mut arrived: Vec<u64> = Vec::new();
    let mut ends: BinaryHeap<Reverse<(u64, &'static str, u32)>> = BinaryHeap::new();
    let batch_tenants: &[&str] = if flood { &BATCH_TENANTS } else { &[] };
    let above = &ABOVE[..floods_above as usize];
    for &t in batch_tenants {
        for _ in 0..50 {
            assert!(q.push_in(t, 0, BATCH, u32::MAX).is_ok());
        }
    }
    for &t in above {
        for _ in 0..50 {
            assert!(q.push_in(t, 0, INTERACTIVE, u32::MAX).is_ok());
        }
    }
    let (mut waits, mut batch_held, mut all_held) = (Vec::new(), 0u64, 0u64);
    let mut batch_floor = u32::MAX;
    for now in 0..41_000u64 {
        while let Some(&Reverse((end, t, c))) = ends.peek().filter(|e| e.0 .0 <= now) {
            ends.pop();
            debug_assert!(end <= now);
            q.release_in(&t, &0, c);
        }
        if random.below(100) < arrival {
            let item = u32::try_from(arrived.len()).expect("fewer items than u32");
            arrived.push(now);
            assert!(q.push_in("i", 0, INTERACTIVE, item).is_ok());
        }
        while let Some(g) = q.next_grant() {
            let (tenant, _) = q.keys(g.running).expect("live entries");
            let t = *tenant;
            let (class, hold) = if t == "i" {
                let item = g.item as usize;
                if now >= 1_000 {
                    waits.push(now - arrived[item]);
                }
                (INTERACTIVE, 5 + random.below(20))
            } else if t.starts_with('b') {
                (BATCH, 30)
            } else {
                (INTERACTIVE, 10)
            };
            ends.push(Reverse((now + hold, t, class)));
            if t != "i" {
                // The floods stay queued.
                assert!(q.push_in(t, 0, class, u32::MAX).is_ok());
            }
        }
        if now >= 1_000 {
            batch_held += u64::from(q.class_running(BATCH));
            all_held += u64::from(q.running());
            if flood {
                batch_floor = batch_floor.min(q.class_running(BATCH));
            }
        }
    }
    assert_invariants(&q);
    waits.sort_unstable();
    Flooded {
        waits,
        batch_share: batch_held as f64 / all_held.max(1) as f64,
        batch_floor,
    }
}

/// Interactive keeps half the slots, batch a tenth. The interactive
/// tenant's load (a third of the slots on average, bursts above its
/// per-tenant ceiling of 8) queues on its own ceiling even when quiet;
/// four batch tenants flooding add nothing to its p99 wait, and batch
/// never runs below its minimum. Without minimums (strict priority,
/// every slot borrowed), the same flood raises the p99 well past 1.2×.
#[test]
fn a_batch_flood_leaves_an_interactive_tenant_s_p99_wait_and_batch_its_minimum() {
    let shares = [0, 50, 10];
    let quiet = flood(shares, 35, false, 0);
    let flooded = flood(shares, 35, true, 0);
    assert!(
        quiet.p99() > 0,
        "the quiet tenant queues on its own ceiling"
    );
    assert!(
        flooded.p99() as f64 <= quiet.p99() as f64 * 1.2,
        "interactive p99: {} ticks flooded, {} quiet",
        flooded.p99(),
        quiet.p99()
    );
    assert!(
        flooded.batch_floor >= 2,
        "batch ran {}",
        flooded.batch_floor
    );

    let unreserved = flood([0, 0, 10], 35, true, 0);
    assert!(
        unreserved.p99() as f64 > quiet.p99() as f64 * 1.2,
        "without interactive's minimum the flood should show: p99 {} against {}",
        unreserved.p99(),
        quiet.p99()
    );
}

/// Interactive tenants flooding from above with batch flooding too: batch
/// keeps its minimum (2 of 20 slots) at every tick, and its share of
/// slot-time is that minimum within 5 %.
#[test]
fn a_flood_from_above_leaves_batch_its_minimum_share() {
    let flooded = flood([0, 0, 10], 0, true, 4);
    assert!(
        flooded.batch_floor >= 2,
        "batch ran {}",
        flooded.batch_floor
    );
    assert!(
        (flooded.batch_share - 0.10).abs() <= 0.10 * 0.05,
        "batch's share of slot-time {:.4}",
        flooded.batch_share
    );
}
