//! [`AdmitWatch`]: the span and the observer call of one admission.

use tokio::time::Instant;

use crate::admission::AdmitError;
use crate::identity::{OriginSlot, ProviderId, TenantId};
use crate::observe::{spans, AdmissionEvent, AdmissionObserver, ADMITTED, CANCELLED};

/// Watches one admission from the call to its outcome; a watch dropped
/// before [`AdmitWatch::finish`] reports [`CANCELLED`].
///
/// Every pending waiter carries its watch, and most admissions have
/// neither a span that records nor an observer: the watch is then one
/// empty word, and keeps nothing and reads no clock.
pub(crate) struct AdmitWatch<'a> {
    /// What is watched, until the outcome is reported; `None` from the
    /// start when nothing would record it.
    watched: Option<Box<Watched<'a>>>,
}

/// What a watch that records keeps.
struct Watched<'a> {
    span: tracing::Span,
    started: Instant,
    /// Who asked, kept only when an observer listens.
    observed: Option<(&'a dyn AdmissionObserver, TenantId, ProviderId)>,
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
        if span.is_disabled() && observer.is_none() {
            return Self { watched: None };
        }
        Self {
            watched: Some(Box::new(Watched {
                span,
                started,
                observed: observer.map(|o| (o, tenant.clone(), provider.clone())),
            })),
        }
    }

    /// Enters the admission's span (none when it does not record) until
    /// the returned guard drops.
    pub(crate) fn enter(&self) -> Option<tracing::span::Entered<'_>> {
        self.watched.as_ref().map(|watched| watched.span.enter())
    }

    /// Records the epoch of the admission's lease on its span.
    pub(crate) fn record_epoch(&self, epoch: u64) {
        if let Some(watched) = &self.watched {
            watched.span.record("epoch", epoch);
        }
    }

    /// Records the admission's outcome on its span and at the observer.
    pub(crate) fn finish<T>(mut self, result: &Result<T, AdmitError>) {
        let outcome = match result {
            Ok(_) => ADMITTED,
            Err(err) => err.code(),
        };
        self.report(outcome);
    }

    /// Reports `outcome` once: later calls find nothing watched.
    fn report(&mut self, outcome: &'static str) {
        let Some(watched) = self.watched.take() else {
            return;
        };
        let wait = watched.started.elapsed();
        watched.span.record("outcome", outcome);
        watched.span.record(
            "wait_us",
            u64::try_from(wait.as_micros()).unwrap_or(u64::MAX),
        );
        if let Some((observer, tenant, provider)) = &watched.observed {
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
        self.report(CANCELLED);
    }
}
