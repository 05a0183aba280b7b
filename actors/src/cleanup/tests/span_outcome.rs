//! The cleanup span's `outcome` field when a close panics: `panicked`. This
//! kills the mutant of the match guard that picks the label
//! (`cleanup/state.rs`, `e.is_panic()` replaced by `false`: a panic labelled
//! `dropped`), which the rest of the suite let survive (RELIABILITY.md,
//! "Mutation testing").
//!
//! The subscriber is this test thread's default only; the test runs on a
//! current-thread runtime, so the cleanup actor records on this thread.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use super::{fixture, Script};
use crate::observe::spans;
use crate::workers::testing::within;

/// Keeps the values recorded into the `outcome` field of cleanup spans.
#[derive(Clone, Default)]
struct Outcomes {
    next: Arc<AtomicU64>,
    cleanup_spans: Arc<Mutex<HashSet<u64>>>,
    recorded: Arc<Mutex<Vec<String>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Outcomes {
    fn recorded(&self) -> Vec<String> {
        lock(&self.recorded).clone()
    }
}

/// Collects the `outcome` field of one record.
struct Outcome<'a>(&'a mut Vec<String>);

impl Visit for Outcome<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "outcome" {
            self.0.push(value.to_owned());
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "outcome" {
            self.0.push(format!("{value:?}"));
        }
    }
}

impl Subscriber for Outcomes {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("provider_pools")
    }
    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        if attributes.metadata().name() == spans::CLEANUP {
            lock(&self.cleanup_spans).insert(id);
        }
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        if lock(&self.cleanup_spans).contains(&span.into_u64()) {
            values.record(&mut Outcome(&mut lock(&self.recorded)));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// A close that panics: its span's outcome is `panicked`.
#[tokio::test]
async fn a_close_that_panics_is_labelled_panicked() {
    let outcomes = Outcomes::default();
    let _default = tracing::subscriber::set_default(outcomes.clone());
    // A callsite another test registered while this dispatcher was being
    // set up may have cached its interest without it: recompute them all.
    tracing::callsite::rebuild_interest_cache();
    let f = fixture(1).await;
    let ticket = f.submit("bad", Script::Panic);
    within("panicking cleanup", ticket.outcome())
        .await
        .expect("gone");
    // Idle once the actor joined the task and recorded its outcome.
    f.idle().await;
    assert_eq!(outcomes.recorded(), ["panicked"]);
}
