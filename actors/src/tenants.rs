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
//! - admissions on their way to the scheduler or queued there against
//!   `requests_per_tenant` — checked before the scheduler's mailbox slot is
//!   taken, so a flood the fair queue would refuse anyway takes no slot from
//!   another tenant.
//!
//! Invariants:
//! - A tenant's budget lives exactly as long as a charge on it: the table
//!   keeps only weak references, so a budget found dead has no charge left
//!   and its replacement starting at zero is exact.
//! - A tenant's use never exceeds its share, and its charge on the shared
//!   budget is taken only after its own charge succeeded.
//! - The table's lock is held for a lookup or a lowering, never across a
//!   drop of a charge or an await.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::budget::{Budget, Charge, Exhausted, InUse};
use crate::identity::TenantId;
use crate::limits::Limits;

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

/// The live per-tenant budgets of one registry generation.
pub(crate) struct TenantShares {
    metadata_share: AtomicU32,
    requests_share: AtomicU32,
    workers_share: AtomicU32,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    tenants: HashMap<TenantId, Accounts>,
    /// Dead entries are pruned when the table reaches this size.
    prune_at: usize,
}

#[derive(Default)]
struct Accounts {
    metadata: Weak<Budget>,
    requests: Weak<Budget>,
    workers: Weak<Budget>,
}

/// Which per-tenant budget.
#[derive(Clone, Copy)]
enum Share {
    Metadata,
    Requests,
    Workers,
}

const PRUNE_FLOOR: usize = 64;

impl TenantShares {
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            metadata_share: AtomicU32::new(limits.metadata_share()),
            requests_share: AtomicU32::new(limits.requests_per_tenant),
            workers_share: AtomicU32::new(limits.workers_share()),
            table: Mutex::new(Table {
                tenants: HashMap::new(),
                prune_at: PRUNE_FLOOR,
            }),
        }
    }

    /// Charges `amount` metadata bytes to `tenant`'s share, then to `shared`.
    pub(crate) fn charge_metadata(
        &self,
        tenant: &TenantId,
        shared: &Arc<Budget>,
        amount: u32,
    ) -> Result<SharedCharge, Exhausted> {
        let own = self.budget(tenant, Share::Metadata).try_reserve(amount)?;
        Ok(SharedCharge {
            _shared: shared.try_reserve(amount)?,
            _tenant: own,
        })
    }

    /// Counts one admission of `tenant` on its way to the queue or in it.
    pub(crate) fn admit(&self, tenant: &TenantId) -> Result<Charge, Exhausted> {
        self.budget(tenant, Share::Requests).try_reserve(1)
    }

    /// Takes one of `tenant`'s worker slots, for a job run for its request.
    pub(crate) fn worker(&self, tenant: &TenantId) -> Result<Charge, Exhausted> {
        self.budget(tenant, Share::Workers).try_reserve(1)
    }

    /// Lowers the shares for every live tenant and for tenants to come.
    ///
    /// All or nothing for the metadata share: a tenant holding more than the
    /// new share refuses it and nothing changes. The admissions share is a
    /// caller-side early refusal in front of the scheduler (which enforces
    /// `requests_per_tenant` itself and refuses lowering it below its use):
    /// a tenant with more admissions in flight keeps its old limit until they
    /// settle.
    /// The workers share, like the admissions one, is an early refusal in
    /// front of the worker pool: a tenant running more jobs keeps its old
    /// limit until they are joined.
    pub(crate) fn lower(&self, shares: Lowered) -> Result<Lowered, InUse> {
        let Lowered {
            metadata,
            requests,
            workers,
        } = shares;
        let table = self.lock();
        let live: Vec<(Arc<Budget>, u32)> = table
            .tenants
            .values()
            .filter_map(|accounts| accounts.metadata.upgrade())
            .map(|budget| {
                let previous = budget.limit();
                (budget, previous)
            })
            .collect();
        for (at, (budget, _)) in live.iter().enumerate() {
            if let Err(in_use) = budget.set_limit(metadata) {
                for (budget, previous) in &live[..at] {
                    let _ = budget.set_limit(*previous);
                }
                return Err(in_use);
            }
        }
        for accounts in table.tenants.values() {
            if let Some(budget) = accounts.requests.upgrade() {
                let _ = budget.set_limit(requests);
            }
            if let Some(budget) = accounts.workers.upgrade() {
                let _ = budget.set_limit(workers);
            }
        }
        let previous = Lowered {
            metadata: self.metadata_share.swap(metadata, Ordering::AcqRel),
            requests: self.requests_share.swap(requests, Ordering::AcqRel),
            workers: self.workers_share.swap(workers, Ordering::AcqRel),
        };
        Ok(previous)
    }

    /// Puts back the shares a later step of a refused lowering had changed.
    pub(crate) fn restore(&self, previous: Lowered) {
        // Raising back to the startup side cannot fail.
        let _ = self.lower(previous);
    }

    /// `tenant`'s budget for `share`, created at the share in force.
    fn budget(&self, tenant: &TenantId, share: Share) -> Arc<Budget> {
        let mut table = self.lock();
        if let Some(budget) = table.tenants.get(tenant).and_then(|a| a.get(share)) {
            return budget;
        }
        let (name, limit) = match share {
            Share::Metadata => ("metadata_per_tenant", &self.metadata_share),
            Share::Requests => ("requests_per_tenant", &self.requests_share),
            Share::Workers => ("workers_per_tenant", &self.workers_share),
        };
        let budget = Budget::new(name, limit.load(Ordering::Acquire));
        if table.tenants.len() >= table.prune_at {
            table.tenants.retain(|_, accounts| accounts.is_live());
            table.prune_at = (table.tenants.len() * 2).max(PRUNE_FLOOR);
        }
        table
            .tenants
            .entry(tenant.clone())
            .or_default()
            .set(share, &budget);
        budget
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // Nothing panics under the lock; a poisoned table is still consistent.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    fn entries(&self) -> usize {
        self.lock().tenants.len()
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

impl Accounts {
    fn get(&self, share: Share) -> Option<Arc<Budget>> {
        match share {
            Share::Metadata => self.metadata.upgrade(),
            Share::Requests => self.requests.upgrade(),
            Share::Workers => self.workers.upgrade(),
        }
    }

    fn set(&mut self, share: Share, budget: &Arc<Budget>) {
        match share {
            Share::Metadata => self.metadata = Arc::downgrade(budget),
            Share::Requests => self.requests = Arc::downgrade(budget),
            Share::Workers => self.workers = Arc::downgrade(budget),
        }
    }

    fn is_live(&self) -> bool {
        self.metadata.strong_count() > 0
            || self.requests.strong_count() > 0
            || self.workers.strong_count() > 0
    }
}

impl fmt::Debug for TenantShares {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TenantShares")
            .field("metadata_share", &self.metadata_share)
            .field("requests_share", &self.requests_share)
            .field("workers_share", &self.workers_share)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
