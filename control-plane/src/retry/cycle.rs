//! [`RetryCycle`]: one provider call's attempts and waits, within its
//! budget, on the monotonic clock the caller reads.

use std::time::{Duration, Instant};

use crate::retry::jitter::Jitter;
use crate::retry::policy::RetryPolicy;

/// How an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The server answered with this HTTP status.
    Status(u16),
    /// The transport failed (connect, reset, broken stream).
    Transport,
    /// The attempt ran out of time.
    Timeout,
    /// The control plane is offline.
    Offline,
    /// A typed semantic failure (a conflict, a stale fencing token, …).
    Semantic,
}

impl Failure {
    /// True for 408, 429, 500, 502, 503, 504 and for transport, timeout and
    /// offline failures; everything else returns at once.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Status(status) => matches!(status, 408 | 429 | 500 | 502 | 503 | 504),
            Self::Transport | Self::Timeout | Self::Offline => true,
            Self::Semantic => false,
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Wait this long, then attempt again.
    Retry {
        /// The wait, already clamped to the time that remains.
        after: Duration,
    },
    /// Return the failure: it is not retryable, the attempts are spent, or
    /// no time would remain for another attempt.
    GiveUp,
}

/// One call's retry cycle. Time is read by the caller (`now`), so the
/// cycle itself never sleeps and tests need no clock.
///
/// ```
/// use std::time::{Duration, Instant};
/// use provider_pools_control_plane::retry::{Failure, RetryConfig, RetryCycle, RetryPolicy, Step};
///
/// let policy = RetryPolicy::new(RetryConfig::default());
/// let start = Instant::now();
/// let mut cycle = RetryCycle::start(policy, start);
/// let deadline = cycle.begin_attempt(start).expect("time remains");
/// assert!(deadline <= start + policy.attempt_timeout());
/// match cycle.after_failure(Failure::Status(503), start) {
///     Step::Retry { after } => assert!(after <= policy.max_backoff()),
///     Step::GiveUp => unreachable!("503 is retried"),
/// }
/// assert_eq!(cycle.after_failure(Failure::Status(404), start), Step::GiveUp);
/// ```
#[derive(Debug, Clone)]
pub struct RetryCycle {
    policy: RetryPolicy,
    deadline: Instant,
    attempts_begun: u32,
    retries: u32,
    jitter: Jitter,
}

impl RetryCycle {
    /// A cycle for a provider call that started at `started` — before its
    /// queue wait and serialization, which the budget includes.
    pub fn start(policy: RetryPolicy, started: Instant) -> Self {
        Self {
            policy,
            deadline: started + policy.budget(),
            attempts_begun: 0,
            retries: 0,
            jitter: Jitter::seeded(),
        }
    }

    /// When the whole cycle ends.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The time left at `now`.
    pub fn remaining(&self, now: Instant) -> Duration {
        self.deadline.saturating_duration_since(now)
    }

    /// Begins an attempt at `now`, returning its deadline: the attempt
    /// timeout, clamped to the cycle's deadline. `None` when the cycle has
    /// expired or its attempts are spent: expired work never reaches the
    /// transport.
    pub fn begin_attempt(&mut self, now: Instant) -> Option<Instant> {
        if self.attempts_begun >= self.policy.attempts() || self.remaining(now).is_zero() {
            return None;
        }
        self.attempts_begun += 1;
        Some((now + self.policy.attempt_timeout()).min(self.deadline))
    }

    /// True when an answer that arrived at `answered` came after its
    /// attempt's deadline: it is a timeout, whatever it reports, and no
    /// other attempt follows (the remote operation may have applied).
    pub fn is_overdue(&self, attempt_deadline: Instant, answered: Instant) -> bool {
        answered > attempt_deadline
    }

    /// What follows a failed attempt, at `now`: a jittered wait clamped to
    /// the time that remains, or giving up.
    pub fn after_failure(&mut self, failure: Failure, now: Instant) -> Step {
        if !failure.is_retryable() || self.attempts_begun >= self.policy.attempts() {
            return Step::GiveUp;
        }
        let remaining = self.remaining(now);
        self.retries += 1;
        let wait = self.jitter.equal(self.policy.ceiling(self.retries));
        if wait >= remaining {
            // The wait would use up the cycle: no attempt could follow.
            return Step::GiveUp;
        }
        Step::Retry { after: wait }
    }
}

#[cfg(test)]
mod tests;
