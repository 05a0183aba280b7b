//! A tracing subscriber that captures every event and span field of the
//! process as text, for the secret-hygiene tests: what a log could show.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

/// Every event and span field of the process, as text.
#[derive(Clone, Default)]
pub(crate) struct Capture(Arc<Mutex<String>>);

impl Capture {
    pub(crate) fn text(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn push(&self, line: String) {
        let mut text = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        text.push_str(&line);
        text.push('\n');
    }
}

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
    fn new_span(&self, attributes: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut fields = Fields(format!("span {}", attributes.metadata().name()));
        attributes.record(&mut fields);
        self.push(fields.0);
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut fields = Fields("record".to_owned());
        values.record(&mut fields);
        self.push(fields.0);
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let metadata = event.metadata();
        let mut fields = Fields(format!("event {} {}", metadata.level(), metadata.target()));
        event.record(&mut fields);
        self.push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
