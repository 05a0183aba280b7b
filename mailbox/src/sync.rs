//! The synchronisation primitives of the crate's lock-free structures,
//! swapped for loom's in every `--cfg loom` build, so that model checks —
//! this crate's own and those of a crate built on it, such as the engine's
//! — explore every interleaving and memory ordering of the real code.
//!
//! A dependency is built without `cfg(test)`, so the switch is `cfg(loom)`
//! alone and loom is a (cfg-gated) dependency of the library itself.
//! Outside a loom build everything is `std` and tokio.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use tokio::sync::Notify;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
#[cfg(loom)]
mod loom_notify;
#[cfg(loom)]
pub(crate) use loom_notify::Notify;

/// Runs `body` under loom for every interleaving (within `preemptions`
/// preemptions when given, unless `LOOM_MODEL_UNBOUNDED` is set), and
/// prints how many it explored (RELIABILITY.md quotes these counts). The
/// engine's model checks run through it too.
#[cfg(loom)]
pub fn model(name: &str, preemptions: Option<usize>, body: impl Fn() + Sync + Send + 'static) {
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
