//! Lock-free budgets shared by several owners.
//!
//! A [`Budget`] is a counter with a ceiling that several actors, handles and
//! callers' tasks may charge without a message hop: the node-wide retained
//! configurations, configured clients, metadata bytes, connections and idle
//! connections (held by the accounts); a logical provider's clients across all
//! of its retained epochs; one client's connections; the provider workers and
//! the cleanup jobs; and each tenant's shares of the metadata, the workers and
//! the admission path (`tenants`). A budget made waitable also lets a caller
//! wait, up to a deadline, for a release.
//!
//! Only counts with a ceiling belong here. The admission queue, its choices
//! and its per-group counts live in the scheduler's core, applied by
//! whichever task owns it at the moment (see `scheduler`).
//!
//! Invariants:
//! - `used <= limit` at every instant: the limit and the use share one atomic
//!   word, so a reservation and a lowering can never interleave into an overrun.
//! - A reservation is an owned [`Charge`]; the only way to return capacity is to
//!   drop the charge, which its owner does after destroying what it paid for.
//! - Lowering never erases a reservation: it fails while `used > new limit`.
//! - A release racing a waiter of a waitable budget wakes it, or the
//!   waiter's next attempt finds the released room (model-checked): both
//!   touch the one word, and every write of the word is a
//!   read-modify-write, so whichever touch comes later sees the other.

use std::fmt;
use std::sync::Arc;

use crate::sync::{AtomicU64, AtomicUsize, Ordering};

/// A counted resource with a ceiling, charged lock-free.
///
/// The limit occupies the high 32 bits of one atomic word and the use the low
/// 32 bits, so every check-and-reserve is a single compare-and-swap.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub, dead_code))]
pub struct Budget {
    name: &'static str,
    word: AtomicU64,
    /// Woken on a release while a caller waits, for budgets a caller may
    /// wait on.
    freed: Option<Freed>,
}

/// A waitable budget's waiters: their count, and the wake-up a release
/// sends while the count is not zero.
///
/// A waiter counts itself, then touches the budget's word with a
/// read-modify-write that changes nothing, then looks at the use; a
/// release returns its amount with a read-modify-write of the same word,
/// then looks at the count. The word's one modification order puts the two
/// touches in some order: a release after the waiter's synchronizes with it
/// and sees the count, and a release before it left its room for the
/// waiter's look. Either way one side sees the other, with no fence on the
/// release's path (a wake-up sent before the waiter registers is kept for
/// it).
struct Freed {
    notify: tokio::sync::Notify,
    waiting: AtomicUsize,
}

impl Freed {
    fn new() -> Self {
        Self {
            notify: tokio::sync::Notify::new(),
            waiting: AtomicUsize::new(0),
        }
    }

    /// After a release (whose read-modify-write of the word acquired any
    /// waiter's touch before it): wakes one waiter if any is counted.
    fn released(&self) {
        if self.waiting.load(Ordering::Acquire) != 0 {
            self.notify.notify_one();
        }
    }
}

/// One counted waiter of a [`Freed`].
struct Waiter<'a>(&'a Freed);

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The budget had no room for a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{resource} budget exhausted: {used} of {limit} in use, {requested} more requested")]
pub struct Exhausted {
    /// Which budget refused.
    pub resource: &'static str,
    /// Amount in use when the reservation was refused.
    pub used: u32,
    /// The budget's current limit.
    pub limit: u32,
    /// Amount the refused reservation asked for.
    pub requested: u32,
}

/// Lowering a budget below its current use was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{resource} cannot be lowered to {requested}: {used} in use")]
pub struct InUse {
    /// Which budget refused.
    pub resource: &'static str,
    /// Amount in use.
    pub used: u32,
    /// The refused new limit.
    pub requested: u32,
}

const USED_MASK: u64 = u32::MAX as u64;

fn pack(limit: u32, used: u32) -> u64 {
    (u64::from(limit) << 32) | u64::from(used)
}

fn unpack(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, (word & USED_MASK) as u32)
}

