//! The admission errors, each with a stable code.
//!
//! Callers and metrics match on [`AdmitError::code`], which never changes
//! for a variant; messages may be reworded.

use std::fmt;
use std::time::Duration;

use crate::dispatch::Denied;
use crate::error::LookupError;
use crate::identity::ProviderId;
use crate::limits::LimitField;

/// Why a request was not admitted, not started, or not staged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdmitError {
    /// The provider has no usable epoch (not installed).
    #[error("provider {provider} is unavailable")]
    Unavailable {
        /// The provider.
        provider: ProviderId,
    },
    /// The admission path is saturated (a control mailbox is full, or too
    /// many operations already wait for the admission queue's owner);
    /// nothing was queued.
    #[error("admission is busy")]
    Busy,
    /// A bound was reached: nothing waits on a full queue.
    #[error("capacity exhausted: {resource} has {used} of {limit} in use")]
    Capacity {
        /// The limit that refused, by its field name, or a budget name.
        resource: &'static str,
        /// Use when refused.
        used: u32,
        /// The limit in force.
        limit: u32,
    },
    /// A request rate — the provider's, or the tenant's own — cannot grant
    /// the request before its deadline, given the requests of its tenant
    /// queued ahead of it for that provider: refused at once instead of
    /// waiting to time out. It names the rate that sets the turn.
    #[error("rate limited: {requests} requests per {period:?} grant this request in {wait:?} at the earliest, after its deadline")]
    RateLimited {
        /// The rate in force: requests per `period`.
        requests: u32,
        /// The rate's period.
        period: Duration,
        /// How long from the refusal its turn would have come at the earliest.
        wait: Duration,
    },
    /// The request's deadline passed (queue age, Store or I/O deadline).
    #[error("deadline passed before the request could proceed")]
    Timeout,
    /// The pools are retired, shut down, or lost their control owner.
    #[error("provider pools are closed")]
    Closed,
    /// The dispatch authority denied or revoked the call.
    #[error("dispatch denied")]
    Revoked(#[source] Denied),
    /// The call does not match the grant.
    #[error("provider call does not match the grant: {what}")]
    Mismatch {
        /// What differs.
        what: CallMismatch,
    },
    /// The granted epoch was retired before the request started.
    #[error("provider {provider}'s granted epoch was retired")]
    Retired {
        /// The provider.
        provider: ProviderId,
    },
    /// The slot does not name a client of this provider.
    #[error("invalid origin slot")]
    Slot(#[source] LookupError),
}

/// What differs between a [`ProviderCall`](crate::dispatch::ProviderCall)
/// and the grant it was meant to start ([`AdmitError::Mismatch`]).
///
/// Displayed as the word logs have always shown: `registry`, `session`,
/// `ledger`, `provider` or `dispatch predates the grant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallMismatch {
    /// The call was dispatched by another registry (broker generation).
    Registry,
    /// The call belongs to another session.
    Session,
    /// The call belongs to another ledger.
    Ledger,
    /// The call is for another provider.
    Provider,
    /// The call was dispatched before the grant was made.
    Stale,
}

impl CallMismatch {
    /// The word that names what differs, as displayed.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Registry => "registry",
            Self::Session => "session",
            Self::Ledger => "ledger",
            Self::Provider => "provider",
            Self::Stale => "dispatch predates the grant",
        }
    }
}

impl fmt::Display for CallMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl AdmitError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unavailable { .. } => "unavailable",
            Self::Busy => "busy",
            Self::Capacity { .. } => "capacity",
            Self::RateLimited { .. } => "rate_limited",
            Self::Timeout => "timeout",
            Self::Closed => "closed",
            Self::Revoked(_) => "revoked",
            Self::Mismatch { .. } => "mismatch",
            Self::Retired { .. } => "retired",
            Self::Slot(_) => "invalid_slot",
        }
    }

    pub(crate) fn capacity(field: LimitField, used: u32, limit: u32) -> Self {
        Self::Capacity {
            resource: field.name(),
            used,
            limit,
        }
    }
}

impl From<crate::budget::Exhausted> for AdmitError {
    fn from(e: crate::budget::Exhausted) -> Self {
        Self::Capacity {
            resource: e.resource,
            used: e.used,
            limit: e.limit,
        }
    }
}

impl From<LookupError> for AdmitError {
    fn from(e: LookupError) -> Self {
        match e {
            LookupError::Closed => Self::Closed,
            LookupError::UnknownProvider { provider } => Self::Unavailable { provider },
            LookupError::Retired { provider } => Self::Retired { provider },
            other => Self::Slot(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::{AdmitError, CallMismatch};
    use crate::dispatch::Denied;
    use crate::error::LookupError;
    use crate::identity::{OriginSlot, ProviderId, TenantId};

    fn provider() -> ProviderId {
        ProviderId::new("web").expect("a provider id")
    }

    #[test]
    fn a_revoked_call_keeps_the_denial_as_its_source() {
        let denied = Denied {
            tenant: TenantId::new("t").expect("a tenant id"),
            provider: provider(),
        };
        let error = AdmitError::Revoked(denied.clone());
        let source = error.source().map(ToString::to_string);
        assert_eq!(source, Some(denied.to_string()));
    }

    #[test]
    fn an_invalid_slot_keeps_the_lookup_error_as_its_source() {
        let lookup = LookupError::UnknownSlot {
            provider: provider(),
            slot: OriginSlot::new(3),
        };
        let expected = lookup.to_string();
        let error = AdmitError::from(lookup);
        assert_eq!(error.code(), "invalid_slot");
        assert_eq!(error.source().map(ToString::to_string), Some(expected));
    }

    #[test]
    fn a_mismatch_reads_as_it_always_did() {
        let cases = [
            (CallMismatch::Registry, "registry"),
            (CallMismatch::Session, "session"),
            (CallMismatch::Ledger, "ledger"),
            (CallMismatch::Provider, "provider"),
            (CallMismatch::Stale, "dispatch predates the grant"),
        ];
        for (what, word) in cases {
            let error = AdmitError::Mismatch { what };
            assert_eq!(
                error.to_string(),
                format!("provider call does not match the grant: {word}")
            );
            assert_eq!(error.code(), "mismatch");
        }
    }
}
