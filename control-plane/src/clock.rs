//! [`Clock`]: where the in-memory and file stores read the time that
//! registrations and leases expire by.
//!
//! Invariants:
//! - A store only ever compares instants read from one clock.
//! - [`TokioClock`] follows tokio's clock, so a paused test clock drives
//!   expiry; [`SystemClock`] is wall time, the only one that survives a
//!   restart (the file store's default).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of milliseconds that never goes backwards for one store.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time in milliseconds since this clock's origin.
    fn now_ms(&self) -> u64;
}

/// Monotonic milliseconds since the clock was made, on tokio's clock (paused
/// in tests).
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        Self {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// Wall-clock milliseconds since the Unix epoch; a clock set before 1970
/// reads zero.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to: for tests and simulations.
///
/// ```
/// use provider_pools_control_plane::clock::{Clock, ManualClock};
///
/// let clock = ManualClock::starting_at(1_000);
/// clock.advance_ms(500);
/// assert_eq!(clock.now_ms(), 1_500);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading `now_ms`.
    pub fn starting_at(now_ms: u64) -> Self {
        Self {
            now: Arc::new(AtomicU64::new(now_ms)),
        }
    }

    /// Moves the clock forward, saturating at `u64::MAX`.
    pub fn advance_ms(&self, by_ms: u64) {
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(by_ms))
            });
    }

    /// Sets the clock to `now_ms` (tests of overflow set it near the end).
    pub fn set_ms(&self, now_ms: u64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}
