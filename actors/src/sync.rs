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
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// Runs `body` under loom for every interleaving (within `preemptions`
/// preemptions when given, unless `LOOM_MODEL_UNBOUNDED` is set), and
/// prints how many it explored (RELIABILITY.md quotes these counts).
#[cfg(all(test, loom))]
pub(crate) fn model(
    name: &str,
    preemptions: Option<usize>,
    body: impl Fn() + Sync + Send + 'static,
) {
    let preemptions = preemptions.filter(|_| std::env::var_os("LOOM_MODEL_UNBOUNDED").is_none());
    let explored = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&explored);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = preemptions;
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        body();
    });
    eprintln!(
        "loom model {name}: {} interleavings (preemption bound {preemptions:?})",
        explored.load(std::sync::atomic::Ordering::Relaxed)
    );
}
