//! The restart policy for epoch actors: at most `max_restarts` restarts
//! within a sliding `window` (OTP's intensity and period). Past it, the
//! provider is retired instead.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// How often an epoch actor that panics is restarted with its same
/// immutable configuration.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use provider_pools_actors::RestartPolicy;
///
/// let policy = RestartPolicy::default();
/// assert_eq!((policy.max_restarts, policy.window), (3, Duration::from_secs(10)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Restarts allowed within one window.
    pub max_restarts: u32,
    /// The sliding window.
    pub window: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            max_restarts: 3,
            window: Duration::from_secs(10),
        }
    }
}

/// The recent restarts of one epoch actor.
#[derive(Debug, Default)]
pub(crate) struct RestartHistory {
    recent: VecDeque<Instant>,
}

impl RestartHistory {
    /// Records a restart at `now` if `policy` allows one more.
    pub(crate) fn try_restart(&mut self, policy: &RestartPolicy, now: Instant) -> bool {
        while self
            .recent
            .front()
            .is_some_and(|at| now.duration_since(*at) >= policy.window)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= policy.max_restarts as usize {
            return false;
        }
        self.recent.push_back(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_max_restarts_per_window_then_refuses() {
        let policy = RestartPolicy::default();
        let mut history = RestartHistory::default();
        let start = Instant::now();
        for i in 0..3 {
            assert!(history.try_restart(&policy, start + Duration::from_secs(i)));
        }
        assert!(!history.try_restart(&policy, start + Duration::from_secs(3)));
        // The first restart leaves the window at 10 s.
        assert!(history.try_restart(&policy, start + Duration::from_secs(10)));
    }
}
