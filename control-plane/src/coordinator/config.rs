//! [`CoordinatorConfig`] and [`Leadership`], what a campaign publishes.

use std::time::Duration;

use tokio::time::Instant;

use crate::error::ControlPlaneError;
use crate::lease::{FencingToken, SkewMargin};
use crate::name::NodeId;
use crate::presence::check_ttl;

/// How a coordinator campaigns for leases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorConfig {
    /// The node campaigning.
    pub node: NodeId,
    /// The time to live of every lease it takes.
    pub ttl: Duration,
    /// How much earlier than the lease's expiry a leader steps down.
    pub skew: SkewMargin,
    /// Time between renewals; shorter than `ttl − skew`.
    pub renew_every: Duration,
    /// Time between attempts while another node leads.
    pub retry_every: Duration,
    /// Most leases campaigned for at once.
    pub max_campaigns: usize,
    /// Mailbox slots for callers.
    pub mailbox: usize,
}

impl CoordinatorConfig {
    /// Defaults for `ttl`: renew every third of it, retry every half,
    /// a skew margin of a tenth (at most 500 ms), 64 campaigns, 16 slots.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] naming `ttl` outside 1 ms – 24 h.
    pub fn new(node: NodeId, ttl: Duration) -> Result<Self, ControlPlaneError> {
        check_ttl("ttl", ttl)?;
        Ok(Self {
            node,
            ttl,
            skew: SkewMargin((ttl / 10).min(Duration::from_millis(500))),
            renew_every: ttl / 3,
            retry_every: ttl / 2,
            max_campaigns: 64,
            mailbox: 16,
        })
    }

    pub(crate) fn check(&self) -> Result<(), ControlPlaneError> {
        check_ttl("ttl", self.ttl)?;
        if self.skew.0 >= self.ttl {
            return Err(ControlPlaneError::invalid(
                "skew_margin",
                "not shorter than the ttl",
            ));
        }
        if self.renew_every.is_zero() || self.renew_every >= self.ttl - self.skew.0 {
            return Err(ControlPlaneError::invalid(
                "renew_every",
                "must be above zero and below the ttl minus the skew margin",
            ));
        }
        if self.retry_every.is_zero() {
            return Err(ControlPlaneError::invalid("retry_every", "zero"));
        }
        if self.max_campaigns == 0 || self.mailbox == 0 {
            return Err(ControlPlaneError::invalid("max_campaigns/mailbox", "zero"));
        }
        Ok(())
    }
}

/// This node's standing for one lease, as a campaign publishes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leadership {
    /// Not (or no longer) the leader; the holder, when known.
    Follower {
        /// The node that holds the lease, if the last attempt saw one.
        holder: Option<NodeId>,
    },
    /// The leader, safe until the instant given.
    Leader {
        /// The fencing token to pass to protected resources.
        token: FencingToken,
        /// Past this instant, act as a follower even if no update arrived.
        safe_until: Instant,
    },
}

impl Leadership {
    /// The token, when leading safely at `now`.
    pub fn token_at(&self, now: Instant) -> Option<FencingToken> {
        match self {
            Self::Leader { token, safe_until } if now < *safe_until => Some(*token),
            _ => None,
        }
    }

    /// True when leading safely now.
    pub fn is_leader(&self) -> bool {
        self.token_at(Instant::now()).is_some()
    }
}
