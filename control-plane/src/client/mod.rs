//! [`ControlPlane`]: the one client trait every backend implements —
//! in-memory, file, offline, HTTP and etcd.
//!
//! Semantics every backend keeps (the conformance suite checks them):
//! - `register` creates or replaces the instance `(service, node)` for its
//!   time to live; `heartbeat` extends a live one by its time to live and
//!   answers [`NotRegistered`](ControlPlaneError::NotRegistered) once it
//!   expired; `deregister` is idempotent; `discover` lists live instances of
//!   one service, ordered by node.
//! - `acquire` grants a free or expired lease with the next fencing token,
//!   re-grants a lease its holder still holds with the same token, and
//!   refuses a lease held by another with
//!   [`LeaseHeld`](ControlPlaneError::LeaseHeld).
//! - `renew` extends a live lease held with that token, else
//!   [`LeaseLost`](ControlPlaneError::LeaseLost); `release` frees it, else
//!   `LeaseLost`; a released or expired lease keeps its last token.
//! - A lease mutation that may have applied without an answer returns
//!   [`OutcomeUnknown`](ControlPlaneError::OutcomeUnknown); settle it with
//!   [`read_lease`](ControlPlane::read_lease) (see [`settle`]).
//!
//! Built on the trait: [`settle`] reads a lease back, and
//! [`acquire_guarded`] and [`renew_guarded`] wrap a grant in a
//! [`LeadershipGuard`](crate::LeadershipGuard), settling an unknown outcome
//! by reading back, never by replaying.

mod settle;

use std::fmt;
use std::sync::Arc;

use crate::error::ControlPlaneError;
use crate::lease::{LeaseGrant, LeaseKey, LeaseRequest, LeaseState};
use crate::name::ServiceGroup;
use crate::presence::{PresenceKey, Registration};

pub use crate::future::BoxFuture;
pub use settle::{acquire_guarded, renew_guarded, settle, Settled};

/// The result of a control-plane call.
pub type CallResult<T> = Result<T, ControlPlaneError>;

/// Presence, heartbeat, discovery and leases, whatever the backend.
///
/// # Cancel safety
///
/// Dropping a call's future before the backend started it means it never
/// runs. Once started, dropping it cannot undo a remote effect: a lease
/// mutation dropped mid-flight is settled like an unknown outcome, by
/// [`read_lease`](ControlPlane::read_lease).
pub trait ControlPlane: Send + Sync + fmt::Debug {
    /// Registers (or replaces) an instance of a service for its time to live.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the backend started the call means it
    /// never runs. Once started, a dropped call may have applied; registering
    /// again is harmless (it replaces the same instance).
    ///
    /// # Errors
    ///
    /// `LimitExceeded` when the store is full (a replacement that does not
    /// fit leaves the previous registration unchanged), `Offline`, `Timeout`,
    /// `Transport`, `Status` and the backend's own.
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>>;

    /// Extends a live registration by its time to live.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the backend started the call means it
    /// never runs. Once started, a dropped heartbeat may have extended the
    /// registration; the next one is harmless.
    ///
    /// # Errors
    ///
    /// `NotRegistered` when unknown or expired; transport errors.
    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>>;

    /// Removes a registration; removing an absent one succeeds.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the backend started the call means it
    /// never runs. Once started, a dropped call may have removed the
    /// registration; deregistering again is harmless (idempotent).
    ///
    /// # Errors
    ///
    /// Transport and backend errors.
    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>>;

    /// The live instances of a service, ordered by node.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    ///
    /// # Errors
    ///
    /// Transport and backend errors.
    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>>;

    /// Acquires a lease, or re-grants it to its live holder.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the backend started the call means it
    /// never runs. Once started, a dropped acquire may have granted the
    /// lease: settle it with [`read_lease`](ControlPlane::read_lease) (see
    /// [`settle`]); an unsettled grant expires after its time
    /// to live.
    ///
    /// # Errors
    ///
    /// `LeaseHeld` when another node holds it, `EpochExhausted`, `Overflow`,
    /// `LimitExceeded`, `OutcomeUnknown` (settle by reading back), transport
    /// errors.
    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>>;

    /// Extends a held lease by the grant's time to live; the token stays.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the backend started the call means it
    /// never runs. Once started, a dropped renewal may have applied; count
    /// on it only as far as [`read_lease`](ControlPlane::read_lease) shows.
    ///
    /// # Errors
    ///
    /// `LeaseLost` when not held with that token or expired, `Overflow`,
    /// `OutcomeUnknown`, transport errors.
    fn renew(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>>;

    /// Releases a held lease; its token is kept for the next acquisition.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before the backend started the call means it
    /// never runs. Once started, a dropped release may have freed the
    /// lease; stop acting as its holder either way.
    ///
    /// # Errors
    ///
    /// `LeaseLost` when not held with that token, `OutcomeUnknown`,
    /// transport errors.
    fn release(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<()>>;

    /// The lease as it stands: `None` if it was never acquired.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    ///
    /// # Errors
    ///
    /// Transport and backend errors.
    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>>;
}

impl<T: ControlPlane + ?Sized> ControlPlane for Arc<T> {
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>> {
        (**self).register(registration)
    }

    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        (**self).heartbeat(key)
    }

    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        (**self).deregister(key)
    }

    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        (**self).discover(service)
    }

    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        (**self).acquire(request)
    }

    fn renew(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        (**self).renew(grant)
    }

    fn release(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        (**self).release(grant)
    }

    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        (**self).read_lease(key)
    }
}
