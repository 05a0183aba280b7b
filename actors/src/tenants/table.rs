//! [`ShareTable`]: one per-tenant budget per tenant that holds something,
//! all with the same limit (the share).
//!
//! Invariants:
//! - A tenant's budget lives as long as a charge on it, or while it is
//!   among the last [`RECENT`] budgets the table created: the table keeps
//!   weak references besides those few, so a budget found dead has no
//!   charge left and its replacement starting at zero is exact, and a
//!   tenant that charges and releases in turn does not rebuild its budget
//!   each time.
//! - Dead entries are pruned as the table grows, so its size follows the
//!   tenants holding something, not every tenant ever seen.
//! - The lock is held for a lookup or a lowering only, never across a drop
//!   of a charge or an await. A thread that found a tenant's budget
//!   recently finds it again without the lock (`recall.rs`).
//! - Only a table made waitable can keep a charge waiting, and only its
//!   releases wake anyone.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::recall::{recall, remember, table_number};
use crate::budget::{Budget, Charge, Exhausted, InUse};
use crate::identity::{IdMap, TenantId};

const PRUNE_FLOOR: usize = 64;

/// How many of the budgets it created last a table keeps alive without a
/// charge.
const RECENT: usize = 4;

/// Per-tenant budgets named `name`, each limited to the share in force.
pub(crate) struct ShareTable {
    name: &'static str,
    /// This table's number, by which threads remember its budgets.
    number: u64,
    /// Its budgets can be waited on ([`Self::charge_within`]); a release
    /// of one that cannot wakes nobody.
    waitable: bool,
    share: AtomicU32,
    table: Mutex<Table>,
}

struct Table {
    tenants: IdMap<TenantId, Weak<Budget>>,
    /// Dead entries are pruned when the table reaches this size.
    prune_at: usize,
    /// The budgets created last, kept alive; `next` is the oldest's place.
    recent: [Option<Arc<Budget>>; RECENT],
    next: usize,
}

impl ShareTable {
    /// A table whose charges never wait: a tenant at its share is
    /// refused at once.
    pub(crate) fn new(name: &'static str, share: u32) -> Self {
        Self::with_waits(name, share, false)
    }

    /// A table whose charges may also wait for the tenant's own releases
    /// ([`Self::charge_within`]).
    pub(crate) fn waitable(name: &'static str, share: u32) -> Self {
        Self::with_waits(name, share, true)
    }

    fn with_waits(name: &'static str, share: u32, waitable: bool) -> Self {
        Self {
            name,
            number: table_number(),
            waitable,
            share: AtomicU32::new(share),
            table: Mutex::new(Table {
                tenants: IdMap::default(),
                prune_at: PRUNE_FLOOR,
                recent: Default::default(),
                next: 0,
            }),
        }
    }

    /// Charges `amount` to `tenant`'s budget.
    pub(crate) fn charge(&self, tenant: &TenantId, amount: u32) -> Result<Charge, Exhausted> {
        self.budget(tenant).try_reserve_owned(amount)
    }

    /// Charges `amount` to `tenant`'s budget, waiting until `deadline` for
    /// the tenant's own charges to be released (at once in a table made
    /// with [`Self::new`]). Only this tenant's releases wake it: its
    /// waiters never stand in front of another tenant's.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: nothing is charged until it returns `Ok`.
    pub(crate) async fn charge_within(
        &self,
        tenant: &TenantId,
        amount: u32,
        deadline: tokio::time::Instant,
    ) -> Result<Charge, Exhausted> {
        self.budget(tenant).reserve_within(amount, deadline).await
    }

    /// Sets the share for every live tenant and for tenants to come; returns
    /// the share it replaces.
    ///
    /// With `strict`, all or nothing: a tenant above `share` refuses it and
    /// nothing changes. Without, a tenant above it keeps its old limit until
    /// its use falls (for shares that only refuse early in front of an owner
    /// enforcing its own bound).
    pub(crate) fn set_share(&self, share: u32, strict: bool) -> Result<u32, InUse> {
        let table = self.lock();
        let live: Vec<(Arc<Budget>, u32)> = table
            .tenants
            .values()
            .filter_map(Weak::upgrade)
            .map(|budget| {
                let previous = budget.limit();
                (budget, previous)
            })
            .collect();
        for (at, (budget, _)) in live.iter().enumerate() {
            if let (Err(in_use), true) = (budget.set_limit(share), strict) {
                for (budget, previous) in &live[..at] {
                    let _ = budget.set_limit(*previous);
                }
                return Err(in_use);
            }
        }
        Ok(self.share.swap(share, Ordering::AcqRel))
    }

