//! [`LeaseAnswers`]: checks every lease grant a server sends against the
//! request it answers, so a wrong answer is a protocol error, never a held
//! lease.
//!
//! Invariants:
//! - A grant must name the requested key and holder, carry a fencing token
//!   above 0 and a time to live no longer than the one requested.
//! - A renewal keeps its token; an acquisition's token is never below the
//!   last one this client saw for that key.
//! - The last-seen tokens are bounded: at most [`MAX_TRACKED_LEASES`] keys
//!   are remembered (a full table keeps its keys and tracks no new one).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::error::ControlPlaneError;
use crate::lease::{FencingToken, LeaseGrant, LeaseKey, LeaseRequest};
use crate::name::NodeId;

/// How many lease keys a client remembers the last token of.
pub(crate) const MAX_TRACKED_LEASES: usize = 4_096;

/// What a grant must match.
pub(crate) struct Expected<'a> {
    pub(crate) key: &'a LeaseKey,
    pub(crate) holder: &'a NodeId,
    pub(crate) ttl: Duration,
    /// The renewed lease's token; `None` for an acquisition.
    pub(crate) renewing: Option<FencingToken>,
}

impl<'a> Expected<'a> {
    /// What a grant answering the acquisition `request` must match.
    pub(crate) fn acquisition(request: &'a LeaseRequest) -> Self {
        Self {
            key: &request.key,
            holder: &request.holder,
            ttl: request.ttl,
            renewing: None,
        }
    }

    /// What a grant answering the renewal of `lease` must match.
    pub(crate) fn renewal(lease: &'a LeaseGrant) -> Self {
        Self {
            key: &lease.key,
            holder: &lease.holder,
            ttl: lease.ttl,
            renewing: Some(lease.token),
        }
    }
}

/// The last fencing token seen per lease key.
#[derive(Debug, Default)]
pub(crate) struct LeaseAnswers {
    last: Mutex<HashMap<LeaseKey, u64>>,
}

impl LeaseAnswers {
    /// Checks `grant` against `expected` and records its token.
    pub(crate) fn check(
        &self,
        expected: &Expected<'_>,
        grant: LeaseGrant,
    ) -> Result<LeaseGrant, ControlPlaneError> {
        matches(expected, &grant)?;
        let wrong = |what: String| ControlPlaneError::Protocol(format!("lease answer {what}"));
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(seen) = last.get(&grant.key) {
            if grant.token.0 < *seen {
                return Err(wrong(format!(
                    "carries token {}, below the {} already seen",
                    grant.token.0, seen
                )));
            }
        }
        if last.len() < MAX_TRACKED_LEASES || last.contains_key(&grant.key) {
            last.insert(grant.key.clone(), grant.token.0);
        }
        Ok(grant)
    }
}

/// Checks `grant` answers `expected`: key, holder, a token above 0, a time
/// to live no longer than asked, and a renewal's unchanged token.
pub(crate) fn matches(
    expected: &Expected<'_>,
    grant: &LeaseGrant,
) -> Result<(), ControlPlaneError> {
    let wrong = |what: String| ControlPlaneError::Protocol(format!("lease answer {what}"));
    if &grant.key != expected.key {
        return Err(wrong(format!(
            "names lease {}, not {}",
            grant.key, expected.key
        )));
    }
    if &grant.holder != expected.holder {
        return Err(wrong(format!("names holder {}", grant.holder)));
    }
    if grant.token.0 == 0 {
        return Err(wrong("carries fencing token 0".into()));
    }
    if grant.ttl > expected.ttl {
        return Err(wrong(format!(
            "grants {} ms, more than the {} ms asked",
            grant.ttl.as_millis(),
            expected.ttl.as_millis()
        )));
    }
    if let Some(token) = expected.renewing {
        if grant.token != token {
            return Err(wrong(format!(
                "changes the renewed token {} to {}",
                token.0, grant.token.0
            )));
        }
    }
    Ok(())
}
