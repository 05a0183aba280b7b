//! The bounded HTTP retry policy.
//!
//! A configuration is bounded when a request executes ([`RetryPolicy::new`]):
//! at most 16 attempts, 1–30,000 ms per attempt, at most 30,000 ms per
//! backoff; zero attempts still means one, and a zero backoff stays zero.
//! One call's whole cycle — queue wait, serialization, every attempt and
//! wait, decoding — fits in a budget of
//! `attempts × timeout + (attempts − 1) × max backoff`, capped at 120 s and
//! counted from the provider call ([`RetryCycle::start`]).
//!
//! Invariants:
//! - No attempt starts and no wait ends past the cycle's deadline: each is
//!   clamped to the time that remains, on the monotonic clock.
//! - A wait is equal jitter: between half the current ceiling (rounded up)
//!   and the ceiling, where the ceiling doubles from the initial backoff and
//!   never exceeds the maximum backoff — the first one included.
//! - Only 408, 429, 500, 502, 503, 504 and transport, timeout or offline
//!   failures are retried ([`Failure::is_retryable`]).
//! - The jitter is seeded per cycle from the standard library's randomized
//!   hasher: scheduling state, not security randomness.

mod cycle;
mod jitter;
mod policy;

pub use cycle::{Failure, RetryCycle, Step};
pub use policy::{
    RetryConfig, RetryPolicy, MAX_ATTEMPTS, MAX_ATTEMPT_TIMEOUT, MAX_BACKOFF, MAX_CYCLE,
};
