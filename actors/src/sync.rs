//! The synchronisation primitives of the engine's lock-free structures,
//! swapped for loom's in the crate's own tests under `--cfg pools_loom`, so
//! that their model checks explore every interleaving and memory ordering
//! of the real code (loom is a dev-dependency: the library proper always
//! builds on `std`).
//!
//! Only structures with a model check import from here; everything else
//! uses `std` directly.

#[cfg(not(all(test, pools_loom)))]
pub(crate) use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(all(test, pools_loom)))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(all(test, pools_loom))]
pub(crate) use loom::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
#[cfg(all(test, pools_loom))]
pub(crate) use loom::sync::{Mutex, MutexGuard};
