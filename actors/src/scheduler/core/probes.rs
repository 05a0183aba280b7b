//! Test-only probes of the admission core: its word, and ownership taken
//! and given up by hand, so a test can leave operations for an owner.

use std::sync::Arc;

use super::{Core, ONE, OWNED, PASSES};
use crate::scheduler::cell::Cell;
use crate::scheduler::state::{Op, State};
use crate::sync::Ordering;

impl Core {
    pub(crate) fn deferred(&self) -> usize {
        self.word.load(Ordering::Acquire) / ONE
    }

    pub(crate) fn is_owned(&self) -> bool {
        self.word.load(Ordering::Acquire) & OWNED != 0
    }

    /// Takes ownership as a caller would, so a test can leave operations.
    pub(crate) fn own_for_test(&self) {
        assert!(self.own_free(), "the queue was free");
    }

    /// Leaves an operation that changes nothing (a cancel of a waiter
    /// that was never queued).
    pub(crate) fn defer_noop_for_test(&self) {
        self.defer(Op::Cancel(Arc::new(Cell::new())));
    }

    /// Gives up ownership as a caller does (bounded passes, then hand-over).
    pub(crate) fn give_up_bounded_for_test(&self) {
        self.give_up(Some(PASSES));
    }

    /// Gives up ownership, applying everything first.
    pub(crate) fn give_up_for_test(&self) {
        self.give_up(None);
    }

    pub(crate) fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.lock())
    }
}
