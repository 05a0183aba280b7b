//! [`Expiry`]: the deadline an HTTP/1.1 connection's driver closes it at,
//! shared by the connection and its driver.
//!
//! The connection sets the deadline in force: its request's while in use,
//! its idle spell's while parked. The driver keeps one timer and records,
//! under the same lock, the deadline it armed it at.
//!
//! Invariants:
//! - The driver's timer never fires after the deadline in force: a
//!   deadline earlier than the armed one wakes the driver, which arms it
//!   anew; a later one is only written, and the driver reads it when its
//!   timer fires, then arms again.
//! - Setting a deadline and arming the timer are serialised by the lock,
//!   so no deadline set while the driver arms is missed.
//! - A connection that is checked out and parked again before its armed
//!   idle deadline wakes no one: a park's deadline is later than the one
//!   its previous park armed, so the driver is woken at most once per
//!   armed deadline, not once per request.

use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio::time::Instant;

/// The deadline in force, the one the driver's timer is armed at, and the
/// wake-up for an earlier one.
#[derive(Debug, Default)]
pub(crate) struct Expiry {
    deadlines: Mutex<Deadlines>,
    earlier: Notify,
}

/// None stands for no deadline: later than any.
#[derive(Debug, Default)]
struct Deadlines {
    /// In force: the request's using the connection, or the idle spell's.
    current: Option<Instant>,
    /// The one the driver's timer is armed at.
    armed: Option<Instant>,
}

impl Expiry {
    /// Puts `deadline` in force, and wakes the driver when it comes before
    /// the one the driver's timer is armed at.
    pub(crate) fn set(&self, deadline: Option<Instant>) {
        let earlier = {
            let mut deadlines = self.lock();
            deadlines.current = deadline;
            match (deadline, deadlines.armed) {
                (Some(new), Some(armed)) => new < armed,
                (Some(_), None) => true,
                (None, _) => false,
            }
        };
        if earlier {
            self.earlier.notify_one();
        }
    }

    /// The driver's side: the deadline to arm its timer at (the one in
    /// force), recorded as armed.
    pub(crate) fn arm(&self) -> Option<Instant> {
        let mut deadlines = self.lock();
        deadlines.armed = deadlines.current;
        deadlines.armed
    }

    /// True when the deadline in force has passed at `now`.
    pub(crate) fn passed(&self, now: Instant) -> bool {
        self.lock().current.is_some_and(|deadline| deadline <= now)
    }

    /// Resolves when a deadline earlier than the armed one is set (or one
    /// was set since the last wake-up was taken).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a wake-up not taken is kept for the next call.
    pub(crate) async fn earlier(&self) {
        self.earlier.notified().await;
    }

    fn lock(&self) -> MutexGuard<'_, Deadlines> {
        // Nothing panics under the lock; a poisoned one still holds
        // deadlines as they were set.
        self.deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::Expiry;

    /// True when a wake-up for an earlier deadline is waiting.
    fn woken(expiry: &Expiry) -> bool {
        let notified = expiry.earlier.notified();
        let mut notified = std::pin::pin!(notified);
        notified.as_mut().enable()
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_deadline_wakes_the_driver() {
        let expiry = Expiry::default();
        expiry.set(Some(Instant::now() + Duration::from_secs(60)));
        assert!(woken(&expiry), "nothing was armed: the driver must arm");
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_after_the_armed_one_is_written_without_a_wake_up() {
        let expiry = Expiry::default();
        let idle = Instant::now() + Duration::from_secs(4);
        expiry.set(Some(idle));
        assert_eq!(expiry.arm(), Some(idle));
        let _ = woken(&expiry);
        // Checked out for a request with a later deadline, then parked
        // again before the armed idle deadline: both come after it.
        expiry.set(Some(Instant::now() + Duration::from_secs(60)));
        expiry.set(Some(idle + Duration::from_secs(1)));
        assert!(!woken(&expiry), "the armed timer fires first anyway");
        // The timer fires at the armed deadline: not passed, armed anew.
        tokio::time::advance(Duration::from_secs(4)).await;
        assert!(!expiry.passed(Instant::now()));
        assert_eq!(expiry.arm(), Some(idle + Duration::from_secs(1)));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(expiry.passed(Instant::now()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_before_the_armed_one_wakes_the_driver() {
        let expiry = Expiry::default();
        expiry.set(Some(Instant::now() + Duration::from_secs(60)));
        let _ = expiry.arm();
        let _ = woken(&expiry);
        expiry.set(Some(Instant::now() + Duration::from_secs(4)));
        assert!(woken(&expiry), "the armed timer would fire too late");
    }

    #[tokio::test(start_paused = true)]
    async fn no_deadline_never_wakes_the_driver_nor_passes() {
        let expiry = Expiry::default();
        expiry.set(None);
        assert!(!woken(&expiry));
        assert_eq!(expiry.arm(), None);
        tokio::time::advance(Duration::from_secs(86_400)).await;
        assert!(!expiry.passed(Instant::now()));
    }
}
