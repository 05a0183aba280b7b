//! The queued waiters by deadline: what the scheduler's one alarm reads,
//! instead of a timer per waiter.
//!
//! A min-heap of deadlines over the waiters' entries (equal deadlines in no
//! particular order: the alarm answers every due waiter in one pass). An entry
//! whose waiter was granted, refused or left stays in the heap until it
//! reaches the top or the heap is compacted, so granting and cancelling
//! cost nothing here.
//!
//! Invariants:
//! - Every waiter in the queue has an entry here (so closing reaches every
//!   waiter through this heap alone).
//! - Entries ≤ 2 × waiting + [`SLACK`]: a push past that first drops every
//!   stale entry, one whose waiter was answered or left (amortised O(1) per push, as a heap of n entries is
//!   rebuilt only after about n pushes).

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use tokio::time::Instant;

use crate::scheduler::cell::Cell;

/// Stale entries tolerated beyond twice the waiting ones.
const SLACK: usize = 64;

struct Entry {
    deadline: Instant,
    cell: Arc<Cell>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed, so that `BinaryHeap` (a max-heap) yields the earliest
    /// deadline first.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other.deadline.cmp(&self.deadline)
    }
}

/// The queued waiters' entries, earliest deadline first.
#[derive(Default)]
pub(crate) struct Deadlines {
    heap: BinaryHeap<Entry>,
}

impl Deadlines {
    /// Adds a queued waiter's entry, due at `deadline`; `waiting` is how
    /// many waiters the queue holds now, which bounds the stale entries
    /// kept.
    pub(crate) fn push(&mut self, cell: Arc<Cell>, deadline: Instant, waiting: u32) {
        if self.heap.len() >= 2 * waiting as usize + SLACK {
            self.heap.retain(|entry| entry.cell.is_waiting());
        }
        self.heap.push(Entry { deadline, cell });
    }

    /// The earliest deadline of a waiter still waiting, dropping the
    /// stale entries in front of it.
    pub(crate) fn earliest(&mut self) -> Option<Instant> {
        while let Some(top) = self.heap.peek() {
            if top.cell.is_waiting() {
                return Some(top.deadline);
            }
            self.heap.pop();
        }
        None
    }

    /// The next entry whose deadline is at or before `now`, stale or not.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<Arc<Cell>> {
        if self.heap.peek()?.deadline > now {
            return None;
        }
        self.heap.pop().map(|entry| entry.cell)
    }

    /// Every entry, emptying the heap.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Arc<Cell>> + '_ {
        self.heap.drain().map(|entry| entry.cell)
    }

    /// Entries held, stale ones included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}
