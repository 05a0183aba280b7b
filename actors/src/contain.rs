//! Destroying adapter values inside a control actor without letting them
//! stop it.
//!
//! The control owners (registry, scheduler, worker pool, cleanup) sometimes
//! end up owning what an adapter built: a refused job's captures, a kept
//! failed close, a stopped epoch actor's idle connections. Their
//! destructors are adapter code, and a panic there must not fail the
//! control owner — that would close admission for every tenant. Rust's
//! drop glue keeps dropping the remaining fields while a destructor
//! unwinds, so a connection's charges are still released after it.
//!
//! Invariant: a destructor that panics inside a control actor is reported,
//! never propagated.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Drops `value` here, containing a panicking destructor; `what` names it
/// in the report.
pub(crate) fn drop_contained<T>(value: T, what: &'static str) {
    if catch_unwind(AssertUnwindSafe(move || drop(value))).is_err() {
        tracing::error!(
            what,
            "a destructor panicked inside a control actor; contained"
        );
    }
}
