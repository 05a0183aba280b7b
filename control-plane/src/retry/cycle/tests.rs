use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;
use crate::retry::policy::{RetryConfig, MAX_CYCLE};

fn policy(attempts: u32, timeout_ms: u64, initial_ms: u64, max_ms: u64) -> RetryPolicy {
    RetryPolicy::new(RetryConfig {
        max_attempts: attempts,
        attempt_timeout_ms: timeout_ms,
        initial_backoff_ms: initial_ms,
        max_backoff_ms: max_ms,
    })
}

#[test]
fn only_the_listed_statuses_and_failures_are_retried() {
    for status in 100..600u16 {
        let listed = [408, 429, 500, 502, 503, 504].contains(&status);
        assert_eq!(Failure::Status(status).is_retryable(), listed, "{status}");
    }
    assert!(Failure::Transport.is_retryable());
    assert!(Failure::Timeout.is_retryable());
    assert!(Failure::Offline.is_retryable());
    assert!(!Failure::Semantic.is_retryable());
}

#[test]
fn configuration_is_bounded_at_execution() {
    let p = policy(0, 0, 0, 0);
    assert_eq!(
        (p.attempts(), p.attempt_timeout(), p.max_backoff()),
        (1, Duration::from_millis(1), Duration::ZERO)
    );
    let p = policy(99, 99_999, 99_999, 99_999);
    assert_eq!(
        (
            p.attempts(),
            p.attempt_timeout(),
            p.max_backoff(),
            p.initial_backoff()
        ),
        (
            16,
            Duration::from_secs(30),
            Duration::from_secs(30),
            Duration::from_secs(30)
        )
    );
}

#[test]
fn the_budget_is_attempts_times_timeout_plus_waits_capped_at_120_s() {
    assert_eq!(
        policy(3, 1_000, 10, 500).budget(),
        Duration::from_millis(4_000)
    );
    assert_eq!(
        policy(1, 2_000, 10, 500).budget(),
        Duration::from_millis(2_000)
    );
    assert_eq!(policy(16, 30_000, 1, 30_000).budget(), MAX_CYCLE);
}

#[test]
fn the_ceiling_doubles_from_the_initial_backoff_and_the_first_is_capped_too() {
    let p = policy(16, 1_000, 100, 1_000);
    let ceilings: Vec<u64> = (1..=6).map(|r| p.ceiling(r).as_millis() as u64).collect();
    assert_eq!(ceilings, [100, 200, 400, 800, 1_000, 1_000]);
    let p = policy(16, 1_000, 5_000, 300);
    assert_eq!(
        p.ceiling(1),
        Duration::from_millis(300),
        "first delay capped"
    );
    assert_eq!(
        policy(16, 1_000, 100, 1_000).ceiling(u32::MAX),
        Duration::from_secs(1)
    );
}

#[test]
fn a_zero_backoff_retries_without_waiting() {
    let start = Instant::now();
    let mut cycle = RetryCycle::start(policy(3, 1_000, 0, 0), start);
    cycle.begin_attempt(start).expect("first attempt");
    assert_eq!(
        cycle.after_failure(Failure::Timeout, start),
        Step::Retry {
            after: Duration::ZERO
        }
    );
}

#[test]
fn attempts_are_spent_then_the_cycle_gives_up() {
    let start = Instant::now();
    let mut cycle = RetryCycle::start(policy(2, 1_000, 1, 1), start);
    assert!(cycle.begin_attempt(start).is_some());
    assert!(matches!(
        cycle.after_failure(Failure::Status(503), start),
        Step::Retry { .. }
    ));
    assert!(cycle.begin_attempt(start).is_some());
    assert_eq!(
        cycle.after_failure(Failure::Status(503), start),
        Step::GiveUp
    );
    assert_eq!(cycle.begin_attempt(start), None);
}

#[test]
fn expired_work_never_reaches_the_transport() {
    let start = Instant::now();
    let p = policy(3, 1_000, 10, 100);
    let mut cycle = RetryCycle::start(p, start);
    // The call waited in a queue past its whole budget.
    assert_eq!(cycle.begin_attempt(start + p.budget()), None);
}

#[test]
fn an_attempt_is_clamped_to_the_cycle_deadline() {
    let start = Instant::now();
    let p = policy(2, 1_000, 10, 100);
    let mut cycle = RetryCycle::start(p, start);
    let late = start + p.budget() - Duration::from_millis(5);
    assert_eq!(cycle.begin_attempt(late), Some(cycle.deadline()));
}

#[test]
fn an_overdue_answer_is_a_timeout() {
    let start = Instant::now();
    let mut cycle = RetryCycle::start(policy(3, 1_000, 10, 100), start);
    let deadline = cycle.begin_attempt(start).expect("attempt");
    assert!(!cycle.is_overdue(deadline, deadline));
    assert!(cycle.is_overdue(deadline, deadline + Duration::from_nanos(1)));
}

#[test]
fn a_wait_that_would_use_up_the_cycle_gives_up() {
    let start = Instant::now();
    let p = policy(3, 10, 30_000, 30_000);
    let mut cycle = RetryCycle::start(p, start);
    cycle.begin_attempt(start).expect("attempt");
    // The budget holds two 30 s waits, but with one second left a wait of
    // at least 15 s (half the first ceiling) leaves no time to attempt.
    let late = cycle.deadline() - Duration::from_secs(1);
    assert_eq!(cycle.after_failure(Failure::Transport, late), Step::GiveUp);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every wait is equal jitter under its ceiling and inside the cycle,
    /// and no attempt is begun past the attempts or the deadline.
    #[test]
    fn waits_and_attempts_stay_within_the_policy(
        attempts in 0u32..20,
        timeout in 0u64..40_000,
        initial in 0u64..40_000,
        max in 0u64..40_000,
        elapsed in proptest::collection::vec(0u64..20_000, 1..20),
    ) {
        let p = policy(attempts, timeout, initial, max);
        let start = Instant::now();
        let mut cycle = RetryCycle::start(p, start);
        let mut now = start;
        let mut begun = 0;
        for (retry, spent) in elapsed.iter().enumerate() {
            let Some(deadline) = cycle.begin_attempt(now) else { break };
            begun += 1;
            prop_assert!(deadline <= cycle.deadline());
            prop_assert!(deadline <= now + p.attempt_timeout());
            now = (now + Duration::from_millis(*spent)).min(deadline);
            match cycle.after_failure(Failure::Status(503), now) {
                Step::Retry { after } => {
                    let ceiling = p.ceiling(retry as u32 + 1);
                    prop_assert!(after <= ceiling);
                    prop_assert!(after.as_nanos() >= ceiling.as_nanos().div_ceil(2));
                    prop_assert!(now + after < cycle.deadline());
                    now += after;
                }
                Step::GiveUp => break,
            }
        }
        prop_assert!(begun <= p.attempts());
    }
}