#[cfg_attr(not(feature = "testing"), allow(unreachable_pub, dead_code))]
impl Budget {
    /// Creates an empty budget named `name` (the name appears in errors).
    pub fn new(name: &'static str, limit: u32) -> Arc<Self> {
        Arc::new(Self {
            name,
            word: AtomicU64::new(pack(limit, 0)),
            freed: None,
        })
    }

    /// Creates an empty budget that callers may also wait on
    /// ([`Budget::reserve_within`]): a release wakes one waiter, when
    /// anyone waits.
    pub(crate) fn waitable(name: &'static str, limit: u32) -> Arc<Self> {
        Arc::new(Self {
            name,
            word: AtomicU64::new(pack(limit, 0)),
            freed: Some(Freed::new()),
        })
    }

    /// Counts a waiter on `freed`, this budget's, until the returned guard
    /// drops, and publishes the count before the waiter's next look at the
    /// use: the read-modify-write below heads a release sequence that every
    /// later release's read-modify-write of the word acquires.
    fn count_waiter<'a>(&self, freed: &'a Freed) -> Waiter<'a> {
        freed.waiting.fetch_add(1, Ordering::Relaxed);
        self.word.fetch_add(0, Ordering::Release);
        Waiter(freed)
    }

    /// Reserves `amount`, waiting for releases until `deadline` (at once for
    /// a budget not made [`Budget::waitable`]). A charge made at once keeps
    /// the reference given (no count taken or dropped), as
    /// [`Budget::try_reserve_owned`] does.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: nothing is reserved until it returns `Ok`, and a wake-up
    /// the dropped future had received passes to the next waiter.
    ///
    /// # Errors
    ///
    /// The last [`Exhausted`] seen when `deadline` passes first.
    pub(crate) async fn reserve_within(
        self: Arc<Self>,
        amount: u32,
        deadline: tokio::time::Instant,
    ) -> Result<Charge, Exhausted> {
        // A budget with room answers without registering as a waiter.
        let refused = match self.reserve(amount) {
            Ok(()) => {
                return Ok(Charge {
                    budget: Some(self),
                    amount,
                })
            }
            Err(refused) => refused,
        };
        let Some(freed) = &self.freed else {
            return Err(refused);
        };
        // Counted before the attempts below, so a release after one of
        // them wakes this waiter.
        let _waiter = self.count_waiter(freed);
        loop {
            // Registered before the attempt, so a release between a refusal
            // and the wait still wakes this waiter.
            let notified = freed.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            match self.try_reserve(amount) {
                Ok(charge) => return Ok(charge),
                Err(refused) => {
                    if tokio::time::timeout_at(deadline, notified).await.is_err() {
                        return Err(refused);
                    }
                }
            }
        }
    }

    /// The budget's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Amount currently reserved.
    pub fn used(&self) -> u32 {
        unpack(self.word.load(Ordering::Acquire)).1
    }

    /// The current limit.
    pub fn limit(&self) -> u32 {
        unpack(self.word.load(Ordering::Acquire)).0
    }

    /// Reserves `amount`, or refuses at once without waiting.
    ///
    /// A zero amount always succeeds and returns an empty charge.
    ///
    /// # Errors
    ///
    /// [`Exhausted`] when `used + amount` would exceed the limit.
    pub fn try_reserve(self: &Arc<Self>, amount: u32) -> Result<Charge, Exhausted> {
        self.reserve(amount)?;
        Ok(Charge {
            budget: Some(Arc::clone(self)),
            amount,
        })
    }

    /// [`Budget::try_reserve`] on a budget the caller already holds a
    /// reference to, which the charge then keeps (no count taken or
    /// dropped).
    ///
    /// # Errors
    ///
    /// [`Exhausted`] when `used + amount` would exceed the limit.
    pub(crate) fn try_reserve_owned(self: Arc<Self>, amount: u32) -> Result<Charge, Exhausted> {
        self.reserve(amount)?;
        Ok(Charge {
            budget: Some(self),
            amount,
        })
    }

    /// Adds `amount` to the use, or refuses.
    fn reserve(&self, amount: u32) -> Result<(), Exhausted> {
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let (limit, used) = unpack(current);
            let next = match used.checked_add(amount) {
                Some(next) if next <= limit => next,
                _ => {
                    return Err(Exhausted {
                        resource: self.name,
                        used,
                        limit,
                        requested: amount,
                    })
                }
            };
            match self.word.compare_exchange_weak(
                current,
                pack(limit, next),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => current = actual,
            }
        }
    }

    /// Sets a new limit, refusing while more than `limit` is reserved.
    ///
    /// Raising is allowed here; whether a caller may raise is its own policy.
    ///
    /// # Errors
    ///
    /// [`InUse`] when the current use exceeds `limit`; the old limit stays.
    pub fn set_limit(&self, limit: u32) -> Result<(), InUse> {
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let (_, used) = unpack(current);
            if used > limit {
                return Err(InUse {
                    resource: self.name,
                    used,
                    requested: limit,
                });
            }
            match self.word.compare_exchange_weak(
                current,
                pack(limit, used),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => current = actual,
            }
        }
    }

    fn release(&self, amount: u32) {
        // Releases only ever return what a charge reserved, so `used >= amount`
        // holds; the subtraction is on the low half and cannot borrow from the
        // limit.
        self.word.fetch_sub(u64::from(amount), Ordering::AcqRel);
        if let Some(freed) = &self.freed {
            freed.released();
        }
    }
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (limit, used) = unpack(self.word.load(Ordering::Acquire));
        f.debug_struct("Budget")
            .field("name", &self.name)
            .field("used", &used)
            .field("limit", &limit)
            .finish()
    }
}

