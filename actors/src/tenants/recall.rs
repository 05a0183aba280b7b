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
                .filter(|found| found.table == table && found.tenant == *tenant)
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
        let same = here.found.iter().position(|found| {
            found
                .as_ref()
                .is_some_and(|found| found.table == table && found.tenant == *tenant)
        });
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