    /// `tenant`'s budget, created at the share in force.
    fn budget(&self, tenant: &TenantId) -> Arc<Budget> {
        if let Some(budget) = recall(self.number, tenant) {
            return budget;
        }
        let budget = self.budget_in_table(tenant);
        remember(self.number, tenant, &budget);
        budget
    }

    /// `tenant`'s budget, looked up (or created) under the table's lock.
    fn budget_in_table(&self, tenant: &TenantId) -> Arc<Budget> {
        let mut table = self.lock();
        if let Some(budget) = table.tenants.get(tenant).and_then(Weak::upgrade) {
            return budget;
        }
        let share = self.share.load(Ordering::Acquire);
        let budget = if self.waitable {
            Budget::waitable(self.name, share)
        } else {
            Budget::new(self.name, share)
        };
        if table.tenants.len() >= table.prune_at {
            table.tenants.retain(|_, budget| budget.strong_count() > 0);
            table.prune_at = (table.tenants.len() * 2).max(PRUNE_FLOOR);
        }
        table
            .tenants
            .insert(tenant.clone(), Arc::downgrade(&budget));
        let next = table.next;
        table.recent[next] = Some(Arc::clone(&budget));
        table.next = (next + 1) % RECENT;
        budget
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // Nothing panics under the lock; a poisoned table is still consistent.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    pub(crate) fn entries(&self) -> usize {
        self.lock().tenants.len()
    }
}

impl fmt::Debug for ShareTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShareTable")
            .field("name", &self.name)
            .field("share", &self.share.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{recall, ShareTable, RECENT};
    use crate::tenants::tests::tenant;

    /// Finds a budget for each of `RECENT` other tenants in `table`: a
    /// budget found before, with no charge, is past the recent few.
    fn crowd_out(table: &ShareTable) {
        for n in 0..RECENT {
            let _ = table.budget(&tenant(&format!("t{n}")));
        }
    }

    #[test]
    fn a_tenant_that_charges_and_releases_in_turn_keeps_one_budget() {
        let table = ShareTable::waitable("connections_per_tenant", 2);
        let first = Arc::downgrade(&table.budget(&tenant("a")));
        for _ in 0..3 {
            let charge = table.charge(&tenant("a"), 2).expect("within the share");
            drop(charge);
        }
        let again = table.budget(&tenant("a"));
        let first = first.upgrade().expect("the budget outlived its charges");
        assert!(Arc::ptr_eq(&first, &again), "the budget was rebuilt");
        assert_eq!(again.used(), 0, "nothing is charged");
    }

    #[test]
    fn a_budget_found_is_remembered_by_the_thread_as_the_tables_own() {
        let table = ShareTable::new("metadata_per_tenant", 4);
        let held = table.charge(&tenant("a"), 3).expect("within the share");
        let remembered = recall(table.number, &tenant("a")).expect("remembered");
        let in_table = table.budget_in_table(&tenant("a"));
        assert!(
            Arc::ptr_eq(&remembered, &in_table),
            "not the table's budget"
        );
        // Found again through the memory: the share still counts the
        // first charge.
        let refused = table.charge(&tenant("a"), 2);
        assert!(refused.is_err(), "a second budget for a: {refused:?}");
        drop(held);
    }

    #[test]
    fn a_remembered_budget_answers_only_its_own_table() {
        let first = ShareTable::new("metadata_per_tenant", 4);
        let second = ShareTable::new("metadata_per_tenant", 4);
        let _full = first.charge(&tenant("a"), 4).expect("within the share");
        let charge = second.charge(&tenant("a"), 4);
        assert!(
            charge.is_ok(),
            "the other table's budget was used: {charge:?}"
        );
    }

    #[test]
    fn a_remembered_budget_that_died_is_replaced_at_zero() {
        let table = ShareTable::new("metadata_per_tenant", 2);
        let first = Arc::downgrade(&table.budget(&tenant("a")));
        // Newer budgets push a's out of the table's recent few and out of
        // this thread's memory; with no charge left it dies.
        crowd_out(&table);
        assert!(first.upgrade().is_none(), "a's budget outlived newer ones");
        let again = table.budget(&tenant("a"));
        assert_eq!(again.used(), 0, "the new budget starts at zero");
        assert!(Arc::ptr_eq(&again, &table.budget_in_table(&tenant("a"))));
    }

    #[test]
    fn past_the_recent_few_an_uncharged_budget_dies_and_restarts_at_zero() {
        let table = ShareTable::waitable("connections_per_tenant", 2);
        let a = Arc::downgrade(&table.budget(&tenant("a")));
        crowd_out(&table);
        assert!(a.upgrade().is_none(), "a's budget outlived newer ones");
        let charge = table.charge(&tenant("a"), 2);
        assert!(charge.is_ok(), "a new budget starts at zero: {charge:?}");
    }
}