/// An owned reservation on a [`Budget`], returned when dropped.
///
/// Its owner drops it only after the resource it paid for is destroyed.
#[must_use = "dropping a charge returns its capacity at once"]
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub, dead_code))]
pub struct Charge {
    budget: Option<Arc<Budget>>,
    amount: u32,
}

#[cfg_attr(not(feature = "testing"), allow(unreachable_pub, dead_code))]
impl Charge {
    /// The amount this charge holds.
    pub fn amount(&self) -> u32 {
        self.amount
    }

    /// The budget this charge is on (none for an [`empty`](Self::empty)
    /// charge).
    pub(crate) fn budget(&self) -> Option<&Arc<Budget>> {
        self.budget.as_ref()
    }

    /// A charge of nothing, on no budget, to [`absorb`](Self::absorb) into.
    pub(crate) fn empty() -> Self {
        Self {
            budget: None,
            amount: 0,
        }
    }

    /// Adds `other`, which must come from the same budget as `self` (or
    /// `self` is [`empty`](Self::empty)), to this charge: both are returned
    /// together when `self` drops.
    pub(crate) fn absorb(&mut self, mut other: Charge) {
        debug_assert!(match (&self.budget, &other.budget) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => true,
        });
        if self.budget.is_none() {
            self.budget = other.budget.take();
        } else {
            other.budget = None;
        }
        self.amount = self.amount.saturating_add(other.amount);
    }

    /// Returns the amount now and hands back the reference to its budget,
    /// to charge that budget again later ([`Budget::try_reserve_owned`])
    /// without taking or dropping a reference count.
    pub(crate) fn into_budget(mut self) -> Option<Arc<Budget>> {
        let budget = self.budget.take()?;
        budget.release(self.amount);
        Some(budget)
    }

    /// Moves `amount` out of this charge into a new one (for example to hand
    /// part of a reservation to another owner).
    ///
    /// Returns `None`, leaving `self` unchanged, if `amount` exceeds what this
    /// charge holds.
    pub fn split(&mut self, amount: u32) -> Option<Charge> {
        let rest = self.amount.checked_sub(amount)?;
        self.amount = rest;
        Some(Charge {
            budget: self.budget.clone(),
            amount,
        })
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(budget) = self.budget.take() {
            budget.release(self.amount);
        }
    }
}

impl fmt::Debug for Charge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.budget.as_ref().map_or("", |b| b.name);
        f.debug_struct("Charge")
            .field("budget", &name)
            .field("amount", &self.amount)
            .finish()
    }
}

#[cfg(test)]
mod tests;

#[cfg(all(test, loom))]
mod loom_model;
