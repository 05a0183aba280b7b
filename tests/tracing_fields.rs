//! The engine's spans, as a subscriber sees them: exact span names, exact
//! field names and values, for one admitted and dispatched request with its
//! dial and cleanup, one timed-out admission, one failing dial and the
//! backoff it set, and a shutdown with its phases. Real loopback TCP, paused
//! clock; the subscriber is this test thread's default only.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use provider_pools::spans;
use provider_pools::{Cleanup, CloseFailure, DialError, DialErrorKind, DialTarget, Dialer, Limits};
use support::{bounded, eventually, installation, provider, running, start, tcp_config};
use tokio::io::AsyncWriteExt;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One captured span: its name, parent, fields, and whether it closed.
#[derive(Debug, Clone)]
struct SpanSeen {
    id: u64,
    name: &'static str,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
    refs: usize,
    closed: bool,
}

/// One captured event: its message and the span it belongs to.
#[derive(Debug, Clone)]
struct EventSeen {
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Seen {
    spans: HashMap<u64, SpanSeen>,
    events: Vec<EventSeen>,
    /// The entered spans of the test thread (the runtime is current-thread).
    stack: Vec<u64>,
}

/// A subscriber that keeps every span and event of the provider-pools
/// crates, with field values as plain text.
#[derive(Clone, Default)]
struct Capture {
    seen: Arc<Mutex<Seen>>,
    next: Arc<AtomicU64>,
}

struct Text<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Text<'_> {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.0.insert(field.name().to_owned(), text);
    }
}

impl Capture {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every span named `name`, in creation order.
    fn spans(&self, name: &str) -> Vec<SpanSeen> {
        let mut found: Vec<_> = self
            .seen()
            .spans
            .values()
            .filter(|s| s.name == name)
            .cloned()
            .collect();
        found.sort_by_key(|s| s.id);
        found
    }

    /// The one closed span named `name`.
    fn only_closed(&self, name: &str) -> SpanSeen {
        let found = self.spans(name);
        assert_eq!(found.len(), 1, "exactly one {name} span: {found:#?}");
        let span = found.into_iter().next().expect("one span");
        assert!(span.closed, "{name} span closed: {span:#?}");
        span
    }

    fn events_in(&self, span: u64) -> Vec<EventSeen> {
        self.seen()
            .events
            .iter()
            .filter(|e| e.parent == Some(span))
            .cloned()
            .collect()
    }
}

impl Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("provider_pools")
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut seen = self.seen();
        let parent = match attributes.parent() {
            Some(parent) => Some(parent.into_u64()),
            None if attributes.is_contextual() => seen.stack.last().copied(),
            None => None,
        };
        let mut fields = BTreeMap::new();
        attributes.record(&mut Text(&mut fields));
        seen.spans.insert(
            id,
            SpanSeen {
                id,
                name: attributes.metadata().name(),
                parent,
                fields,
                refs: 1,
                closed: false,
            },
        );
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some(seen) = self.seen().spans.get_mut(&span.into_u64()) {
            values.record(&mut Text(&mut seen.fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut seen = self.seen();
        let parent = match event.parent() {
            Some(parent) => Some(parent.into_u64()),
            None if event.is_contextual() => seen.stack.last().copied(),
            None => None,
        };
        let mut fields = BTreeMap::new();
        event.record(&mut Text(&mut fields));
        seen.events.push(EventSeen { parent, fields });
    }
    fn enter(&self, span: &Id) {
        self.seen().stack.push(span.into_u64());
    }
    fn exit(&self, span: &Id) {
        let mut seen = self.seen();
        if let Some(at) = seen.stack.iter().rposition(|s| *s == span.into_u64()) {
            seen.stack.remove(at);
        }
    }
    fn clone_span(&self, span: &Id) -> Id {
        if let Some(seen) = self.seen().spans.get_mut(&span.into_u64()) {
            seen.refs += 1;
        }
        span.clone()
    }
    fn try_close(&self, span: Id) -> bool {
        let mut seen = self.seen();
        let Some(entry) = seen.spans.get_mut(&span.into_u64()) else {
            return false;
        };
        entry.refs -= 1;
        entry.closed = entry.refs == 0;
        entry.closed
    }
}

fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A real TCP connection whose close shuts its write half down.
struct Graceful(tokio::net::TcpStream);

impl Cleanup for Graceful {
    async fn close(mut self) -> Result<(), CloseFailure<Self>> {
        match self.0.shutdown().await {
            Ok(()) => Ok(()),
            Err(e) => Err(CloseFailure::new(self, e.to_string())),
        }
    }
}

/// Dials the slot's target over loopback TCP.
#[derive(Clone)]
struct TcpDialer;

impl Dialer for TcpDialer {
    type Conn = Graceful;

    async fn dial(&self, target: DialTarget<'_>) -> Result<Graceful, DialError> {
        tokio::net::TcpStream::connect(target.target)
            .await
            .map(Graceful)
            .map_err(|e| DialError::new(DialErrorKind::Refused, e.to_string()))
    }
}

async fn listener() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let target = listener.local_addr().expect("addr").to_string();
    (listener, target)
}

