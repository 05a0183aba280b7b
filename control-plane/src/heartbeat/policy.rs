//! [`HeartbeatPolicy`] and [`HeartbeatStatus`].

use std::time::Duration;

use crate::error::{ControlPlaneError, ErrorCode};

/// How often to heartbeat, and how many callers may wait on the actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatPolicy {
    /// Time between heartbeats; shorter than the time to live.
    pub interval: Duration,
    /// Mailbox slots for status and stop requests.
    pub mailbox: usize,
}

impl HeartbeatPolicy {
    /// Heartbeats four times per time to live: two in a row may fail and
    /// the third still lands before the registration expires.
    pub fn for_ttl(ttl: Duration) -> Self {
        Self {
            interval: ttl / 4,
            mailbox: 8,
        }
    }

    pub(crate) fn check(&self, ttl: Duration) -> Result<(), ControlPlaneError> {
        if self.interval.is_zero() || self.interval >= ttl {
            return Err(ControlPlaneError::invalid(
                "heartbeat interval",
                format!(
                    "{} ms, must be above zero and below the {} ms time to live",
                    self.interval.as_millis(),
                    ttl.as_millis()
                ),
            ));
        }
        if self.mailbox == 0 {
            return Err(ControlPlaneError::invalid(
                "heartbeat mailbox",
                "zero slots",
            ));
        }
        Ok(())
    }
}

/// What a heartbeat actor has done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeartbeatStatus {
    /// Whether the last registration or heartbeat succeeded.
    pub registered: bool,
    /// Successful registrations (the first, and every re-registration).
    pub registrations: u64,
    /// Successful heartbeats.
    pub beats: u64,
    /// Failed registrations and heartbeats.
    pub failures: u64,
    /// Failures since the last success.
    pub consecutive_failures: u32,
    /// The code of the last failure.
    pub last_error: Option<ErrorCode>,
}
