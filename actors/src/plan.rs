//! The sealed execution plan the embedding runtime supplies with every
//! request: who asks (tenant, session, ledger), until when (the Store and
//! I/O deadlines) and in which priority class.
//!
//! Invariants:
//! - A plan is immutable once sealed; no stage of the pools resets its
//!   deadlines.
//! - The tenant of a request is always the plan's, never the caller's claim.
//! - A deadline reads back exactly as it was sealed when it lies within
//!   292 years of the process's origin; one further away reads as that far
//!   (record 0107). A plan keeps each deadline in eight bytes (a
//!   [`Moment`]), so that a plan, and every waiter and request carrying
//!   one, stays small.

use std::fmt;

use tokio::time::Instant;

use crate::identity::TenantId;
use crate::moment::Moment;
use crate::priority::Priority;

/// One activation's session, as the embedding runtime numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(u64);

impl SessionId {
    /// The session numbered `value`.
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The session's number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// The ledger an activation's effects are recorded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LedgerId(u64);

impl LedgerId {
    /// The ledger numbered `value`.
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The ledger's number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// The sealed execution plan of one activation.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use provider_pools_actors::{ExecutionPlan, LedgerId, SessionId};
/// use provider_pools_actors::TenantId;
/// use tokio::time::Instant;
///
/// let now = Instant::now();
/// let plan = ExecutionPlan::seal(
///     TenantId::new("acme")?,
///     SessionId::new(7),
///     LedgerId::new(1),
///     now + Duration::from_secs(30),
///     now + Duration::from_secs(2),
/// );
/// assert_eq!(plan.earliest_deadline(), now + Duration::from_secs(2));
/// # Ok::<(), provider_pools_actors::IdentityError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ExecutionPlan {
    tenant: TenantId,
    session: SessionId,
    ledger: LedgerId,
    store_deadline: Moment,
    io_deadline: Moment,
    priority: Priority,
}

impl ExecutionPlan {
    /// Seals a plan in the [`Priority::Interactive`] class; nothing can
    /// change it afterwards.
    pub fn seal(
        tenant: TenantId,
        session: SessionId,
        ledger: LedgerId,
        store_deadline: Instant,
        io_deadline: Instant,
    ) -> Self {
        Self {
            tenant,
            session,
            ledger,
            store_deadline: Moment::of(store_deadline),
            io_deadline: Moment::of(io_deadline),
            priority: Priority::default(),
        }
    }

    /// The same plan in priority class `priority`: its requests are
    /// served in that class (see [`Priority`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use provider_pools_actors::{ExecutionPlan, LedgerId, Priority, SessionId, TenantId};
    /// use tokio::time::Instant;
    ///
    /// let deadline = Instant::now() + Duration::from_secs(2);
    /// let tenant = TenantId::new("acme")?;
    /// let plan = ExecutionPlan::seal(tenant, SessionId::new(7), LedgerId::new(1), deadline, deadline)
    ///     .with_priority(Priority::Batch);
    /// assert_eq!(plan.priority(), Priority::Batch);
    /// # Ok::<(), provider_pools_actors::IdentityError>(())
    /// ```
    #[must_use]
    pub fn with_priority(self, priority: Priority) -> Self {
        Self { priority, ..self }
    }

    /// The priority class its requests are served in.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// The tenant every request of this plan is charged to.
    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    /// The activation's session.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The activation's ledger.
    pub fn ledger(&self) -> LedgerId {
        self.ledger
    }

    /// The Store deadline.
    pub fn store_deadline(&self) -> Instant {
        self.store_deadline.instant()
    }

    /// The I/O deadline.
    pub fn io_deadline(&self) -> Instant {
        self.io_deadline.instant()
    }

    /// The earlier of the Store and I/O deadlines.
    pub fn earliest_deadline(&self) -> Instant {
        self.store_deadline.min(self.io_deadline).instant()
    }
}

impl fmt::Debug for ExecutionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutionPlan")
            .field("tenant", &self.tenant)
            .field("session", &self.session.0)
            .field("ledger", &self.ledger.0)
            .field("priority", &self.priority)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
