//! What each thread remembers of the share tables: the last few budgets it
//! found, by table and tenant, so that finding a tenant's budget again
//! takes neither the table's lock nor a hash.
//!
//! Invariants:
//! - A remembered budget is held weakly: remembering keeps no budget (and
//!   so no charge's room) alive, and a budget that died is never returned.
//! - A remembered budget that is still alive is its table's budget for its
//!   tenant: a table replaces a tenant's budget only once it is dead, and
//!   a dead budget never comes back.
//! - A table's number is unique in the process, so no table is answered
//!   with another's budget, even one at the same address after a free.
//! - Each thread remembers at most [`REMEMBERED`] budgets, the oldest
//!   forgotten first.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use crate::budget::Budget;
use crate::identity::TenantId;

/// Budgets each thread remembers.
const REMEMBERED: usize = 4;

/// The next table's number.
static NEXT_TABLE: AtomicU64 = AtomicU64::new(1);

/// A table's number, unique in the process.
pub(super) fn table_number() -> u64 {
    NEXT_TABLE.fetch_add(1, Ordering::Relaxed)
}

/// One budget a thread found.
struct Found {
    table: u64,
    tenant: TenantId,
    budget: Weak<Budget>,
}

impl Found {
    /// True when this is what the thread found for `tenant` in `table`.
    fn is(&self, table: u64, tenant: &TenantId) -> bool {
        self.table == table && self.tenant == *tenant
    }
}

/// A thread's remembered budgets; `next` is the oldest's place.
#[derive(Default)]
struct Remembered {
    found: [Option<Found>; REMEMBERED],
    next: usize,
}

thread_local! {
    static REMEMBERED_HERE: RefCell<Remembered> = RefCell::default();
}

/// The budget of `tenant` in table `table` this thread found last, if it
/// is still alive.
pub(super) fn recall(table: u64, tenant: &TenantId) -> Option<Arc<Budget>> {
    REMEMBERED_HERE
        .try_with(|here| {
            let here = here.borrow();
            let found = here.found.iter().flatten();
            found
                .filter(|found| found.is(table, tenant))
                .find_map(|found| found.budget.upgrade())
        })
        .ok()
        .flatten()
}

/// Remembers `budget` as `tenant`'s in table `table`, forgetting the
/// oldest remembered budget when there is no room.
pub(super) fn remember(table: u64, tenant: &TenantId, budget: &Arc<Budget>) {
    // A thread whose memory is already gone (it is exiting) remembers
    // nothing.
    let _ = REMEMBERED_HERE.try_with(|here| {
        let mut here = here.borrow_mut();
        // The same tenant's dead budget in the same table is replaced in
        // place; else the oldest goes.
        let same = (here.found.iter())
            .position(|found| found.as_ref().is_some_and(|found| found.is(table, tenant)));
        let at = same.unwrap_or_else(|| {
            let next = here.next;
            here.next = (next + 1) % REMEMBERED;
            next
        });
        here.found[at] = Some(Found {
            table,
            tenant: tenant.clone(),
            budget: Arc::downgrade(budget),
        });
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{recall, remember, table_number, REMEMBERED};
    use crate::budget::Budget;
    use crate::tenants::tests::tenant;

    #[test]
    fn remembering_a_tenant_again_takes_no_other_tenants_place() {
        let table = table_number();
        let budgets: Vec<_> = (0..REMEMBERED - 1)
            .map(|n| {
                (
                    tenant(&format!("t{n}")),
                    Budget::new("metadata_per_tenant", 4),
                )
            })
            .collect();
        for (who, budget) in &budgets {
            remember(table, who, budget);
        }
        let again = Budget::new("metadata_per_tenant", 4);
        for _ in 0..2 * REMEMBERED {
            remember(table, &budgets[0].0, &again);
        }
        let first = recall(table, &budgets[0].0).expect("t0 remembered");
        assert!(Arc::ptr_eq(&first, &again), "t0's older budget answered");
        for (who, budget) in &budgets[1..] {
            let found = recall(table, who).expect("forgotten for t0's repeats");
            assert!(Arc::ptr_eq(&found, budget));
        }
    }
}
