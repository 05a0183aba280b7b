//! Priority classes in the queue: the class each grant is made in, before
//! the fairness policy chooses a tenant and a group within it.
//!
//! Each class (by rank, 0 the highest) has its own tenant rotation, and a
//! tenant its own provider rotation per class; a provider's blocked FIFO
//! holds groups of every class. Each class has a minimum share of
//! `running_total` in percent, rounded down to whole slots (its
//! *minimum*). A grant is tried, in order:
//!
//! 1. in each class running fewer than its minimum, with an eligible
//!    tenant, highest first;
//! 2. then in each class with an eligible tenant, highest first, when the
//!    slots left after the grant are at least the sum of the higher
//!    classes' unused minimums (minimum less running, when positive).
//!
//! A class whose every chosen group turns out blocked is passed over for
//! the next. So a class below its minimum is served first (a flood from
//! above cannot hold it under), a lower class never takes a slot a higher
//! class's unused minimum needs (a flood from below cannot delay a higher
//! class within its minimum), and every other slot goes to the highest
//! class that waits. The test-only `model.rs` applies the same order.

use std::hash::Hash;

use super::{FairQueue, Grant, CLASSES};
use crate::priority::MinShares;
#[cfg(test)]
use crate::priority::Priority;

/// The class of a request that names none, by rank.
#[cfg(test)]
pub(crate) const DEFAULT_CLASS: u32 = Priority::Interactive.rank() as u32;

impl<T, K, P> FairQueue<T, K, P>
where
    K: Clone + Eq + Hash,
    P: Clone + Eq + Hash,
{
    /// Sets each class's minimum share; the next grant follows them.
    pub(crate) fn set_min_shares(&mut self, shares: MinShares) {
        self.min_shares = shares.by_rank();
        self.minimums = minimums(self.min_shares, self.ceilings.running_total);
    }

    /// The grant of `next_grant` once the total ceiling allows one: in the
    /// first class the module's order allows that has a grantable group.
    pub(super) fn grant_by_class(&mut self) -> Option<Grant<T>> {
        for c in 0..CLASSES {
            if self.below_minimum(c) && !self.rotation[c].is_empty() {
                if let Some(grant) = self.grant_in_turn(c) {
                    return Some(grant);
                }
            }
        }
        // A class whose groups all turned out blocked granted nothing and
        // changed no count, so the next class is judged on the same counts.
        for c in 0..CLASSES {
            if self.leaves_higher_minimums(c) && !self.rotation[c].is_empty() {
                if let Some(grant) = self.grant_in_turn(c) {
                    return Some(grant);
                }
            }
        }
        None
    }

    /// Whether [`Self::grant_by_class`] would grant in class `c` (by
    /// rank) when it is the only class with an eligible tenant.
    pub(super) fn class_may_grant_alone(&self, c: usize) -> bool {
        self.below_minimum(c) || self.leaves_higher_minimums(c)
    }

    /// Class `c` (by rank) runs fewer than its minimum.
    fn below_minimum(&self, c: usize) -> bool {
        self.class_running[c] < self.minimums[c]
    }

    /// A grant in class `c` (by rank) leaves the slots the higher classes'
    /// unused minimums need (minimum less running, when positive).
    fn leaves_higher_minimums(&self, c: usize) -> bool {
        let free = self.ceilings.running_total.saturating_sub(self.running);
        let reserved = (0..c).fold(0u32, |reserved, higher| {
            let unused = self.minimums[higher].saturating_sub(self.class_running[higher]);
            reserved.saturating_add(unused)
        });
        free > reserved
    }

    #[cfg(test)]
    /// Running grants of class `c` (by rank).
    pub(crate) fn class_running(&self, c: u32) -> u32 {
        self.class_running.get(c as usize).copied().unwrap_or(0)
    }
}

/// Each class's minimum in slots: its share (percent) of `running_total`,
/// rounded down.
pub(super) fn minimums(shares: [u8; CLASSES], running_total: u32) -> [u32; CLASSES] {
    shares.map(|share| {
        let slots = u64::from(running_total) * u64::from(share) / 100;
        u32::try_from(slots).unwrap_or(u32::MAX)
    })
}

#[cfg(test)]
mod tests;
