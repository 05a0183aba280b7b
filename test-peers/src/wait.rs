//! [`eventually`]: the one bounded poll the workspace's tests share, for a
//! condition the engine cannot report itself (a real peer, a task the test
//! spawned, a socket closing).
//!
//! Where the engine can say it is idle, a test awaits
//! `ProviderPools::wait_quiescent` (the engine's `testing` feature) instead.
//!
//! Invariants:
//! - The wait is bounded: the test fails, naming what it awaited, once
//!   [`WAIT`] has passed both on tokio's clock and in real time. Tokio's
//!   clock lets a paused-time test reach timers within the bound; real time
//!   keeps a paused clock, which jumps ahead whenever the runtime idles on
//!   I/O, from failing a wait for a real peer early.
//! - It never advances time by more than [`POLL`] between two checks.

use std::time::Duration;

/// How long [`eventually`] waits, on both clocks, before it fails the test.
pub const WAIT: Duration = Duration::from_secs(10);

/// The pause between two checks of the condition.
pub const POLL: Duration = Duration::from_millis(2);

/// Checks `condition` every [`POLL`] until it holds.
///
/// # Cancel safety
///
/// Cancel safe: it only checks and sleeps.
///
/// # Panics
///
/// Fails the test with `what` when `condition` still does not hold after
/// [`WAIT`] on tokio's clock and in real time.
pub async fn eventually(what: &str, condition: impl FnMut() -> bool) {
    wait_for(WAIT, what, condition).await;
}

/// [`eventually`] with its bound as a parameter, for this module's tests.
async fn wait_for(wait: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let clock = tokio::time::Instant::now();
    let real = std::time::Instant::now();
    let mut checks: u64 = 0;
    loop {
        checks += 1;
        if condition() {
            return;
        }
        if clock.elapsed() >= wait && real.elapsed() >= wait {
            panic!("timed out after {wait:?} ({checks} checks) waiting for: {what}");
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_condition_met_later_ends_the_wait() {
        let start = tokio::time::Instant::now();
        let due = start + Duration::from_secs(3);
        eventually("three seconds", || tokio::time::Instant::now() >= due).await;
        assert!(
            start.elapsed() < Duration::from_secs(3) + POLL,
            "soon after it held"
        );
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "waiting for: a flag nobody sets")]
    async fn a_condition_never_met_fails_naming_it() {
        wait_for(Duration::from_millis(50), "a flag nobody sets", || false).await;
    }
}
