//! Execution permission: the dispatch authority and the calls it accepts.
//!
//! Capacity alone never grants execution. After the pools grant capacity,
//! the adapter asks for a fresh dispatch: the authority decides whether the
//! plan may call the provider *now*, and the pools bind the provider's
//! current epoch into a [`ProviderCall`]. `PoolReady::start` accepts only a
//! call for the same session, ledger, provider and epoch, dispatched after
//! the grant.
//!
//! Invariants:
//! - Only [`ProviderPools::dispatch`](crate::ProviderPools::dispatch) makes a
//!   `ProviderCall`, and only after the authority allowed it.
//! - A revocation takes effect for every dispatch that follows it.

use std::sync::{PoisonError, RwLock};

use crate::identity::{Epoch, IdMap, IdSet, ProviderId, TenantId};
use crate::plan::{ExecutionPlan, LedgerId, SessionId};

/// Decides whether an activation may call a provider now.
///
/// The embedding runtime implements this over its own policy; [`PolicyTable`]
/// is a simple built-in one for standalone use and tests.
pub trait DispatchAuthority: Send + Sync {
    /// Allows or denies `plan` calling `provider`.
    ///
    /// # Errors
    ///
    /// [`Denied`] when no policy allows the call (or it was revoked).
    fn authorize(&self, plan: &ExecutionPlan, provider: &ProviderId) -> Result<(), Denied>;
}

/// The authority refused a dispatch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tenant {tenant} may not call provider {provider}")]
pub struct Denied {
    /// The plan's tenant.
    pub tenant: TenantId,
    /// The provider asked for.
    pub provider: ProviderId,
}

/// A built-in policy: a set of (tenant, provider) grants that can be revoked.
///
/// Grants are kept per tenant, so an authorization borrows both identities
/// and clones neither.
#[derive(Debug, Default)]
pub struct PolicyTable {
    allowed: RwLock<IdMap<TenantId, IdSet<ProviderId>>>,
}

impl PolicyTable {
    /// An empty table: every dispatch is denied.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows `tenant` to call `provider`.
    pub fn allow(&self, tenant: TenantId, provider: ProviderId) {
        self.allowed
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(tenant)
            .or_default()
            .insert(provider);
    }

    /// Revokes `tenant`'s permission to call `provider`; returns whether it
    /// was allowed.
    pub fn revoke(&self, tenant: &TenantId, provider: &ProviderId) -> bool {
        let mut allowed = self.allowed.write().unwrap_or_else(PoisonError::into_inner);
        let Some(providers) = allowed.get_mut(tenant) else {
            return false;
        };
        let was_allowed = providers.remove(provider);
        if providers.is_empty() {
            allowed.remove(tenant);
        }
        was_allowed
    }
}

impl DispatchAuthority for PolicyTable {
    fn authorize(&self, plan: &ExecutionPlan, provider: &ProviderId) -> Result<(), Denied> {
        let allowed = self
            .allowed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(plan.tenant())
            .is_some_and(|providers| providers.contains(provider));
        if allowed {
            Ok(())
        } else {
            Err(Denied {
                tenant: plan.tenant().clone(),
                provider: provider.clone(),
            })
        }
    }
}

/// An accepted dispatch: permission for one session to call one provider's
/// current epoch, numbered in the registry's dispatch sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderCall {
    pub(crate) session: SessionId,
    pub(crate) ledger: LedgerId,
    pub(crate) provider: ProviderId,
    pub(crate) epoch: Epoch,
    /// The registry's broker generation.
    pub(crate) generation: u64,
    /// Position in the registry's grant and dispatch sequence.
    pub(crate) sequence: u64,
}

impl ProviderCall {
    /// The session the call was dispatched for.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The provider.
    pub fn provider(&self) -> &ProviderId {
        &self.provider
    }

    /// The epoch the call was bound to.
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }
}
