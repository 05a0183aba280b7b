//! [`RetryConfig`] as configured, and [`RetryPolicy`], the same bounded.

use std::time::Duration;

/// Most attempts one call makes.
pub const MAX_ATTEMPTS: u32 = 16;
/// Longest single attempt.
pub const MAX_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(30_000);
/// Longest single wait between attempts.
pub const MAX_BACKOFF: Duration = Duration::from_millis(30_000);
/// Longest whole cycle of one call.
pub const MAX_CYCLE: Duration = Duration::from_secs(120);
/// Shortest single attempt.
const MIN_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(1);

/// A retry configuration as written by an operator; bounded only when a
/// request executes ([`RetryPolicy::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryConfig {
    /// Attempts per call; zero means one.
    pub max_attempts: u32,
    /// Time allowed to each attempt, in milliseconds (1–30,000).
    pub attempt_timeout_ms: u64,
    /// The first wait's ceiling, in milliseconds; doubles per retry.
    pub initial_backoff_ms: u64,
    /// The largest wait's ceiling, in milliseconds (at most 30,000).
    pub max_backoff_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            attempt_timeout_ms: 5_000,
            initial_backoff_ms: 100,
            max_backoff_ms: 2_000,
        }
    }
}

/// A bounded retry configuration.
///
/// ```
/// use std::time::Duration;
/// use provider_pools_control_plane::retry::{RetryConfig, RetryPolicy};
///
/// let policy = RetryPolicy::new(RetryConfig {
///     max_attempts: 0,
///     attempt_timeout_ms: 90_000,
///     initial_backoff_ms: 50_000,
///     max_backoff_ms: 50_000,
/// });
/// assert_eq!(policy.attempts(), 1);
/// assert_eq!(policy.attempt_timeout(), Duration::from_secs(30));
/// assert_eq!(policy.max_backoff(), Duration::from_secs(30));
/// assert_eq!(policy.budget(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    attempts: u32,
    attempt_timeout: Duration,
    initial_backoff: Duration,
    max_backoff: Duration,
}

impl RetryPolicy {
    /// Bounds `config`: attempts to 1–16 (zero means one), the attempt
    /// timeout to 1–30,000 ms, the maximum backoff to at most 30,000 ms,
    /// and the initial backoff to at most the maximum backoff.
    pub fn new(config: RetryConfig) -> Self {
        let max_backoff = Duration::from_millis(config.max_backoff_ms).min(MAX_BACKOFF);
        Self {
            attempts: config.max_attempts.clamp(1, MAX_ATTEMPTS),
            attempt_timeout: Duration::from_millis(config.attempt_timeout_ms)
                .clamp(MIN_ATTEMPT_TIMEOUT, MAX_ATTEMPT_TIMEOUT),
            initial_backoff: Duration::from_millis(config.initial_backoff_ms).min(max_backoff),
            max_backoff,
        }
    }

    /// A policy of exactly one attempt (lease mutations), keeping this
    /// policy's attempt timeout.
    pub fn single_attempt(self) -> Self {
        Self {
            attempts: 1,
            ..self
        }
    }

    /// Attempts per call, 1–16.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Time allowed to each attempt.
    pub fn attempt_timeout(&self) -> Duration {
        self.attempt_timeout
    }

    /// The first wait's ceiling.
    pub fn initial_backoff(&self) -> Duration {
        self.initial_backoff
    }

    /// The largest wait's ceiling.
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// The whole cycle's budget: `attempts × timeout + (attempts − 1) ×
    /// max backoff`, capped at 120 s.
    pub fn budget(&self) -> Duration {
        let attempts = self.attempt_timeout.saturating_mul(self.attempts);
        let waits = self.max_backoff.saturating_mul(self.attempts - 1);
        attempts.saturating_add(waits).min(MAX_CYCLE)
    }

    /// The ceiling of the wait before retry `retry` (1 for the first):
    /// the initial backoff doubled `retry − 1` times, at most the maximum
    /// backoff.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let doublings = retry.saturating_sub(1).min(32);
        self.initial_backoff
            .saturating_mul(1u32 << doublings.min(31))
            .min(self.max_backoff)
    }
}
