//! Priority classes: the class a request is served in, and the minimum
//! share of the running slots each class keeps.
//!
//! A plan carries its class ([`ExecutionPlan::with_priority`]); the
//! registry's admission queue serves the highest class first, and keeps
//! for each class its minimum share ([`MinShares`], one per registry):
//!
//! - A class running fewer slots than its minimum, with requests waiting,
//!   is served before every other class: a flood from above cannot take
//!   its minimum.
//! - A lower class never takes a slot that would leave a higher class's
//!   unused minimum short: a higher class's request finds its minimum free
//!   whatever floods from below.
//! - Every other slot is borrowed by whichever class waits, highest first,
//!   both ways.
//!
//! Ceilings, rates, deadlines, weights and the fairness policy apply
//! within and across classes unchanged: a class is one more choice made
//! before the fairness policy chooses a tenant. See
//! docs/decisions/0099-priority-classes-with-minimum-shares.md.
//!
//! [`ExecutionPlan::with_priority`]: crate::ExecutionPlan::with_priority

use std::fmt;

/// The priority class of a request: higher classes are served first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// The embedding runtime's own traffic: served before every other.
    System,
    /// Requests a user waits on. Every plan's class unless it says
    /// otherwise.
    #[default]
    Interactive,
    /// Work nobody waits on: served last, but keeps its minimum share.
    Batch,
}

impl Priority {
    /// Every class, highest first.
    pub const ALL: [Priority; CLASSES] = [Priority::System, Priority::Interactive, Priority::Batch];

    /// The class's rank, 0 for the highest.
    pub(crate) const fn rank(self) -> usize {
        match self {
            Priority::System => 0,
            Priority::Interactive => 1,
            Priority::Batch => 2,
        }
    }

    /// The class's name in metrics and messages.
    pub const fn name(self) -> &'static str {
        match self {
            Priority::System => "system",
            Priority::Interactive => "interactive",
            Priority::Batch => "batch",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How many priority classes there are.
pub(crate) const CLASSES: usize = 3;

/// Each class's minimum share of the registry's running slots
/// (`Limits::running_total`), in percent, rounded down to whole slots.
/// A share is both a floor (the class is served first while below it)
/// and, for the classes below it, a reservation (they never take a slot
/// that would leave it short).
///
/// # Examples
///
/// ```
/// use provider_pools_actors::{MinShares, MinSharesError, Priority};
///
/// // Batch keeps a tenth of the slots; interactive a half, which batch
/// // never borrows while interactive does not use it.
/// let shares = MinShares::new([0, 50, 10])?;
/// assert_eq!(shares.percent(Priority::Interactive), 50);
///
/// let over = MinShares::new([30, 50, 30]);
/// assert_eq!(over, Err(MinSharesError::OverHundred { sum: 110 }));
/// # Ok::<(), MinSharesError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MinShares([u8; CLASSES]);

impl MinShares {
    /// Batch keeps a tenth of the running slots; system and interactive
    /// reserve nothing, so with one class in use every slot is its own.
    pub const DEFAULT: MinShares = MinShares([0, 0, 10]);

    /// No minimum: strict priority, every slot borrowed.
    pub const NONE: MinShares = MinShares([0; CLASSES]);

    /// The shares of system, interactive and batch, in that order, in
    /// percent; refused when they add up to more than 100.
    pub fn new(percent: [u8; CLASSES]) -> Result<Self, MinSharesError> {
        let sum: u32 = percent.iter().map(|&p| u32::from(p)).sum();
        if sum > 100 {
            return Err(MinSharesError::OverHundred { sum });
        }
        Ok(Self(percent))
    }

    /// `class`'s share, in percent.
    pub fn percent(&self, class: Priority) -> u8 {
        self.0[class.rank()]
    }

    /// Every class's share in percent, by rank.
    pub(crate) fn by_rank(&self) -> [u8; CLASSES] {
        self.0
    }
}

impl Default for MinShares {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Why [`MinShares::new`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MinSharesError {
    /// The shares add up to more than every slot.
    #[error("minimum shares add up to {sum} %, over 100 %")]
    OverHundred {
        /// Their sum, in percent.
        sum: u32,
    },
}
