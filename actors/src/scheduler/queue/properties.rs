//! Whole-queue properties: the queue against the naive reference model,
//! the fairness simulation, and the invariant check the unit tests share.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;

use proptest::prelude::*;

use super::model::Model;
use std::time::Duration;

use proptest::test_runner::TestCaseError;

use super::{Ceilings, FairQueue, Fairness, Owner, Rate, RunningKey, WaiterKey, CLASSES};
use crate::priority::MinShares;

/// Checks the module's invariants on the queue's internals.
pub(super) fn assert_invariants<T, K, P>(q: &FairQueue<T, K, P>)
where
    K: Clone + Eq + Hash + fmt::Debug,
    P: Clone + Eq + Hash + fmt::Debug,
{
    let c = q.ceilings;
    let tenants: Vec<_> = q.tenants.values().collect();
    let providers: Vec<_> = q.providers.values().collect();
    assert_eq!(tenants.iter().map(|t| t.pending).sum::<u32>(), q.pending);
    assert_eq!(providers.iter().map(|p| p.pending).sum::<u32>(), q.pending);
    assert_eq!(tenants.iter().map(|t| t.running).sum::<u32>(), q.running);
    assert_eq!(providers.iter().map(|p| p.running).sum::<u32>(), q.running);
    assert_eq!(q.waiters.len(), q.pending as usize);
    assert_eq!(q.tenant_ix.len(), q.tenants.len());
    assert_eq!(q.provider_ix.len(), q.providers.len());
    assert_eq!(q.group_ix.len(), q.groups.len());
    assert_eq!(q.created_tenants.len() as usize, q.tenants.len());
    assert_eq!(q.created_providers.len() as usize, q.providers.len());
    for t in &tenants {
        assert!(t.pending + t.running > 0, "idle tenant kept");
        let ceiling = t
            .own_ceiling
            .map_or(c.running_per_tenant, |own| own.min(c.running_per_tenant));
        assert!(t.pending <= c.pending_per_tenant && t.running <= ceiling);
        assert_eq!(t.own_ceiling, q.own_ceilings.get(&t.key).copied());
        assert_eq!(t.weight, q.weight_of(&t.key));
        let lacks = (t.rate).is_some_and(|gcra| !gcra.ready(tokio::time::Instant::now()));
        for (c, in_class) in t.classes.iter().enumerate() {
            let key = &t.key;
            assert!(
                in_class.active || in_class.turns == 0,
                "{key:?} out with turns"
            );
            let waits = !in_class.groups.is_empty() && t.running < ceiling;
            if in_class.active {
                assert!(waits && !lacks, "rotation membership of {key:?} in {c}");
            } else if waits {
                // Out of the rotation for want of a token (which may have
                // come since): listed until the alarm's refill.
                assert!(t.rate.is_some() && t.awaiting, "{key:?} left out of {c}");
            }
        }
        assert_eq!(t.rate.is_some(), q.rates.tenants.contains_key(&t.key));
        let listed = (q.rates.awaiting_tenants.iter()).filter(|&&(x, generation)| {
            q.tenants.generation(x) == Some(generation)
                && q.tenants.get(x).is_some_and(|y| y.key == t.key)
        });
        assert!(!t.awaiting || listed.count() == 1, "awaiting but unlisted");
    }
    for p in &providers {
        assert!(p.pending + p.running > 0, "idle provider kept");
        let ceiling = p.own_ceiling.map_or(c.running_per_provider, |own| {
            own.min(c.running_per_provider)
        });
        assert!(p.pending <= c.pending_per_provider && p.running <= ceiling);
        // Parked groups wait for a running slot, or for a token (listed).
        let awaiting = p.rate.is_some() && p.awaiting;
        assert!(p.blocked.is_empty() || p.running >= ceiling || awaiting);
        let listed = (q.rates.awaiting.iter()).filter(|&&(x, generation)| {
            q.providers.generation(x) == Some(generation)
                && q.providers.get(x).is_some_and(|y| y.key == p.key)
        });
        assert!(!p.awaiting || listed.count() == 1, "awaiting but unlisted");
        assert_eq!(p.rate.is_some(), q.rates.providers.contains_key(&p.key));
        assert_eq!(p.own_ceiling, q.own_provider_ceilings.get(&p.key).copied());
    }
    let in_rotations = (tenants.iter().flat_map(|t| &t.classes)).map(|x| x.groups.len());
    let in_fifos: u32 =
        in_rotations.sum::<u32>() + providers.iter().map(|p| p.blocked.len()).sum::<u32>();
    assert_eq!(in_fifos as usize, q.groups.len());
    for g in q.groups.values() {
        assert!(!g.waiters.is_empty(), "empty group kept");
        assert!((g.class as usize) < CLASSES, "group of class {}", g.class);
    }
    assert_eq!(q.class_running.iter().sum::<u32>(), q.running);
    assert_eq!(q.class_pending.iter().sum::<u32>(), q.pending);
    for p in q.providers.values() {
        let pairs: u32 = q
            .pair_running
            .iter()
            .filter(|(&(_, x), _)| q.providers.get(x).is_some_and(|y| y.key == p.key))
            .map(|(_, &n)| n)
            .sum();
        assert_eq!(pairs, p.running, "pair counts of {:?}", p.key);
    }
    assert!(q.pair_running.values().all(|&n| n > 0), "zero pair kept");
    for (c, rotation) in q.rotation.iter().enumerate() {
        let active = tenants.iter().filter(|t| t.classes[c].active).count();
        assert_eq!(rotation.len() as usize, active);
        let (mut walked, mut next) = (0, rotation.front());
        while let Some(t) = next {
            assert!(q.tenants.get(t).is_some_and(|t| t.classes[c].active));
            walked += 1;
            next = rotation.next_of(&q.tenants, t);
        }
        assert_eq!(walked, active);
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Queue for a tenant and provider in a class (by rank).
    Push(u8, u8, u32),
    /// Admit as the scheduler does: granted at once when nobody waits and
    /// its turn is now, else queued and one grant made.
    Admit(u8, u8, u32),
    Cancel(usize),
    Grant,
    Release(usize),
    SetCeilings(Ceilings),
    SetOwnCeiling(Owner<u8, u8>, Option<u32>),
    /// Configure a provider's or tenant's rate: requests per 100 ms, burst.
    ConfigureRate(Owner<u8, u8>, u32, u32),
    /// Change a rate in force, likewise.
    SetRate(Owner<u8, u8>, u32, u32),
    /// Advance the clock by so many ms, then ring the alarm (refill).
    Tick(u64),
    /// Give a tenant a weight.
    SetWeight(u8, u32),
    /// Choose the fairness policy.
    SetFairness(Fairness),
    /// Set the classes' minimum shares, in percent by rank.
    SetMinShares([u8; CLASSES]),
}

/// A rate of `requests` per 100 ms with `burst`.
fn rate(requests: u32, burst: u32) -> Rate {
    Rate {
        requests,
        period: Duration::from_millis(100),
        burst,
    }
}

fn ceilings() -> impl Strategy<Value = Ceilings> {
    (0u32..=16, 0u32..=6, 0u32..=6, 0u32..=8, 0u32..=4, 0u32..=4).prop_map(|c| Ceilings {
        pending_total: c.0,
        pending_per_tenant: c.1,
        pending_per_provider: c.2,
        running_total: c.3,
        running_per_tenant: c.4,
        running_per_provider: c.5,
    })
}

fn rate_owner() -> impl Strategy<Value = Owner<u8, u8>> {
    prop_oneof![
        (0u8..4).prop_map(Owner::Provider),
        (0u8..6).prop_map(Owner::Tenant),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..6, 0u8..4, 0u32..CLASSES as u32).prop_map(|(t, p, c)| Op::Push(t, p, c)),
        3 => (0u8..6, 0u8..4, 0u32..CLASSES as u32).prop_map(|(t, p, c)| Op::Admit(t, p, c)),
        2 => any::<usize>().prop_map(Op::Cancel),
        4 => Just(Op::Grant),
        3 => any::<usize>().prop_map(Op::Release),
        1 => ceilings().prop_map(Op::SetCeilings),
        1 => (0u8..6, proptest::option::of(0u32..=4))
            .prop_map(|(t, c)| Op::SetOwnCeiling(Owner::Tenant(t), c)),
        1 => (0u8..4, proptest::option::of(0u32..=4))
            .prop_map(|(p, c)| Op::SetOwnCeiling(Owner::Provider(p), c)),
        1 => (rate_owner(), 1u32..=4, 1u32..=3).prop_map(|(o, r, b)| Op::ConfigureRate(o, r, b)),
        1 => (rate_owner(), 1u32..=4, 1u32..=3).prop_map(|(o, r, b)| Op::SetRate(o, r, b)),
        3 => (0u64..80).prop_map(Op::Tick),
        1 => (0u8..6, 1u32..=4).prop_map(|(t, w)| Op::SetWeight(t, w)),
        1 => prop_oneof![Just(Fairness::Rotation), Just(Fairness::LeastHeld)]
            .prop_map(Op::SetFairness),
        1 => (0u8..=60, 0u8..=60, 0u8..=60)
            .prop_filter("at most 100 %", |s| u32::from(s.0) + u32::from(s.1) + u32::from(s.2) <= 100)
            .prop_map(|s| Op::SetMinShares([s.0, s.1, s.2])),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn the_queue_matches_the_reference_model(
        initial in ceilings(),
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        runtime.block_on(against_the_model(initial, ops))?;
    }
}

/// Applies `ops` to the queue and the model on the paused clock, comparing
/// every answer and count after each.
async fn against_the_model(initial: Ceilings, ops: Vec<Op>) -> Result<(), TestCaseError> {
    {
        let mut queue: FairQueue<u32, u8, u8> = FairQueue::new(initial);
        let mut model = Model::new(initial);
        let mut keys: Vec<(WaiterKey, u32)> = Vec::new();
        let mut key_of: HashMap<u32, WaiterKey> = HashMap::new();
        let mut running: Vec<(u8, u8, RunningKey)> = Vec::new();
        for (step, op) in ops.into_iter().enumerate() {
            let item = step as u32;
            match op {
                Op::Push(t, p, c) => {
                    push_both(
                        &mut queue,
                        &mut model,
                        (t, p, c, item),
                        &mut keys,
                        &mut key_of,
                    )?;
                }
                Op::Admit(t, p, c) => {
                    let idle = queue.pending() == 0;
                    if let Some(key) = queue.grant_at_once(&t, &p, c) {
                        prop_assert!(idle, "granted at once past a waiter");
                        prop_assert_eq!(model.push(t, p, c, item), Ok(()));
                        prop_assert_eq!(model.next_grant(), Some((t, p, item)));
                        let keyed = queue.keys(key).map(|(t, p)| (*t, *p));
                        prop_assert_eq!(keyed, Some((t, p)));
                        prop_assert_eq!(key.class, c);
                        running.push((t, p, key));
                    } else {
                        push_both(
                            &mut queue,
                            &mut model,
                            (t, p, c, item),
                            &mut keys,
                            &mut key_of,
                        )?;
                        let got = grant_both(&mut queue, &mut model, &key_of, &mut running)?;
                        prop_assert!(
                            !idle || got != Some((t, p, item)),
                            "not granted at once, though its turn was now"
                        );
                    }
                }
                Op::Cancel(i) if !keys.is_empty() => {
                    let (key, item) = keys[i % keys.len()];
                    prop_assert_eq!(queue.cancel(key), model.cancel(item));
                }
                Op::Grant => {
                    grant_both(&mut queue, &mut model, &key_of, &mut running)?;
                }
                Op::Release(i) if !running.is_empty() => {
                    let (t, p, key) = running.swap_remove(i % running.len());
                    queue.release_running(key);
                    model.release(t, p, key.class);
                }
                Op::SetCeilings(c) => {
                    prop_assert_eq!(queue.set_ceilings(c), model.set_ceilings(c));
                }
                Op::SetOwnCeiling(owner, c) => {
                    prop_assert_eq!(
                        queue.set_own_ceiling(owner, c, false),
                        model.set_own_ceiling(owner, c)
                    );
                }
                Op::ConfigureRate(owner, r, b) => {
                    // Room for every key: `Full` is a unit test's.
                    prop_assert_eq!(
                        queue.configure_rate(owner, rate(r, b), 8),
                        model.configure_rate(owner, rate(r, b))
                    );
                }
                Op::SetRate(owner, r, b) => {
                    prop_assert_eq!(
                        queue.set_rate(&owner, rate(r, b), None),
                        model.set_rate(owner, rate(r, b))
                    );
                }
                Op::Tick(ms) => {
                    tokio::time::advance(Duration::from_millis(ms)).await;
                    queue.refill();
                    model.refill();
                }
                Op::SetWeight(t, w) => {
                    queue.set_weight(t, w);
                    model.set_weight(t, w);
                }
                Op::SetFairness(fairness) => {
                    queue.set_fairness(fairness);
                    model.set_fairness(fairness);
                }
                Op::SetMinShares(shares) => {
                    let shares =
                        MinShares::new(shares).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    queue.set_min_shares(shares);
                    model.set_min_shares(shares.by_rank());
                }
                Op::Cancel(_) | Op::Release(_) => {}
            }
            prop_assert_eq!(queue.next_token(), model.next_token());
            let (t, p, c) = ((step % 6) as u8, (step % 4) as u8, (step % CLASSES) as u32);
            prop_assert_eq!(queue.rate_turn(&t, &p, c), model.rate_turn(t, p, c));
            let classes = queue.usage().classes;
            for (c, counts) in (0..CLASSES as u32).zip(classes) {
                prop_assert_eq!(counts, (model.class_pending(c), model.class_running(c)));
            }
            prop_assert_eq!(queue.pending(), model.pending());
            prop_assert_eq!(queue.running(), model.running());
            for t in 0..6 {
                prop_assert_eq!(queue.tenant_counts(&t), model.tenant_counts(t));
            }
            for p in 0..4 {
                prop_assert_eq!(queue.provider_counts(&p), model.provider_counts(p));
                let mut demand: Vec<_> = queue
                    .demand(&p)
                    .into_iter()
                    .map(|d| (d.tenant, d.pending, d.running))
                    .collect();
                demand.sort_unstable();
                prop_assert_eq!(demand, model.demand(p));
            }
            assert_invariants(&queue);
        }
    }
    Ok(())
}

/// Pushes `(tenant, provider, class, item)` to the queue and the model and
/// compares their answers; keeps the queue's key of an accepted push.
fn push_both(
    queue: &mut FairQueue<u32, u8, u8>,
    model: &mut Model,
    (t, p, c, item): (u8, u8, u32, u32),
    keys: &mut Vec<(WaiterKey, u32)>,
    key_of: &mut HashMap<u32, WaiterKey>,
) -> Result<(), TestCaseError> {
    match (queue.push_in(t, p, c, item), model.push(t, p, c, item)) {
        (Ok(key), Ok(())) => {
            keys.push((key, item));
            key_of.insert(item, key);
        }
        (Err((refused, back)), Err(expected)) => {
            prop_assert_eq!(refused, expected);
            prop_assert_eq!(back, item);
        }
        (got, expected) => prop_assert!(false, "push: {:?} vs {:?}", got, expected),
    }
    Ok(())
}

/// Makes the next grant of the queue and of the model and compares them;
/// keeps the queue's running key of a grant. Returns the grant.
fn grant_both(
    queue: &mut FairQueue<u32, u8, u8>,
    model: &mut Model,
    key_of: &HashMap<u32, WaiterKey>,
    running: &mut Vec<(u8, u8, RunningKey)>,
) -> Result<Option<(u8, u8, u32)>, TestCaseError> {
    let mut got = None;
    if let Some(g) = queue.next_grant() {
        prop_assert_eq!(Some(&g.key), key_of.get(&g.item));
        let (t, p) = queue.keys(g.running).map(|(t, p)| (*t, *p)).unzip();
        let (t, p) = (t.expect("live tenant"), p.expect("live provider"));
        running.push((t, p, g.running));
        got = Some((t, p, g.item));
    }
    prop_assert_eq!(got, model.next_grant());
    Ok(got)
}

/// 64 tenants over up to 8 providers, tenant 0 with 100× the waiters,
/// running_total 32; each step releases the oldest running request.
#[test]
fn every_backlogged_tenant_gets_its_fair_share() {
    // Provider ceilings that bind would (rightly) slow the tenants of a
    // saturated provider, so they are kept out of this tenant-level check.
    for running_per_tenant in [32, 1] {
        fair_share_with(running_per_tenant);
    }
}

fn fair_share_with(running_per_tenant: u32) {
    const TENANTS: u32 = 64;
    let mut q: FairQueue<u32, u32, u32> = FairQueue::new(Ceilings {
        pending_total: 10_000,
        pending_per_tenant: 10_000,
        pending_per_provider: 10_000,
        running_total: 32,
        running_per_tenant,
        running_per_provider: 32,
    });
    for t in 0..TENANTS {
        let waiters = if t == 0 { 3000 } else { 30 };
        for i in 0..waiters {
            assert!(q.push(t, i % (t % 8 + 1), i).is_ok());
        }
    }
    let mut running = std::collections::VecDeque::new();
    let (mut count, mut last) = (vec![0u32; TENANTS as usize], vec![0u32; TENANTS as usize]);
    let mut seq = 0;
    while (0..TENANTS).all(|t| q.tenant_counts(&t).0 > 0) {
        if let Some(g) = q.next_grant() {
            seq += 1;
            let (tenant, provider) = q.keys(g.running).map(|(t, p)| (*t, *p)).unzip();
            let (tenant, provider) = (tenant.expect("live tenant"), provider.expect("live"));
            let t = tenant as usize;
            assert!(
                t == 0 || seq - last[t] <= TENANTS,
                "tenant {t} waited {}",
                seq - last[t]
            );
            (count[t], last[t]) = (count[t] + 1, seq);
            running.push_back((tenant, provider));
        } else if let Some((t, p)) = running.pop_front() {
            q.release(&t, &p);
        }
    }
    let share = f64::from(seq) / f64::from(TENANTS);
    assert!(share >= 29.0, "the phase lasted {seq} grants");
    for (t, &n) in count.iter().enumerate() {
        assert!(
            (f64::from(n) - share).abs() <= share / 10.0,
            "tenant {t}: {n} vs {share}"
        );
    }
}

/// Three backlogged tenants of weights 1, 2 and 4 on one provider,
/// running_total 8, each step releasing the oldest running request: their
/// grants are 1:2:4 (each within 5 %).
#[test]
fn weights_give_backlogged_tenants_shares_in_proportion() {
    let mut q: FairQueue<u32, u32, u32> = FairQueue::new(Ceilings {
        pending_total: 10_000,
        pending_per_tenant: 10_000,
        pending_per_provider: 10_000,
        running_total: 8,
        running_per_tenant: 8,
        running_per_provider: 8,
    });
    let weights = [1u32, 2, 4];
    for (t, &w) in (0u32..).zip(&weights) {
        q.set_weight(t, w);
        for i in 0..3000 {
            assert!(q.push(t, 0, i).is_ok());
        }
    }
    let mut running = std::collections::VecDeque::new();
    let mut count = [0u32; 3];
    while (0..3).all(|t| q.tenant_counts(&t).0 > 0) {
        if let Some(g) = q.next_grant() {
            let (tenant, _) = q.keys(g.running).map(|(t, p)| (*t, *p)).unzip();
            let tenant = tenant.expect("live tenant");
            count[tenant as usize] += 1;
            running.push_back(tenant);
        } else if let Some(t) = running.pop_front() {
            q.release(&t, &0);
        }
    }
    let total: u32 = count.iter().sum();
    for (t, (&n, &w)) in count.iter().zip(&weights).enumerate() {
        let fair = f64::from(total) * f64::from(w) / 7.0;
        assert!(
            (f64::from(n) - fair).abs() <= fair * 0.05,
            "tenant {t} of weight {w}: {n} grants of {total}, fair {fair}"
        );
    }
}

/// Each backlogged tenant's share of slot-time: three tenants on one
/// provider, with `weights`, whose requests hold a slot `holds` ticks
/// each, running_total the multiple of the weights' sum nearest 30 (so
/// fair shares are whole slots: with 28 slots, equal tenants' fair 9⅓
/// would be held as 10, 9, 9) and no per-tenant ceiling below it. Every tenant
/// is kept backlogged (a request queued for each granted); slot-time is
/// summed per tick over `ticks` after a warm-up of 1,000.
fn slot_time_shares(
    fairness: Fairness,
    weights: [u32; 3],
    holds: [u64; 3],
    ticks: u64,
) -> [f64; 3] {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let sum: u32 = weights.iter().sum();
    let slots = (30 + sum / 2) / sum * sum;
    let mut q: FairQueue<u32, u32, u32> = FairQueue::new(Ceilings {
        pending_total: 1_000,
        pending_per_tenant: 1_000,
        pending_per_provider: 1_000,
        running_total: slots,
        running_per_tenant: slots,
        running_per_provider: slots,
    });
    q.set_fairness(fairness);
    for (t, &w) in (0u32..).zip(&weights) {
        q.set_weight(t, w);
        for i in 0..100 {
            assert!(q.push(t, 0, i).is_ok());
        }
    }
    // (end tick, tenant) of each running request.
    let mut ends: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    let mut held = [0u64; 3];
    for now in 0..1_000 + ticks {
        while let Some(&Reverse((end, t))) = ends.peek().filter(|e| e.0 .0 <= now) {
            ends.pop();
            q.release(&t, &0);
            debug_assert!(end <= now);
        }
        while let Some(g) = q.next_grant() {
            let (tenant, _) = q.keys(g.running).map(|(t, p)| (*t, *p)).unzip();
            let t = tenant.expect("live tenant");
            ends.push(Reverse((now + holds[t as usize], t)));
            assert!(q.push(t, 0, g.item).is_ok(), "tenant {t} stays backlogged");
        }
        if now >= 1_000 {
            for t in 0..3u32 {
                held[t as usize] += u64::from(q.tenant_counts(&t).1);
            }
        }
    }
    let total: u64 = held.iter().sum();
    held.map(|h| h as f64 / total as f64)
}

/// Whether each share is within 5 % of its weighted fair share.
fn within_five_percent(shares: [f64; 3], weights: [u32; 3]) -> bool {
    let sum: u32 = weights.iter().sum();
    (shares.iter().zip(&weights)).all(|(&share, &w)| {
        let fair = f64::from(w) / f64::from(sum);
        (share - fair).abs() <= fair * 0.05
    })
}

/// One tenant's requests hold their slot 100× longer than the others':
/// under the least-held policy every tenant's share of slot-time is within
/// 5 % of its weighted fair share, equal and 1:2:4 weights alike; the
/// rotation hands the slow tenant most of the slots.
#[test]
fn least_held_shares_slot_time_by_weight_whatever_the_hold_times() {
    let holds = [100, 1, 1];
    for weights in [[1, 1, 1], [1, 2, 4], [4, 2, 1]] {
        let held = slot_time_shares(Fairness::LeastHeld, weights, holds, 20_000);
        assert!(
            within_five_percent(held, weights),
            "least held, weights {weights:?}: shares {held:?}"
        );
    }
    let rotation = slot_time_shares(Fairness::Rotation, [1, 1, 1], holds, 20_000);
    assert!(
        rotation[0] > 0.9,
        "the rotation's slow tenant held only {:.3} of slot-time",
        rotation[0]
    );
}

/// With equal hold times, the rotation's weighted turns give slot-time
/// shares within 5 % of 1:2:4.
#[test]
fn weighted_turns_share_slot_time_by_weight_when_holds_are_equal() {
    let weights = [1, 2, 4];
    let shares = slot_time_shares(Fairness::Rotation, weights, [10, 10, 10], 20_000);
    assert!(
        within_five_percent(shares, weights),
        "rotation, weights {weights:?}: shares {shares:?}"
    );
}
