//! Settling unknown lease outcomes by reading the lease back, and the
//! guarded acquire and renew built on it.
//!
//! A lease mutation that timed out or lost its connection after sending may
//! have applied. Replaying it could take a lease twice or extend one that
//! was lost; this module reads the authoritative state instead.

use std::time::Duration;

use tokio::time::Instant;

use crate::client::ControlPlane;
use crate::error::ControlPlaneError;
use crate::lease::answers::Expected;
use crate::lease::{
    FencingToken, LeadershipGuard, LeaseGrant, LeaseKey, LeaseRequest, LeaseState, SkewMargin,
};
use crate::name::NodeId;

/// What reading a lease back showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// `holder` holds the lease with this token; `safe_until` bounds the
    /// server's remaining time as read (from before the read was sent).
    Held {
        /// The holder's token.
        token: FencingToken,
        /// Read-back instant plus the remaining time the server reported,
        /// when it reported one.
        safe_until: Option<Instant>,
    },
    /// `holder` does not hold the lease; the state read, if any.
    NotHeld(Option<LeaseState>),
}

/// Reads `key` back and tells whether `holder` holds it.
///
/// # Cancel safety
///
/// Cancel safe: it only reads.
///
/// # Errors
///
/// The read's own errors; the outcome then stays unknown.
pub async fn settle(
    client: &dyn ControlPlane,
    key: &LeaseKey,
    holder: &NodeId,
) -> Result<Settled, ControlPlaneError> {
    let sent_at = Instant::now();
    let state = client.read_lease(key.clone()).await?;
    Ok(match state {
        Some(state) if state.holder.as_ref() == Some(holder) => Settled::Held {
            token: state.token,
            safe_until: state.remaining.map(|remaining| sent_at + remaining),
        },
        other => Settled::NotHeld(other),
    })
}

/// Acquires a lease and wraps it in a guard; an unknown outcome is settled
/// by reading the lease back, never by acquiring again.
///
/// # Cancel safety
///
/// Dropping the future after the request was sent may leave the lease
/// acquired on the server without a guard; it expires after its time to
/// live, and a later [`settle`] finds it.
///
/// # Errors
///
/// `LeaseHeld` when another node holds it (also when a read-back shows so),
/// `LeaseLost` when a read-back shows nobody took it for us, `Invalid` for a
/// skew margin not shorter than the time to live, `Protocol` for a grant
/// that does not answer the request (another key or holder, token 0, a
/// longer time to live), and the client's errors.
pub async fn acquire_guarded(
    client: &dyn ControlPlane,
    request: LeaseRequest,
    skew: SkewMargin,
) -> Result<LeadershipGuard, ControlPlaneError> {
    skew.check_shorter_than(request.ttl)?;
    let sent_at = Instant::now();
    match client.acquire(request.clone()).await {
        Ok(grant) => {
            crate::lease::answers::matches(&Expected::acquisition(&request), &grant)?;
            LeadershipGuard::new(grant, sent_at, skew)
        }
        Err(ControlPlaneError::OutcomeUnknown { .. }) => {
            match settle(client, &request.key, &request.holder).await? {
                Settled::Held { token, safe_until } => {
                    let grant = LeaseGrant {
                        key: request.key,
                        holder: request.holder,
                        token,
                        ttl: request.ttl,
                    };
                    let mut guard = LeadershipGuard::new(grant, sent_at, skew)?;
                    cap_by_read_back(&mut guard, safe_until, skew.0);
                    Ok(guard)
                }
                Settled::NotHeld(Some(LeaseState {
                    holder: Some(holder),
                    token,
                    ..
                })) => Err(ControlPlaneError::LeaseHeld { holder, token }),
                Settled::NotHeld(_) => Err(ControlPlaneError::LeaseLost),
            }
        }
        Err(error) => Err(error),
    }
}

/// Renews the guard's lease and extends its safety; an unknown outcome is
/// settled by reading back, and a refusal marks the guard lost.
///
/// # Cancel safety
///
/// Dropping the future leaves the guard as it was: its `safe_until` was
/// not extended, so it stays conservative.
///
/// # Errors
///
/// `LeaseLost` (and the guard is marked lost) when the lease is no longer
/// held with the guard's token; the client's errors otherwise, leaving the
/// guard unchanged.
pub async fn renew_guarded(
    client: &dyn ControlPlane,
    guard: &mut LeadershipGuard,
) -> Result<(), ControlPlaneError> {
    let sent_at = Instant::now();
    match client.renew(guard.grant().clone()).await {
        Ok(_) => {
            guard.renewed(sent_at);
            Ok(())
        }
        Err(ControlPlaneError::OutcomeUnknown { .. }) => {
            match settle(client, guard.key(), &guard.grant().holder).await? {
                Settled::Held { token, safe_until } if token == guard.token() => {
                    // Extend only as far as both the renewal's own bound and
                    // the time the server reported as left allow.
                    if let Some(until) = safe_until {
                        let until = until.min(sent_at + guard.grant().ttl);
                        if let Some(safe) = until.checked_sub(guard.skew().0) {
                            guard.extend_to(safe);
                        }
                    }
                    Ok(())
                }
                _ => {
                    guard.mark_lost();
                    Err(ControlPlaneError::LeaseLost)
                }
            }
        }
        Err(ControlPlaneError::LeaseLost) => {
            guard.mark_lost();
            Err(ControlPlaneError::LeaseLost)
        }
        Err(error) => Err(error),
    }
}

/// Narrows a fresh guard's `safe_until` to what the read-back showed.
fn cap_by_read_back(guard: &mut LeadershipGuard, read_until: Option<Instant>, skew: Duration) {
    if let Some(until) = read_until {
        let capped = until.checked_sub(skew).unwrap_or(until);
        guard.narrow_to(capped);
    }
}
