//! Unit tests of the admission core: the caller-driven fast paths, the
//! combining protocol and its hand-over, the waiter's entry, the deadline
//! alarm and close. Each runs without the actor unless it says otherwise;
//! a stand-in counts the wake-ups the actor would get.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tokio::time::Instant;

use super::core::{Core, BATCH, PASSES};
use super::fixtures::{admit, attached, granted, provider, tenant, waiting, StandIn};
use super::{AdmitReply, Ended, RunningGrant, Waiting};
use crate::accounts::Accounts;
use crate::limits::Limits;
use crate::priority::Priority;
use crate::scheduler::queue::{Bound, Ceilings};

/// A waker that counts its wakes.
#[derive(Default)]
struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Counting {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// `running_total` for the node and each tenant; a provider never blocks.
fn ceilings(running_total: u32) -> Ceilings {
    Ceilings {
        pending_total: 8,
        pending_per_tenant: 4,
        pending_per_provider: 8,
        running_total,
        running_per_tenant: running_total,
        running_per_provider: u32::MAX,
    }
}

fn core(running_total: u32) -> (Arc<Core>, Arc<StandIn>) {
    attached(Core::new(
        ceilings(running_total),
        Accounts::new(&Limits::DEFAULT),
        4,
    ))
}

/// Polls `waiting` once with `waker`.
fn poll(waiting: &mut Waiting, waker: &Arc<Counting>) -> Poll<Result<RunningGrant, Ended>> {
    let waker = Waker::from(Arc::clone(waker));
    Pin::new(waiting).poll(&mut Context::from_waker(&waker))
}

#[test]
fn a_lone_admit_is_granted_on_the_callers_task_without_waking_the_actor() {
    let (core, actor) = core(1);
    let grant = granted(admit(&core, "a"));
    assert_eq!(core.counts(), (0, 1));
    drop(grant);
    assert_eq!(core.counts(), (0, 0));
    assert_eq!(actor.wakes(), 0, "no hop to the actor");
    assert!(core.is_unowned());
}

#[test]
fn a_release_grants_the_next_waiter_by_the_rotation_and_wakes_only_it() {
    let (core, _actor) = core(1);
    let running = granted(admit(&core, "a"));
    let mut a2 = waiting(admit(&core, "a"));
    let mut b1 = waiting(admit(&core, "b"));
    let (wa, wb) = (Arc::new(Counting::default()), Arc::new(Counting::default()));
    assert!(poll(&mut a2, &wa).is_pending());
    assert!(poll(&mut b1, &wb).is_pending());
    // a just ran, so b's turn comes first.
    drop(running);
    assert_eq!((wa.count(), wb.count()), (0, 1), "only b was woken");
    let Poll::Ready(Ok(b_grant)) = poll(&mut b1, &wb) else {
        panic!("b holds the grant");
    };
    assert_eq!(core.counts(), (1, 1));
    drop(b_grant);
    assert_eq!(wa.count(), 1);
    assert!(matches!(poll(&mut a2, &wa), Poll::Ready(Ok(_))));
    assert_eq!(core.counts(), (0, 0));
}

#[test]
fn a_refused_admit_names_the_full_bound_at_once() {
    let (core, _actor) = core(1);
    let _running = granted(admit(&core, "a"));
    let queued: Vec<_> = (0..4).map(|_| waiting(admit(&core, "a"))).collect();
    let AdmitReply::Ended(Ended::Refused(refused)) = admit(&core, "a") else {
        panic!("the tenant's pending bound is full");
    };
    assert_eq!(
        (refused.bound, refused.used, refused.limit),
        (Bound::PendingPerTenant, 4, 4)
    );
    drop(queued);
    assert_eq!(core.counts(), (0, 1), "the cancelled waiters left the line");
}

#[test]
fn an_operation_left_while_the_queue_is_owned_is_applied_before_the_owner_lets_go() {
    let (core, actor) = core(1);
    let running = granted(admit(&core, "a"));
    let mut b = waiting(admit(&core, "b"));
    let wb = Arc::new(Counting::default());
    assert!(poll(&mut b, &wb).is_pending());
    // b's deadline asked for the alarm: one wake so far.
    let wakes = actor.wakes();
    core.own_for_test();
    drop(running);
    assert_eq!(core.deferred(), 1, "the release waits for the owner");
    assert_eq!(wb.count(), 0);
    core.give_up_for_test();
    assert_eq!(wb.count(), 1, "the owner applied the release and granted b");
    assert!(core.is_unowned());
    assert_eq!(actor.wakes(), wakes, "no hand-over");
    assert!(matches!(poll(&mut b, &wb), Poll::Ready(Ok(_))));
}

#[test]
fn an_admit_left_for_the_owner_is_answered_through_its_entry() {
    let (core, _actor) = core(1);
    core.own_for_test();
    let mut a = waiting(admit(&core, "a"));
    let wa = Arc::new(Counting::default());
    assert!(poll(&mut a, &wa).is_pending());
    core.give_up_for_test();
    assert_eq!(wa.count(), 1);
    assert!(matches!(poll(&mut a, &wa), Poll::Ready(Ok(_))));
}

#[test]
fn past_its_passes_an_owner_hands_the_rest_to_the_actor_once() {
    let (core, actor) = core(u32::MAX);
    core.own_for_test();
    let total = BATCH * PASSES + 3;
    for _ in 0..total {
        core.defer_noop_for_test();
    }
    assert_eq!(core.deferred(), total);
    core.give_up_bounded_for_test();
    assert_eq!(core.deferred(), 3, "two passes of a batch each");
    assert!(core.is_owned(), "ownership stays with the hand-over");
    assert_eq!(actor.wakes(), 1);
    actor.serve(&core);
    assert!(core.is_unowned(), "the actor applied the rest");
}

#[test]
fn with_the_actor_gone_an_owner_applies_everything_itself() {
    let (core, actor) = core(u32::MAX);
    actor.stopped.store(true, crate::sync::Ordering::SeqCst);
    core.own_for_test();
    let total = BATCH * PASSES + 3;
    for _ in 0..total {
        core.defer_noop_for_test();
    }
    core.give_up_bounded_for_test();
    assert!(core.is_unowned(), "nothing was left behind");
}

#[test]
fn a_burst_left_for_a_busy_owner_is_refused_busy_past_the_bound() {
    let (core, _actor) = core(1);
    core.own_for_test();
    let queued: Vec<_> = (0..4)
        .map(|n| waiting(admit(&core, &format!("t{n}"))))
        .collect();
    assert!(matches!(admit(&core, "t9"), AdmitReply::Ended(Ended::Busy)));
    drop(queued);
    core.give_up_for_test();
    assert_eq!(core.counts(), (0, 0), "the left waiters were never queued");
}

#[test]
fn a_busy_owner_refuses_no_admit_of_a_burst_that_fits_the_pending_bound() {
    // The most a registry's callers can leave for a busy owner: every
    // running request's release, every pending request's admit, and each
    // of those waiters' cancel. None of it is refused busy.
    let limits = Limits {
        pending_requests: 1_024,
        requests_per_tenant: 1_024,
        requests_per_provider: 1_024,
        running_requests: 64,
        running_per_tenant: 64,
        running_per_provider: 64,
        ..Limits::DEFAULT
    };
    let (core, _actor) = attached(Core::new(
        super::ceilings(&limits),
        Accounts::new(&limits),
        super::deferred_bound(&limits),
    ));
    let grants: Vec<_> = (0..64)
        .map(|n| granted(admit(&core, &format!("r{n}"))))
        .collect();
    core.own_for_test();
    drop(grants);
    let waiters: Vec<_> = (0..1_024)
        .map(|n| match admit(&core, &format!("w{n}")) {
            AdmitReply::Waiting(waiting) => waiting,
            other => panic!("admit {n} of 1,024 left for the owner: {other:?}"),
        })
        .collect();
    drop(waiters);
    core.give_up_for_test();
    assert_eq!(core.counts(), (0, 0), "everything left was applied");
}

#[test]
fn a_waiter_that_leaves_after_its_grant_was_written_returns_the_capacity() {
    let (core, _actor) = core(1);
    let running = granted(admit(&core, "a"));
    let b = waiting(admit(&core, "b"));
    drop(running);
    assert_eq!(core.counts(), (0, 1), "b was granted");
    drop(b);
    assert_eq!(core.counts(), (0, 0), "and gave the grant back unread");
}

#[test]
fn the_alarm_times_out_only_the_waiters_due_and_is_asked_only_for_an_earlier_deadline() {
    let (core, actor) = core(1);
    let _running = granted(admit(&core, "a"));
    let now = Instant::now();
    let soon = now + Duration::from_secs(1);
    let late = now + Duration::from_secs(2);
    let mut first = waiting(core.admit(&tenant("b"), provider(), Priority::default(), late));
    assert_eq!(actor.wakes(), 1, "a first deadline");
    actor.serve(&core);
    let mut second = waiting(core.admit(&tenant("c"), provider(), Priority::default(), late));
    assert_eq!(actor.wakes(), 1, "not earlier: no wake");
    let mut third = waiting(core.admit(&tenant("d"), provider(), Priority::default(), soon));
    assert_eq!(actor.wakes(), 2, "earlier: a wake");
    assert_eq!(core.expire(soon), Some(late), "the alarm moves to the next");
    let w = Arc::new(Counting::default());
    assert!(matches!(
        poll(&mut third, &w),
        Poll::Ready(Err(Ended::TimedOut))
    ));
    assert!(poll(&mut first, &w).is_pending());
    assert_eq!(core.counts(), (2, 1));
    assert_eq!(core.expire(late), None);
    assert!(matches!(
        poll(&mut second, &w),
        Poll::Ready(Err(Ended::TimedOut))
    ));
    assert_eq!(core.counts(), (0, 1));
}

#[test]
fn stale_deadline_entries_stay_bounded_by_the_waiters() {
    let (core, _actor) = core(0);
    for _ in 0..1_000 {
        let w = waiting(admit(&core, "a"));
        drop(w);
    }
    let entries = core.with_state(|state| state.deadline_entries());
    assert!(entries <= 66, "{entries} entries for no waiter");
}

#[test]
fn close_answers_every_waiter_refuses_later_admits_and_still_takes_releases() {
    let (core, _actor) = core(1);
    let running = granted(admit(&core, "a"));
    let mut b = waiting(admit(&core, "b"));
    core.close();
    let w = Arc::new(Counting::default());
    assert!(matches!(poll(&mut b, &w), Poll::Ready(Err(Ended::Closed))));
    assert!(matches!(
        admit(&core, "c"),
        AdmitReply::Ended(Ended::Closed)
    ));
    drop(running);
    assert_eq!(core.counts(), (0, 0));
}

#[test]
fn a_stopping_actor_closes_admission_and_applies_what_was_handed_to_it() {
    let (core, actor) = core(u32::MAX);
    core.own_for_test();
    let total = BATCH * PASSES + 3;
    for _ in 0..total {
        core.defer_noop_for_test();
    }
    core.give_up_bounded_for_test();
    assert_eq!(actor.wakes(), 1);
    core.stop();
    assert!(
        core.is_unowned(),
        "the hand-over was applied on the way out"
    );
    assert!(matches!(
        admit(&core, "a"),
        AdmitReply::Ended(Ended::Closed)
    ));
}

#[test]
fn weights_other_than_one_are_bounded_and_weight_one_frees_a_place() {
    let (core, _) = core(1);
    for i in 0..super::OWN_CEILINGS {
        assert!(core.set_weight(tenant(&format!("t{i}")), 2));
    }
    let late = tenant("late");
    assert!(!core.set_weight(late.clone(), 2), "one past the table");
    assert_eq!(core.weight_of(&late), 1);
    assert!(core.set_weight(tenant("t0"), 1));
    assert!(core.set_weight(late.clone(), 3));
    assert_eq!(core.weight_of(&late), 3);
}

#[test]
fn the_policy_set_on_the_core_decides_which_tenant_a_release_grants() {
    use crate::fairness::Fairness;
    for (fairness, a_first) in [(Fairness::Rotation, false), (Fairness::LeastHeld, true)] {
        let (core, _actor) = core(4);
        core.set_fairness(fairness);
        let mut b_running: Vec<_> = (0..3).map(|_| granted(admit(&core, "b"))).collect();
        let _a1 = granted(admit(&core, "a"));
        // "b" queues first, so it is ahead in the rotation; once one of
        // its slots is released it still holds two to "a"'s one.
        let mut b4 = waiting(admit(&core, "b"));
        let mut a2 = waiting(admit(&core, "a"));
        let (wa, wb) = (Arc::new(Counting::default()), Arc::new(Counting::default()));
        assert!(poll(&mut a2, &wa).is_pending());
        assert!(poll(&mut b4, &wb).is_pending());
        drop(b_running.pop());
        let expected = if a_first { (1, 0) } else { (0, 1) };
        assert_eq!((wa.count(), wb.count()), expected, "{fairness:?}");
    }
}
