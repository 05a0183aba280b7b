//! The stable span names and field names of the engine.
//!
//! Each constant is the exact name a subscriber sees;
//! `docs/architecture/observability.md` has the same table ("Tracing
//! spans"). Outcome fields are recorded once, when the
//! phase ends, as a stable `&'static str` code.

/// One admission (`debug`): `tenant`, `provider`, `slot` (the origin slot
/// number), `epoch` (the leased epoch, recorded once a client is leased),
/// `outcome` ([`ADMITTED`](crate::AdmissionEvent::ADMITTED), [`CANCELLED`](crate::AdmissionEvent::CANCELLED)
/// or an [`AdmitError::code`](crate::AdmitError::code)) and `wait_us` (µs
/// from the call to the outcome).
pub const ADMIT: &str = "pools.admit";

/// One dispatch decision (`debug`): `provider`, `epoch` (the bound epoch, or
/// 0 when none) and `outcome` (`dispatched` or an `AdmitError::code`).
pub const DISPATCH: &str = "pools.dispatch";

/// One dial attempt (`debug`), in the caller's task: `provider`, `epoch`,
/// `client` (the client's index in its epoch), `outcome` (`connected`, or a
/// [`DialErrorKind::name`](crate::DialErrorKind::name): `cancelled` when the
/// dial was dropped, e.g. at the deadline), and — recorded by the epoch
/// actor that owns the backoff, after a failure — `failures` (consecutive)
/// and `backoff_ms` (the window now in force). The span closes once the
/// epoch actor has applied the outcome.
pub const DIAL: &str = "pools.dial";

/// One cleanup job (`debug`): `cleanup` (the job's number) and `outcome`
/// (`closed`, `failed`, `panicked` or `dropped`).
pub const CLEANUP: &str = "pools.cleanup";

/// One shutdown (`info`): `outcome` (`clean` or `unclean`: whether the final
/// snapshot is clean).
pub const SHUTDOWN: &str = "pools.shutdown";

/// One shutdown phase (`info`), a child of [`SHUTDOWN`]: `phase` (`retire`,
/// `workers`, `cleanup`, `registry`, in that order) and `outcome`: `done`;
/// `timeout` at the deadline; `closed` when the registry was already gone
/// (`retire`); `stopped` when the pool had already been stopped by the
/// registry because nothing was left (`workers`, `cleanup`); `busy` when
/// the pool had no room for another waiter.
pub const SHUTDOWN_PHASE: &str = "pools.shutdown.phase";
