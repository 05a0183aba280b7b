//! [`LeadershipGuard`]: a held lease and the instant it stops being safe.

use std::time::Duration;

use tokio::time::Instant;

use crate::error::ControlPlaneError;
use crate::lease::{FencingToken, LeaseGrant, LeaseKey};

/// The default skew margin: how much earlier than the lease's own expiry a
/// guard reports loss, to absorb clock-rate drift between nodes.
pub const DEFAULT_SKEW_MARGIN: Duration = Duration::from_millis(500);

/// How much earlier than the lease's expiry a guard gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkewMargin(pub Duration);

impl Default for SkewMargin {
    fn default() -> Self {
        Self(DEFAULT_SKEW_MARGIN)
    }
}

impl SkewMargin {
    /// Fails unless the margin is shorter than `ttl`: a guard on a lease
    /// of that time to live would never be safe.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `skew_margin`.
    pub(crate) fn check_shorter_than(self, ttl: Duration) -> Result<(), ControlPlaneError> {
        if self.0 >= ttl {
            return Err(ControlPlaneError::invalid(
                "skew_margin",
                format!(
                    "{} ms is not shorter than the lease's {} ms",
                    self.0.as_millis(),
                    ttl.as_millis()
                ),
            ));
        }
        Ok(())
    }
}

/// The guard no longer holds the lease safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("leadership of {key} with token {token} is lost or no longer safe")]
pub struct LeadershipLost {
    /// The lease.
    pub key: LeaseKey,
    /// The token the guard held.
    pub token: FencingToken,
}

/// A held lease: its fencing token and the instant until which acting as
/// its holder is safe.
///
/// `safe_until` is measured on the monotonic clock from when the acquiring
/// (or renewing) request was *sent* — before the server started the lease's
/// time to live — plus the time to live, minus the skew margin. The server
/// cannot expire the lease before then, so a guard reports loss first.
///
/// A guard is information, not a lock: pass [`LeadershipGuard::check`]'s
/// token to every leader-dependent write and let the resource refuse stale
/// ones with a [`FencingGate`](crate::FencingGate).
#[derive(Debug, Clone)]
pub struct LeadershipGuard {
    grant: LeaseGrant,
    safe_until: Instant,
    skew: SkewMargin,
    lost: bool,
}

impl LeadershipGuard {
    /// A guard for `grant`, whose request was sent at `sent_at`.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `skew_margin` when the margin
    /// is not shorter than the time to live (the guard would never be safe).
    pub fn new(
        grant: LeaseGrant,
        sent_at: Instant,
        skew: SkewMargin,
    ) -> Result<Self, ControlPlaneError> {
        skew.check_shorter_than(grant.ttl)?;
        let safe_until = sent_at + (grant.ttl - skew.0);
        Ok(Self {
            grant,
            safe_until,
            skew,
            lost: false,
        })
    }

    /// The grant this guard holds.
    pub fn grant(&self) -> &LeaseGrant {
        &self.grant
    }

    /// The lease.
    pub fn key(&self) -> &LeaseKey {
        &self.grant.key
    }

    /// The fencing token of this acquisition.
    pub fn token(&self) -> FencingToken {
        self.grant.token
    }

    /// The instant leadership stops being safe.
    pub fn safe_until(&self) -> Instant {
        self.safe_until
    }

    /// The skew margin.
    pub fn skew(&self) -> SkewMargin {
        self.skew
    }

    /// The token, while leadership is safe now.
    ///
    /// # Errors
    ///
    /// [`LeadershipLost`] once `safe_until` is reached or the guard was
    /// marked lost.
    pub fn check(&self) -> Result<FencingToken, LeadershipLost> {
        self.check_at(Instant::now())
    }

    /// [`check`](Self::check) at a given instant.
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check).
    pub fn check_at(&self, now: Instant) -> Result<FencingToken, LeadershipLost> {
        if self.lost || now >= self.safe_until {
            return Err(self.lost_error());
        }
        Ok(self.grant.token)
    }

    /// Resolves when leadership stops being safe (at once if it already
    /// has).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only sleeps.
    pub async fn expired(&self) {
        if !self.lost {
            tokio::time::sleep_until(self.safe_until).await;
        }
    }

    /// Extends safety after a renewal sent at `sent_at` succeeded. Never
    /// moves `safe_until` backwards, never revives a lost guard.
    pub fn renewed(&mut self, sent_at: Instant) {
        self.extend_to(sent_at + (self.grant.ttl - self.skew.0));
    }

    /// Moves `safe_until` to `until` if that is later (a read-back settled
    /// an unknown renewal).
    pub fn extend_to(&mut self, until: Instant) {
        if !self.lost {
            self.safe_until = self.safe_until.max(until);
        }
    }

    /// Moves `safe_until` to `until` if that is earlier.
    pub(crate) fn narrow_to(&mut self, until: Instant) {
        self.safe_until = self.safe_until.min(until);
    }

    /// Marks the lease lost (a renewal was refused, a read-back showed
    /// another holder).
    pub fn mark_lost(&mut self) {
        self.lost = true;
    }

    /// The loss error of this guard.
    pub fn lost_error(&self) -> LeadershipLost {
        LeadershipLost {
            key: self.grant.key.clone(),
            token: self.grant.token,
        }
    }
}