#[tokio::test(start_paused = true)]
async fn a_served_request_traces_admission_dispatch_dial_cleanup_and_shutdown() {
    let capture = Capture::default();
    let _default = tracing::subscriber::set_default(capture.clone());
    let (listener, target) = listener().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = pools
        .install(installation(
            &provider("web"),
            0,
            b"secret-key",
            tcp_config("web", &[target]),
        ))
        .await
        .expect("install");

    let request = running(&pools, &receipt, "acme", 1).await;
    let conn = pools
        .reserve_connection(&request, &TcpDialer)
        .await
        .expect("dialed");
    let _accepted = bounded("accept", listener.accept()).await.expect("accept");
    drop(request);
    let ticket = pools
        .close_connection(conn)
        .map_err(|r| r.error)
        .expect("a cleanup slot");
    bounded("cleanup", ticket.outcome())
        .await
        .map_err(|f| f.reason().to_string())
        .expect("closed");
    let report = bounded(
        "shutdown",
        pools.shutdown(tokio::time::Instant::now() + Duration::from_secs(5)),
    )
    .await;
    assert!(report.is_clean(), "{report:?}");

    let admit = capture.only_closed(spans::ADMIT);
    assert_eq!(
        admit.fields,
        fields(&[
            ("tenant", "acme"),
            ("provider", "web"),
            ("slot", "0"),
            ("epoch", "1"),
            ("outcome", "admitted"),
            ("wait_us", "0"),
        ])
    );
    let dispatch = capture.only_closed(spans::DISPATCH);
    assert_eq!(
        dispatch.fields,
        fields(&[
            ("provider", "web"),
            ("epoch", "1"),
            ("outcome", "dispatched")
        ])
    );
    let dial = capture.only_closed(spans::DIAL);
    assert_eq!(
        dial.fields,
        fields(&[
            ("provider", "web"),
            ("epoch", "1"),
            ("client", "0"),
            ("outcome", "connected"),
        ]),
        "a successful dial sets no backoff"
    );
    let cleanup = capture.only_closed(spans::CLEANUP);
    assert_eq!(
        cleanup.fields.get("outcome").map(String::as_str),
        Some("closed")
    );
    assert_eq!(
        cleanup.fields.keys().collect::<Vec<_>>(),
        ["cleanup", "outcome"]
    );

    let shutdown = capture.only_closed(spans::SHUTDOWN);
    assert_eq!(shutdown.fields, fields(&[("outcome", "clean")]));
    let phases = capture.spans(spans::SHUTDOWN_PHASE);
    let names: Vec<_> = phases.iter().map(|p| p.fields["phase"].as_str()).collect();
    assert_eq!(names, ["retire", "workers", "cleanup", "registry"]);
    for phase in &phases {
        assert!(phase.closed, "phase closed: {phase:?}");
        assert_eq!(phase.parent, Some(shutdown.id), "under shutdown: {phase:?}");
        assert_eq!(
            phase.fields.keys().collect::<Vec<_>>(),
            ["outcome", "phase"]
        );
        // A pool the registry already stopped (nothing left) is `stopped`:
        // which of the two depends on who gets there first; never a timeout.
        let outcome = phase.fields["outcome"].as_str();
        match phase.fields["phase"].as_str() {
            "workers" | "cleanup" => {
                assert!(outcome == "done" || outcome == "stopped", "{phase:?}")
            }
            _ => assert_eq!(outcome, "done", "{phase:?}"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_admission_records_its_code_and_its_wait() {
    let capture = Capture::default();
    let _default = tracing::subscriber::set_default(capture.clone());
    let limits = Limits {
        running_requests: 1,
        running_per_tenant: 1,
        running_per_provider: 1,
        queue_age: Duration::from_millis(250),
        ..Limits::DEFAULT
    };
    let (_listener, target) = listener().await;
    let pools = start(limits).await;
    let receipt = pools
        .install(installation(
            &provider("web"),
            0,
            b"k",
            tcp_config("web", &[target]),
        ))
        .await
        .expect("install");
    let _holder = running(&pools, &receipt, "acme", 1).await;

    let waiting = support::request(&pools, support::plan("globex", 2), &receipt, b"");
    let refused = bounded("admission", pools.admit(waiting)).await.err();
    assert_eq!(refused.as_ref().map(|e| e.code()), Some("timeout"));

    let admitted = capture.spans(spans::ADMIT);
    assert_eq!(admitted.len(), 2, "{admitted:#?}");
    let timed_out = &admitted[1];
    assert!(timed_out.closed);
    assert_eq!(
        timed_out.fields,
        fields(&[
            ("tenant", "globex"),
            ("provider", "web"),
            ("slot", "0"),
            ("epoch", "1"),
            ("outcome", "timeout"),
            ("wait_us", "250000"),
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_dial_records_its_kind_and_the_backoff_it_set() {
    let capture = Capture::default();
    let _default = tracing::subscriber::set_default(capture.clone());
    let (listener, target) = listener().await;
    drop(listener); // nothing listens: the dial is refused at once
    let pools = start(Limits::DEFAULT).await;
    let receipt = pools
        .install(installation(
            &provider("down"),
            0,
            b"k",
            tcp_config("down", &[target]),
        ))
        .await
        .expect("install");
    let request = running(&pools, &receipt, "acme", 1).await;
    let failed = pools.reserve_connection(&request, &TcpDialer).await.err();
    assert_eq!(failed.as_ref().map(|e| e.code()), Some("unavailable"));

    eventually("the epoch actor applied the dial's outcome", || {
        capture.spans(spans::DIAL).iter().all(|s| s.closed)
    })
    .await;
    let dial = capture.only_closed(spans::DIAL);
    assert_eq!(
        dial.fields,
        fields(&[
            ("provider", "down"),
            ("epoch", "1"),
            ("client", "0"),
            ("outcome", "refused"),
            ("failures", "1"),
            ("backoff_ms", "100"),
        ])
    );
    let backoff = capture.events_in(dial.id);
    assert_eq!(backoff.len(), 1, "one backoff event: {backoff:#?}");
    assert_eq!(
        backoff[0].fields.get("message").map(String::as_str),
        Some("dial failed; backoff")
    );

    // During the window the next caller is refused at once, without a dial.
    let refused = pools.reserve_connection(&request, &TcpDialer).await.err();
    assert_eq!(refused.as_ref().map(|e| e.code()), Some("unavailable"));
    assert_eq!(
        capture.spans(spans::DIAL).len(),
        1,
        "no dial during backoff"
    );
}
