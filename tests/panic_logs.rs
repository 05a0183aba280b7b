//! A panic in provider code is logged as a warning, which an operator must
//! hear about (the adapter or provider has a bug): a close that panics (the
//! resource was dropped before its charge) and a worker job that panics. A
//! task the runtime merely dropped is a debug line; the two must not swap
//! (RELIABILITY.md "Mutation testing": the join-error arms of
//! `cleanup/state.rs` and `workers/state.rs`).
//!
//! The events go to a process-wide subscriber, installed once for this
//! binary: tracing caches each callsite's interest process-wide, so a
//! thread-local subscriber next to other tests on other threads could miss
//! an event. The tests share it; each looks only at its own messages.
//! Paused clock, no I/O.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use provider_pools::{Cleanup, CloseFailure, DialError, DialTarget, Dialer, Limits};
use support::{bounded, running, start, with_mem};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event of the engine: its level and message.
type Seen = Arc<Mutex<Vec<(Level, String)>>>;

/// The events of the engine so far, from the subscriber installed on
/// first use.
fn seen() -> Vec<(Level, String)> {
    static SEEN: OnceLock<Seen> = OnceLock::new();
    let seen = SEEN.get_or_init(|| {
        let seen = Seen::default();
        tracing::subscriber::set_global_default(Capture {
            seen: Arc::clone(&seen),
            next: AtomicU64::new(1),
        })
        .expect("this binary's only subscriber");
        seen
    });
    seen.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// The events among `seen` whose message is one of `messages`.
fn only(seen: &[(Level, String)], messages: [&str; 2]) -> Vec<(Level, String)> {
    seen.iter()
        .filter(|(_, message)| messages.contains(&message.as_str()))
        .cloned()
        .collect()
}

/// Keeps every event of the provider-pools crates; spans get ids, nothing
/// else.
struct Capture {
    seen: Seen,
    next: AtomicU64,
}

struct Message<'a>(&'a mut String);

impl Visit for Message<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("provider_pools")
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed))
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut message = String::new();
        event.record(&mut Message(&mut message));
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((*event.metadata().level(), message));
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// A connection whose close panics.
struct Panicky;

impl Cleanup for Panicky {
    async fn close(self) -> Result<(), CloseFailure<Self>> {
        panic!("adapter bug: close panicked");
    }
}

#[derive(Clone)]
struct PanickyDialer;

impl Dialer for PanickyDialer {
    type Conn = Panicky;

    async fn dial(&self, _: DialTarget<'_>) -> Result<Panicky, DialError> {
        Ok(Panicky)
    }
}

const CLOSE_PANICKED: &str = "cleanup panicked; the resource was dropped before its charge";
const CLOSE_DROPPED: &str = "cleanup dropped by the runtime";

#[tokio::test(start_paused = true)]
async fn a_close_that_panics_is_logged_as_a_warning_not_as_a_dropped_task() {
    seen();
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let request = running(&pools, &receipt, "t", 1).await;
    let conn = bounded("a dial", pools.reserve_connection(&request, &PanickyDialer))
        .await
        .expect("dialed");
    drop(request);
    let ticket = pools
        .close_connection(conn)
        .map_err(|r| r.error)
        .expect("a cleanup slot");
    assert!(
        bounded("the cleanup", ticket.outcome()).await.is_ok(),
        "a panicked close reports the resource gone"
    );
    support::quiesce().await;
    assert_eq!(pools.snapshot().cleanup_jobs, 0, "the slot is returned");

    let seen = seen();
    assert_eq!(
        only(&seen, [CLOSE_PANICKED, CLOSE_DROPPED]),
        [(Level::WARN, CLOSE_PANICKED.to_owned())],
        "exactly one warning for the panicked close, no dropped-task line; all events: {seen:?}"
    );
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}

const JOB_PANICKED: &str = "job panicked";
const JOB_DROPPED: &str = "job dropped by the runtime";

#[tokio::test(start_paused = true)]
async fn a_job_that_panics_is_logged_as_a_warning_not_as_a_dropped_task() {
    seen();
    let pools = start(Limits::DEFAULT).await;
    let job = pools
        .spawn_blocking(|| -> u8 { panic!("provider bug") })
        .await
        .expect("a free worker takes the job");
    assert!(
        bounded("the job", job.join()).await.is_err(),
        "the panicking job answers an error"
    );
    support::quiesce().await;
    assert_eq!(pools.snapshot().workers, 0, "the worker is returned");

    let seen = seen();
    assert_eq!(
        only(&seen, [JOB_PANICKED, JOB_DROPPED]),
        [(Level::WARN, JOB_PANICKED.to_owned())],
        "exactly one warning for the panicked job, no dropped-task line; all events: {seen:?}"
    );
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}
