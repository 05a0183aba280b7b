//! [`AdmitWatch`]: the span and the observer call of one admission.

use tokio::time::Instant;

use crate::admission::AdmitError;
use crate::identity::{OriginSlot, ProviderId, TenantId};
use crate::observe::{spans, AdmissionEvent, AdmissionObserver, ADMITTED, CANCELLED};

/// Watches one admission from the call to its outcome; a watch dropped
/// before [`AdmitWatch::finish`] reports [`CANCELLED`].
pub(crate) struct AdmitWatch<'a> {
    span: tracing::Span,
    started: Instant,
    /// Who asked, kept only when an observer listens (boxed: every pending
    /// waiter carries the watch, most with no observer).
    observed: Option<Box<(&'a dyn AdmissionObserver, TenantId, ProviderId)>>,
    finished: bool,
}

impl<'a> AdmitWatch<'a> {
    /// Starts the watch of an admission that began at `started`.
    pub(crate) fn start(
        started: Instant,
        observer: Option<&'a dyn AdmissionObserver>,
        tenant: &TenantId,
        provider: &ProviderId,
        slot: OriginSlot,
    ) -> Self {
        let span = tracing::debug_span!(
            spans::ADMIT,
            tenant = tenant.as_str(),
            provider = provider.as_str(),
            slot = slot.get(),
            epoch = tracing::field::Empty,
            outcome = tracing::field::Empty,
            wait_us = tracing::field::Empty,
        );
        Self {
            span,
            started,
            observed: observer.map(|o| Box::new((o, tenant.clone(), provider.clone()))),
            finished: false,
        }
    }

    /// The admission's span, for the waiting future and its children.
    pub(crate) fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Records the admission's outcome on its span and at the observer.
    pub(crate) fn finish<T>(mut self, result: &Result<T, AdmitError>) {
        let outcome = match result {
            Ok(_) => ADMITTED,
            Err(err) => err.code(),
        };
        self.report(outcome);
    }

    fn report(&mut self, outcome: &'static str) {
        self.finished = true;
        // The wait is read only by a span that records or an observer:
        // without either, no clock read.
        if self.span.is_disabled() && self.observed.is_none() {
            return;
        }
        let wait = self.started.elapsed();
        self.span.record("outcome", outcome);
        self.span.record(
            "wait_us",
            u64::try_from(wait.as_micros()).unwrap_or(u64::MAX),
        );
        if let Some(observed) = &self.observed {
            let (observer, tenant, provider) = &**observed;
            observer.admission(&AdmissionEvent {
                tenant,
                provider,
                outcome,
                wait,
            });
        }
    }
}

impl Drop for AdmitWatch<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.report(CANCELLED);
        }
    }
}
