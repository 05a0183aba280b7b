//! How a scenario's time passes. Scripts and steps draw their durations in
//! scenario milliseconds; on the paused clock a scenario millisecond is a
//! virtual millisecond and a clock advance moves the clock, on real threads
//! every duration is divided by [`SCALE`] and an advance is a real sleep.
//! Every duration the scenario sets — its own waits, and the limits'
//! queue and idle ages, the dial backoff and the restart window — is scaled
//! alike, so what expires before what stays as the seed drew it.

use std::time::Duration;

/// Real threads run a scenario this many times faster than its virtual time.
pub(crate) const SCALE: u32 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// A paused clock: scenario time is virtual time.
    Paused,
    /// The real clock, [`SCALE`] times faster than scenario time.
    Real,
}

impl Pace {
    /// A scenario duration as the runtime's clock measures it.
    pub(crate) fn of(self, scenario: Duration) -> Duration {
        match self {
            Self::Paused => scenario,
            Self::Real => scenario / SCALE,
        }
    }

    /// `ms` scenario milliseconds.
    pub(crate) fn ms(self, ms: u64) -> Duration {
        self.of(Duration::from_millis(ms))
    }

    /// Sleeps `ms` scenario milliseconds.
    pub(crate) fn sleep(self, ms: u64) -> tokio::time::Sleep {
        tokio::time::sleep(self.ms(ms))
    }

    /// Lets `ms` scenario milliseconds pass: the paused clock is advanced
    /// (every timer due meanwhile fires), the real one is slept through.
    pub(crate) async fn pass(self, ms: u64) {
        match self {
            Self::Paused => tokio::time::advance(self.ms(ms)).await,
            Self::Real => self.sleep(ms).await,
        }
    }
}
