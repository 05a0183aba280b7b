use std::time::Duration;

use tokio::time::Instant;

use super::{ExecutionPlan, LedgerId, SessionId};
use crate::identity::TenantId;

fn plan(store: Instant, io: Instant) -> ExecutionPlan {
    let tenant = TenantId::new("acme").expect("tenant");
    ExecutionPlan::seal(tenant, SessionId::new(1), LedgerId::new(1), store, io)
}

/// 292 years, about the span of `i64` nanoseconds.
const SPAN: Duration = Duration::from_secs(292 * 365 * 86_400);

#[test]
fn deadlines_read_back_to_the_nanosecond() {
    let now = Instant::now();
    for (store, io) in [
        (now, now),
        (now + Duration::from_nanos(1), now + Duration::from_secs(30)),
        (now + Duration::new(86_400 * 365, 999_999_999), now),
        (
            now - Duration::from_nanos(7),
            now - Duration::from_secs(3_600),
        ),
        (now + SPAN / 2, now - Duration::from_secs(86_400)),
    ] {
        let sealed = plan(store, io);
        assert_eq!(sealed.store_deadline(), store);
        assert_eq!(sealed.io_deadline(), io);
        assert_eq!(sealed.earliest_deadline(), store.min(io));
    }
}

#[test]
fn a_deadline_beyond_the_span_reads_as_the_span_away() {
    let now = Instant::now();
    let sealed = plan(now + SPAN * 3, now + Duration::from_secs(5));
    let far = sealed.store_deadline();
    // Clamped to i64 nanoseconds from the origin (at or before `now`):
    // still centuries later than any near deadline, never earlier.
    assert!(
        far > now + SPAN - Duration::from_secs(86_400 * 365),
        "{far:?}"
    );
    assert!(far < now + SPAN * 2, "{far:?}");
    assert_eq!(sealed.earliest_deadline(), now + Duration::from_secs(5));
}

#[test]
fn plans_equal_exactly_when_their_deadlines_do() {
    let now = Instant::now();
    assert_eq!(plan(now, now), plan(now, now));
    assert_ne!(plan(now, now), plan(now + Duration::from_nanos(1), now));
}

#[test]
fn a_plan_keeps_its_deadlines_in_eight_bytes_each() {
    // Tenant, session, ledger, two deadlines and the class: every waiter
    // and running request carries one.
    assert!(std::mem::size_of::<ExecutionPlan>() <= 48);
}
