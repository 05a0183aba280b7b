//! Computes the delay before the next dial after consecutive dial failures.
//! Invariant: the delay is zero after no failure and never exceeds `DialBackoff::max`.
//! Invariant: the delay doubles per further failure and saturates instead of overflowing.

use std::time::Duration;

/// Exponential dial backoff parameters, fixed for a registry generation.
///
/// Built by [`Limits::dial_backoff`](super::Limits::dial_backoff).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DialBackoff {
    /// Delay after the first failure.
    pub initial: Duration,
    /// Cap on every delay.
    pub max: Duration,
}

impl DialBackoff {
    /// The delay before the next dial after `consecutive_failures` failures in a row.
    ///
    /// `min(initial * 2^(consecutive_failures - 1), max)`, computed exactly and
    /// saturating at `max`; zero when there has been no failure.
    pub fn delay_after(&self, consecutive_failures: u32) -> Duration {
        let Some(doublings) = consecutive_failures.checked_sub(1) else {
            return Duration::ZERO;
        };
        if self.initial.is_zero() || self.initial >= self.max {
            // Doubling cannot change a zero delay, and cannot bring one below the cap.
            return self.initial.min(self.max);
        }
        // Here 0 < initial < max, so any overflow is far above the cap.
        let cap = self.max.as_nanos();
        let delay = 1u128
            .checked_shl(doublings)
            .and_then(|factor| self.initial.as_nanos().checked_mul(factor))
            .unwrap_or(u128::MAX);
        if delay >= cap {
            self.max
        } else {
            from_nanos(delay).unwrap_or(self.max)
        }
    }
}

/// Converts a nanosecond count to a `Duration`, or `None` if it does not fit.
fn from_nanos(nanos: u128) -> Option<Duration> {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let secs = u64::try_from(nanos / NANOS_PER_SEC).ok()?;
    let subsec = u32::try_from(nanos % NANOS_PER_SEC).ok()?;
    Some(Duration::new(secs, subsec))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::DialBackoff;
    use crate::limits::Limits;

    #[test]
    fn doubles_from_initial_and_caps_at_max() {
        let backoff = Limits::DEFAULT.dial_backoff();
        let (initial, max) = (Duration::from_millis(100), Duration::from_secs(30));
        assert_eq!(backoff, DialBackoff { initial, max });
        assert_eq!(backoff.delay_after(0), Duration::ZERO);
        assert_eq!(backoff.delay_after(1), Duration::from_millis(100));
        assert_eq!(backoff.delay_after(2), Duration::from_millis(200));
        assert_eq!(backoff.delay_after(9), Duration::from_millis(25_600));
        assert_eq!(backoff.delay_after(10), max); // 51.2 s, capped
        assert_eq!(backoff.delay_after(200), max);
        assert_eq!(backoff.delay_after(u32::MAX), max);
    }

    #[test]
    fn is_exact_for_tiny_initials_and_never_above_max() {
        let max = Duration::from_secs(300);
        let tiny = DialBackoff {
            initial: Duration::from_nanos(1),
            max,
        };
        assert_eq!(tiny.delay_after(33), Duration::from_nanos(1 << 32));
        assert_eq!(tiny.delay_after(u32::MAX), max);
        let inverted = DialBackoff {
            initial: max * 2,
            max,
        };
        assert_eq!(inverted.delay_after(1), max);
        let zero = DialBackoff {
            initial: Duration::ZERO,
            max,
        };
        assert_eq!(zero.delay_after(u32::MAX), Duration::ZERO);
    }
}
