use super::*;

#[test]
fn an_absorbed_charge_is_returned_with_the_one_that_absorbed_it() {
    let budget = Budget::new("bytes", 10);
    let mut held = Charge::empty();
    held.absorb(budget.try_reserve(3).expect("room"));
    held.absorb(budget.try_reserve(4).expect("room"));
    assert_eq!((held.amount(), budget.used()), (7, 7));
    drop(held);
    assert_eq!(budget.used(), 0);
}

#[test]
fn reserve_refuses_past_limit_and_drop_returns() {
    let budget = Budget::new("clients", 3);
    let a = budget.try_reserve(2).expect("room for 2");
    let err = budget.try_reserve(2).expect_err("only 1 left");
    assert_eq!(
        err,
        Exhausted {
            resource: "clients",
            used: 2,
            limit: 3,
            requested: 2
        }
    );
    let b = budget.try_reserve(1).expect("room for 1");
    assert_eq!(budget.used(), 3);
    drop(a);
    assert_eq!(budget.used(), 1);
    drop(b);
    assert_eq!(budget.used(), 0);
}

#[test]
fn lowering_below_use_is_refused_and_keeps_the_old_limit() {
    let budget = Budget::new("bytes", 10);
    let held = budget.try_reserve(6).expect("room");
    assert_eq!(
        budget.set_limit(5),
        Err(InUse {
            resource: "bytes",
            used: 6,
            requested: 5
        })
    );
    assert_eq!(budget.limit(), 10);
    budget.set_limit(6).expect("6 in use, 6 allowed");
    assert!(budget.try_reserve(1).is_err());
    drop(held);
    assert_eq!(budget.used(), 0);
}

#[test]
fn split_moves_part_of_a_charge() {
    let budget = Budget::new("bytes", 10);
    let mut whole = budget.try_reserve(7).expect("room");
    assert!(whole.split(8).is_none());
    let part = whole.split(3).expect("3 of 7");
    assert_eq!((whole.amount(), part.amount()), (4, 3));
    drop(whole);
    assert_eq!(budget.used(), 3);
    drop(part);
    assert_eq!(budget.used(), 0);
}

#[test]
fn concurrent_reservations_never_exceed_the_limit() {
    let budget = Budget::new("connections", 100);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let budget = Arc::clone(&budget);
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for _ in 0..1_000 {
                    if let Ok(charge) = budget.try_reserve(1) {
                        assert!(budget.used() <= 100);
                        held.push(charge);
                    }
                    if held.len() > 20 {
                        held.clear();
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("worker thread");
    }
    assert_eq!(budget.used(), 0);
}

#[derive(Debug, Clone)]
enum Op {
    Reserve(u32),
    Drop(usize),
    SetLimit(u32),
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        (0u32..40).prop_map(Op::Reserve),
        any::<usize>().prop_map(Op::Drop),
        (0u32..120).prop_map(Op::SetLimit),
    ]
}

proptest::proptest! {
    /// Under any sequence of reservations, drops and limit changes, use
    /// equals the sum of live charges, never exceeds the limit, and
    /// returns to zero when every charge is dropped.
    #[test]
    fn use_matches_live_charges_under_any_sequence(ops in proptest::collection::vec(op(), 0..200)) {
        let budget = Budget::new("bytes", 100);
        let mut live: Vec<Charge> = Vec::new();
        for op in ops {
            match op {
                Op::Reserve(n) => {
                    let before = budget.used();
                    match budget.try_reserve(n) {
                        Ok(charge) => live.push(charge),
                        Err(e) => proptest::prop_assert!(before + n > e.limit),
                    }
                }
                Op::Drop(i) if !live.is_empty() => {
                    let i = i % live.len();
                    drop(live.swap_remove(i));
                }
                Op::Drop(_) => {}
                Op::SetLimit(limit) => {
                    let refused = budget.set_limit(limit).is_err();
                    proptest::prop_assert_eq!(refused, budget.used() > limit);
                }
            }
            let held: u32 = live.iter().map(Charge::amount).sum();
            proptest::prop_assert_eq!(budget.used(), held);
            proptest::prop_assert!(budget.used() <= budget.limit());
        }
        live.clear();
        proptest::prop_assert_eq!(budget.used(), 0);
    }
}

#[tokio::test(start_paused = true)]
#[allow(clippy::disallowed_methods, reason = "the test owns its task")]
async fn a_waiter_gets_the_first_release_and_another_times_out_at_its_deadline() {
    let budget = Budget::waitable("connections_per_tenant", 1);
    let held = budget.try_reserve(1).expect("room");
    let later = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
    let waiting = {
        let budget = Arc::clone(&budget);
        tokio::spawn(async move { budget.reserve_within(1, later).await.map(|c| c.amount()) })
    };
    tokio::task::yield_now().await;
    drop(held);
    assert_eq!(waiting.await.expect("waiter"), Ok(1));
    assert_eq!(budget.used(), 0, "the waiter's charge was dropped with it");
    let held = budget.try_reserve(1).expect("room again");
    let soon = tokio::time::Instant::now() + std::time::Duration::from_millis(10);
    let refused = Arc::clone(&budget)
        .reserve_within(1, soon)
        .await
        .map(|c| c.amount());
    assert_eq!(refused.err().map(|e| (e.used, e.limit)), Some((1, 1)));
    drop(held);
    // A plain budget never waits.
    let plain = Budget::new("plain", 0);
    let far = tokio::time::Instant::now() + std::time::Duration::from_secs(3_600);
    assert!(plain.reserve_within(1, far).await.is_err());
}
