//! The synchronisation primitives of the engine's lock-free structures,
//! swapped for loom's in the crate's own tests under `--cfg loom`, so
//! that their model checks explore every interleaving and memory ordering
//! of the real code (loom is a dev-dependency: the library proper always
//! builds on `std`).
//!
//! Only structures with a model check import from here; everything else
//! uses `std` directly. The mailbox's slot pools and batched route live in
//! `provider-pools-mailbox`, whose own shim switches to loom in every
//! `--cfg loom` build, so the engine's models run on them too.

#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

/// The loom model runner, shared with the mailbox crate's models.
#[cfg(all(test, loom))]
pub(crate) use provider_pools_mailbox::loom_model as model;
