//! The admission errors, each with a stable code.
//!
//! Callers and metrics match on [`AdmitError::code`], which never changes
//! for a variant; messages may be reworded.

use crate::dispatch::Denied;
use crate::error::LookupError;
use crate::identity::ProviderId;
use crate::limits::LimitField;

/// Why a request was not admitted, not started, or not staged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    /// The request's deadline passed (queue age, Store or I/O deadline).
    #[error("deadline passed before the request could proceed")]
    Timeout,
    /// The pools are retired, shut down, or lost their control owner.
    #[error("provider pools are closed")]
    Closed,
    /// The dispatch authority denied or revoked the call.
    #[error("dispatch denied: {0}")]
    Revoked(#[source] Denied),
    /// The call does not match the grant.
    #[error("provider call does not match the grant: {what}")]
    Mismatch {
        /// What differs: `session`, `ledger`, `provider`, `epoch` or
        /// `dispatch predates the grant`.
        what: &'static str,
    },
    /// The granted epoch was retired before the request started.
    #[error("provider {provider}'s granted epoch was retired")]
    Retired {
        /// The provider.
        provider: ProviderId,
    },
    /// The slot does not name a client of this provider.
    #[error("invalid origin slot: {0}")]
    Slot(#[source] LookupError),
}

impl AdmitError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unavailable { .. } => "unavailable",
            Self::Busy => "busy",
            Self::Capacity { .. } => "capacity",
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

    use super::AdmitError;
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
}
