//! Instants kept in eight bytes, for what every waiter or request carries
//! (a plan's deadlines, the expiring share a grant was made under): a
//! `tokio::time::Instant` takes sixteen.
//!
//! Invariants:
//! - A moment keeps an instant to the nanosecond within 292 years of the
//!   process's origin, either way; one further away saturates to that far
//!   (record 0107).
//! - Moments order as the instants they keep.
//! - Under tokio's paused clock a moment keeps the paused instants as they
//!   are: they are `std` instants too.

use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::Instant;

/// An instant in eight bytes: signed nanoseconds from the process's
/// origin, the moment the first one was made. Its order is the instants'
/// order; nanoseconds beyond `i64`'s range (292 years either way) saturate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Moment(i64);

impl Moment {
    /// `instant`, saturating 292 years from the origin.
    pub(crate) fn of(instant: Instant) -> Self {
        let (origin, instant) = (origin(), instant.into_std());
        let nanos = |since: Duration| i64::try_from(since.as_nanos()).unwrap_or(i64::MAX);
        Self(match instant.checked_duration_since(origin) {
            Some(after) => nanos(after),
            None => -nanos(origin.duration_since(instant)),
        })
    }

    /// The instant this moment keeps.
    pub(crate) fn instant(self) -> Instant {
        let (origin, from_origin) = (origin(), Duration::from_nanos(self.0.unsigned_abs()));
        let at = if self.0 >= 0 {
            origin.checked_add(from_origin)
        } else {
            origin.checked_sub(from_origin)
        };
        // Some clocks cannot go back 292 years from a time they have read
        // (they count from boot): an instant that far past reads as the
        // origin, which is past as well. Every clock std supports goes 292
        // years forward.
        Instant::from_std(at.unwrap_or(origin))
    }
}

/// The process's origin for [`Moment`]s: the first time one was made.
fn origin() -> std::time::Instant {
    static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
    *ORIGIN.get_or_init(std::time::Instant::now)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::Moment;

    #[test]
    fn moments_order_as_their_instants() {
        let now = Instant::now();
        let (early, late) = (now - Duration::from_nanos(1), now + Duration::from_nanos(1));
        assert!(Moment::of(early) < Moment::of(now));
        assert!(Moment::of(now) < Moment::of(late));
        assert_eq!(Moment::of(now), Moment::of(now));
    }

    #[test]
    fn a_moment_keeps_its_instant_to_the_nanosecond() {
        let now = Instant::now();
        for at in [
            now,
            now + Duration::new(3_600, 1),
            now - Duration::new(7, 999_999_999),
        ] {
            assert_eq!(Moment::of(at).instant(), at);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_moment_keeps_an_instant_of_the_paused_clock() {
        let start = Instant::now();
        tokio::time::advance(Duration::from_secs(86_400)).await;
        let later = Instant::now();
        assert_eq!(later - start, Duration::from_secs(86_400));
        assert_eq!(Moment::of(later).instant(), later);
        assert!(Moment::of(start) < Moment::of(later));
    }
}
