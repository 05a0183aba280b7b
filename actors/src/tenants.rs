//! Per-tenant shares of the node-wide budgets a request can hold.
//!
//! One tenant must never be able to take the whole of something every tenant
//! needs. Each tenant that holds anything has, per shared resource, a
//! [`Budget`] of its own whose limit is that resource's per-tenant share; a
//! request charges its tenant's budget first and the shared one only after,
//! so a tenant at its share is refused before it touches what others share.
//!
//! - metadata bytes (staged input, staged output, each request's overhead)
//!   against `metadata_per_tenant`;
//! - provider workers running jobs for its requests against
//!   `workers_per_tenant`, held until the job is joined;
//! - admissions on their way to the admission queue or queued there against
//!   `requests_per_tenant` — checked before the admission core is touched,
//!   so a flood the fair queue would refuse anyway takes none of the room
//!   left for the queue's owner from another tenant.
//!
//! Each share is a [`ShareTable`] (`tenants/table.rs`); the per-client
//! connection share is one too, kept by the client's epoch.
//!
//! Invariants:
//! - A tenant's use never exceeds its share, and its charge on the shared
//!   budget is taken only after its own charge succeeded.

mod recall;
mod table;

use std::fmt;
use std::sync::Arc;

use crate::budget::{Budget, Charge, Exhausted, InUse};
use crate::identity::TenantId;
use crate::limits::Limits;

pub(crate) use table::ShareTable;

/// A charge on a tenant's share and on the shared budget behind it.
///
/// Dropping it returns both amounts.
#[must_use = "dropping a charge returns its capacity at once"]
#[derive(Debug)]
pub(crate) struct SharedCharge {
    // The shared amount returns first: nothing reads the pair in between.
    _shared: Charge,
    _tenant: Charge,
}

impl SharedCharge {
    /// The pair of a tenant's `tenant` part and its `shared` part.
    pub(crate) fn new(tenant: Charge, shared: Charge) -> Self {
        Self {
            _shared: shared,
            _tenant: tenant,
        }
    }

    /// The tenant's budget this charge is on, when its shared part is on
    /// `shared`: then both came from the [`TenantShares`] of the accounts
    /// that holds `shared`.
    pub(crate) fn tenant_budget_beside(&self, shared: &Arc<Budget>) -> Option<&Arc<Budget>> {
        let on = self._shared.budget()?;
        if Arc::ptr_eq(on, shared) {
            self._tenant.budget()
        } else {
            None
        }
    }
}

/// The node-wide per-tenant shares of one registry generation.
pub(crate) struct TenantShares {
    metadata: ShareTable,
    requests: ShareTable,
    workers: ShareTable,
}

impl TenantShares {
    pub(crate) fn new(limits: &Limits) -> Self {
        let shares = Lowered::of(limits);
        Self {
            metadata: ShareTable::new("metadata_per_tenant", shares.metadata),
            requests: ShareTable::new("requests_per_tenant", shares.requests),
            workers: ShareTable::new("workers_per_tenant", shares.workers),
        }
    }

    /// Charges `amount` metadata bytes to `tenant`'s share, then to `shared`.
    pub(crate) fn charge_metadata(
        &self,
        tenant: &TenantId,
        shared: &Arc<Budget>,
        amount: u32,
    ) -> Result<SharedCharge, Exhausted> {
        let own = self.metadata.charge(tenant, amount)?;
        Ok(SharedCharge {
            _shared: shared.try_reserve(amount)?,
            _tenant: own,
        })
    }

    /// [`Self::charge_metadata`] on `own`, the tenant's metadata share
    /// found already (a staged input's), instead of looking it up.
    ///
    /// `own` must be this table's budget for the tenant: a live budget is
    /// the one the table holds for its tenant, so the charge is the same.
    pub(crate) fn charge_metadata_on(
        own: &Arc<Budget>,
        shared: &Arc<Budget>,
        amount: u32,
    ) -> Result<SharedCharge, Exhausted> {
        let own = own.try_reserve(amount)?;
        Ok(SharedCharge {
            _shared: shared.try_reserve(amount)?,
            _tenant: own,
        })
    }

    /// Charges `amount` metadata bytes to `tenant`'s share, then to
    /// `shared`, and returns the two parts `(tenant, shared)` to be grown
    /// separately (an [`OutputBuffer`](crate::admission::OutputBuffer)).
    pub(crate) fn metadata_parts(
        &self,
        tenant: &TenantId,
        shared: &Arc<Budget>,
        amount: u32,
    ) -> Result<(Charge, Charge), Exhausted> {
        let own = self.metadata.charge(tenant, amount)?;
        Ok((own, shared.try_reserve(amount)?))
    }

    /// Counts one admission of `tenant` on its way to the queue or in it.
    pub(crate) fn admit(&self, tenant: &TenantId) -> Result<Charge, Exhausted> {
        self.requests.charge(tenant, 1)
    }

    /// Takes one of `tenant`'s worker slots, for a job run for its request.
    pub(crate) fn worker(&self, tenant: &TenantId) -> Result<Charge, Exhausted> {
        self.workers.charge(tenant, 1)
    }

    /// Lowers the shares for every live tenant and for tenants to come;
    /// returns the shares it replaced.
    ///
    /// All or nothing for the metadata share: a tenant holding more than the
    /// new share refuses it and nothing changes. The admissions and workers
    /// shares refuse early in front of the scheduler and the worker pool
    /// (which enforce their own bounds): a tenant above the new share keeps
    /// its old limit until its use falls.
    pub(crate) fn lower(&self, shares: Lowered) -> Result<Lowered, InUse> {
        let metadata = self.metadata.set_share(shares.metadata, true)?;
        Ok(Lowered {
            metadata,
            requests: self.requests.set_share(shares.requests, false)?,
            workers: self.workers.set_share(shares.workers, false)?,
        })
    }

    /// Puts back the shares a later step of a refused lowering had changed.
    pub(crate) fn restore(&self, previous: Lowered) {
        // Raising back towards the startup shares cannot fail.
        let _ = self.lower(previous);
    }

    #[cfg(test)]
    fn entries(&self) -> usize {
        self.metadata.entries()
    }
}

/// A set of shares: the new ones of a lowering, or those in force before
/// it, to restore them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lowered {
    pub(crate) metadata: u32,
    pub(crate) requests: u32,
    pub(crate) workers: u32,
}

impl Lowered {
    pub(crate) fn of(limits: &Limits) -> Self {
        Self {
            metadata: limits.metadata_share(),
            requests: limits.requests_per_tenant,
            workers: limits.workers_share(),
        }
    }
}

impl fmt::Debug for TenantShares {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TenantShares")
            .field("metadata", &self.metadata)
            .field("requests", &self.requests)
            .field("workers", &self.workers)
            .finish()
    }
}

#[cfg(test)]
mod tests;
