//! Observability: the engine's tracing spans (names and fields are stable)
//! and the [`AdmissionObserver`] hook that a metrics exporter implements.
//!
//! Span names and field names listed in [`spans`] never change; a renamed
//! field is a breaking change. Field values are integers and `&'static str`
//! codes, plus the tenant and provider ids (public names, never secrets): no
//! credential, setting value, body or payload is ever recorded.
//!
//! Invariants:
//! - Spans are created at `debug` (per request, dial, cleanup) or `info`
//!   (shutdown); with those levels disabled a span costs one callsite check.
//! - Every admission that reaches [`ProviderPools::admit`](crate::ProviderPools::admit)
//!   ends with exactly one outcome: on its span, and at the observer.

mod admit;
pub mod spans;

use std::time::Duration;

use crate::identity::{ProviderId, TenantId};

pub(crate) use admit::AdmitWatch;

/// The outcome code of an admission that was granted.
pub(crate) const ADMITTED: &str = "admitted";

/// The outcome code of an admission whose future was dropped while it
/// waited.
pub(crate) const CANCELLED: &str = "cancelled";

/// One finished admission, as an [`AdmissionObserver`] hears it.
#[derive(Debug, Clone, Copy)]
pub struct AdmissionEvent<'a> {
    /// The plan's tenant.
    pub tenant: &'a TenantId,
    /// The logical provider asked for.
    pub provider: &'a ProviderId,
    /// [`Self::ADMITTED`], [`Self::CANCELLED`], or the refusal's
    /// [`AdmitError::code`](crate::AdmitError::code).
    pub outcome: &'static str,
    /// From the call to `admit` to its outcome (tokio's clock).
    pub wait: Duration,
}

impl AdmissionEvent<'_> {
    /// The outcome of an admission that was granted.
    pub const ADMITTED: &'static str = ADMITTED;
    /// The outcome of an admission whose future was dropped while it waited.
    pub const CANCELLED: &'static str = CANCELLED;
}

/// A sink for admission outcomes, installed once per registry with
/// [`ProviderPools::observe_admissions`](crate::ProviderPools::observe_admissions).
///
/// Called on the admitting task, once per admission, after the outcome is
/// known: keep it cheap and non-blocking (atomic counters; a short lock at
/// most). It must not call back into the pools.
pub trait AdmissionObserver: Send + Sync + 'static {
    /// Records one finished admission.
    fn admission(&self, event: &AdmissionEvent<'_>);
}

/// The registry's observer, installed at most once.
#[derive(Default)]
pub(crate) struct ObserverSlot(std::sync::OnceLock<std::sync::Arc<dyn AdmissionObserver>>);

impl ObserverSlot {
    pub(crate) fn get(&self) -> Option<&dyn AdmissionObserver> {
        self.0.get().map(|o| o.as_ref())
    }

    /// Installs `observer`; false when one was installed already.
    pub(crate) fn set(&self, observer: std::sync::Arc<dyn AdmissionObserver>) -> bool {
        self.0.set(observer).is_ok()
    }
}

impl std::fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ObserverSlot")
            .field(&self.0.get().is_some())
            .finish()
    }
}
