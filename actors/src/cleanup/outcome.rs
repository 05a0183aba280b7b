//! What a submitter gets back: a refusal that returns everything at once
//! ([`CleanupRefused`]), a ticket for an accepted cleanup
//! ([`CleanupTicket`]), and a failure that still owns the resource and its
//! charge ([`CleanupFailed`]).

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::accounts::Accounts;
use crate::budget::Exhausted;

/// Why a cleanup was not accepted.
///
/// Callers and metrics match on [`CleanupError::code`], which never changes
/// for a variant; messages may be reworded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CleanupError {
    /// Every cleanup slot is taken (running, or held by a failure whose
    /// ticket was dropped); nothing waits for one.
    #[error("capacity exhausted: {resource} has {used} of {limit} in use")]
    Capacity {
        /// `cleanup_jobs`.
        resource: &'static str,
        /// Use when refused.
        used: u32,
        /// The limit in force.
        limit: u32,
    },
    /// No release slot was left in the cleanup actor's mailbox.
    #[error("the cleanup actor is busy")]
    Busy,
    /// The cleanup pool is closed, or its actor has stopped.
    #[error("the cleanup pool is closed")]
    Closed,
}

impl CleanupError {
    /// The stable code of this error: `capacity`, `busy` or `closed`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Capacity { .. } => "capacity",
            Self::Busy => "busy",
            Self::Closed => "closed",
        }
    }
}

impl From<Exhausted> for CleanupError {
    fn from(e: Exhausted) -> Self {
        Self::Capacity {
            resource: e.resource,
            used: e.used,
            limit: e.limit,
        }
    }
}

/// A submission refused at once: the resource and its charge, untouched.
pub struct CleanupRefused<T> {
    /// The resource, still owned by the caller.
    pub resource: T,
    /// Its charge, still held: drop it only after destroying the resource.
    pub charge: Box<dyn Send>,
    /// Why the cleanup was refused.
    pub error: CleanupError,
}

impl<T> fmt::Debug for CleanupRefused<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CleanupRefused")
            .field("resource", &std::any::type_name::<T>())
            .field("error", &self.error)
            .finish()
    }
}

/// Counts one failed, still-owned resource in `failed_cleanup` while alive.
pub(crate) struct FailedCount {
    accounts: Arc<Accounts>,
}

impl FailedCount {
    pub(crate) fn new(accounts: Arc<Accounts>) -> Self {
        accounts
            .gauges
            .failed_cleanup
            .fetch_add(1, Ordering::AcqRel);
        Self { accounts }
    }
}

impl Drop for FailedCount {
    fn drop(&mut self) {
        self.accounts
            .gauges
            .failed_cleanup
            .fetch_sub(1, Ordering::AcqRel);
    }
}

/// A close that failed: the resource, still owned and still charged.
///
/// While this value exists it is counted in the snapshot's
/// `failed_cleanup`. Dropping it destroys the resource (by its `Drop`),
/// then releases the charge, then stops counting it. For explicit
/// recovery, inspect or repair the resource in place and resubmit it, or
/// take it apart with [`CleanupFailed::into_parts`].
#[must_use = "dropping a failed cleanup drops the resource, then releases its charge"]
pub struct CleanupFailed<T> {
    // Field order is drop order: the resource, then its charge, then the count.
    resource: T,
    charge: Box<dyn Send>,
    reason: String,
    _counted: FailedCount,
}

impl<T> CleanupFailed<T> {
    pub(crate) fn new(
        resource: T,
        charge: Box<dyn Send>,
        reason: String,
        accounts: Arc<Accounts>,
    ) -> Self {
        Self {
            resource,
            charge,
            reason,
            _counted: FailedCount::new(accounts),
        }
    }

    /// Why the close failed.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The resource that could not be destroyed.
    pub fn resource(&self) -> &T {
        &self.resource
    }

    /// The resource, for repair before it is resubmitted.
    pub fn resource_mut(&mut self) -> &mut T {
        &mut self.resource
    }

    /// Takes the resource and its charge out; the failure is no longer
    /// counted. The caller then owns both and must destroy the resource
    /// before dropping the charge.
    pub fn into_parts(self) -> (T, Box<dyn Send>) {
        let Self {
            resource, charge, ..
        } = self;
        (resource, charge)
    }
}

impl<T> fmt::Debug for CleanupFailed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CleanupFailed")
            .field("resource", &std::any::type_name::<T>())
            .field("reason", &self.reason)
            .finish()
    }
}

/// A failure nobody waits for any more, kept by the cleanup actor.
pub(crate) struct Orphan {
    _failed: Box<dyn Send>,
}

impl Orphan {
    pub(crate) fn new<T: Send + 'static>(failed: CleanupFailed<T>) -> Self {
        Self {
            _failed: Box::new(failed),
        }
    }
}

/// The claim on an accepted cleanup's outcome.
///
/// Dropping it never aborts the cleanup. If the close then fails, the
/// still-owned resource and its charge stay in the cleanup actor, counted
/// in `failed_cleanup` and keeping their cleanup slot, until shutdown
/// destroys them: the pools never retry and never refund a failed close.
#[must_use = "dropping a ticket does not stop the cleanup; a failure it would carry stays charged"]
pub struct CleanupTicket<T> {
    rx: oneshot::Receiver<Result<(), CleanupFailed<T>>>,
}

impl<T> CleanupTicket<T> {
    pub(crate) fn new(rx: oneshot::Receiver<Result<(), CleanupFailed<T>>>) -> Self {
        Self { rx }
    }

    /// Waits for the cleanup to end.
    ///
    /// `Ok(())` means the resource no longer exists and its charge was
    /// released after it: it was closed — or, if its close panicked or the
    /// runtime shut down mid-close, dropped.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the ticket: the cleanup goes on. A failure
    /// already delivered to the ticket is dropped with it (the resource
    /// first, then its charge); a later one stays with the cleanup actor.
    ///
    /// # Errors
    ///
    /// [`CleanupFailed`] when the close failed: the resource and its charge
    /// come back, still owned.
    pub async fn outcome(self) -> Result<(), CleanupFailed<T>> {
        self.rx.await.unwrap_or(Ok(()))
    }
}

impl<T> fmt::Debug for CleanupTicket<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CleanupTicket")
            .field("resource", &std::any::type_name::<T>())
            .finish()
    }
}
