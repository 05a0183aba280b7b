//! Prometheus exposition of one registry (feature `metrics`, on by default),
//! with the `prometheus-client` crate.
//!
//! [`PoolsMetrics::install`] hooks a recorder into the pools (their
//! [`AdmissionObserver`]) and returns a collector the host registers into
//! its own [`Registry`]. Each scrape reads [`ProviderPools::snapshot`]
//! (counts only) and the recorded admissions:
//!
//! | family | type | labels |
//! | --- | --- | --- |
//! | `provider_pools_configured_epochs`, `_retained_epochs`, `_clients`, `_pending_requests`, `_running_requests`, `_workers`, `_drivers`, `_cleanup_jobs`, `_failed_cleanup`, `_connection_waiters`, `_metadata_bytes` | gauge | — |
//! | `provider_pools_connections` | gauge | `state` = `active`, `idle`, `connecting`, `retired` |
//! | `provider_pools_control` | gauge (1 for the current state, else 0) | `state` = `running`, `retiring`, `completed`, `failed` |
//! | `provider_pools_admissions_total` | counter | `outcome` = `admitted`, `cancelled` or an `AdmitError::code()` |
//! | `provider_pools_admission_wait_seconds` | histogram | `outcome` |
//! | `provider_pools_tenant_served_total` | counter | `tenant` |
//! | `provider_pools_tenant_served_share` | gauge (0..=1) | `tenant` |
//! | `provider_pools_tenant_running_requests`, `_tenant_pending_requests` | gauge | `tenant` |
//! | `provider_pools_provider_running_requests`, `_provider_pending_requests` | gauge | `provider` |
//! | `provider_pools_class_running_requests`, `_class_pending_requests` | gauge | `class` = `system`, `interactive`, `batch` |
//! | `provider_pools_provider_rate_per_second`, `_provider_rate_tokens` | gauge | `provider` (each provider with a rate) |
//!
//! Invariants:
//! - Label values are stable codes, or tenant ids (public names): never a
//!   secret, never a provider's free text.
//! - At most `tenant_labels` distinct tenants are labelled (default: the
//!   registry's `pending_requests + running_requests`, the most tenants that
//!   can hold requests at once); admissions of later tenants are counted
//!   under `tenant="_other"`, which no tenant id can spell (a tenant id
//!   starts with a letter or digit). The outcome label has one value per
//!   stable code. So the exposition's size is bounded.
//! - `served_total` counts granted admissions; the share is each labelled
//!   tenant's (and `_other`'s) part of all of them, 0 before the first.
//! - The per-tenant and per-provider gauges read
//!   [`ProviderPools::usage`] at each scrape: who holds requests now. The
//!   same bound applies to each (the most loaded keys, then `_other`), so
//!   their size is bounded too; snapshots stay aggregate.
//! - The rate gauges read [`ProviderPools::provider_rates`]: the rate in
//!   force and the tokens ready now of each provider with a rate (at most
//!   1,024 of them).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

pub use prometheus_client;

mod usage;

use crate::{AdmissionEvent, AdmissionObserver};
use crate::{ControlState, ProviderPools, TenantId};

/// The admission-wait histogram's upper bounds, in seconds: 100 µs to
/// about 26 s, each four times the last.
pub const WAIT_BUCKETS: [f64; 10] = [
    0.000_1, 0.000_4, 0.001_6, 0.006_4, 0.025_6, 0.102_4, 0.409_6, 1.638_4, 6.553_6, 26.214_4,
];

/// The tenant label of admissions past the tenant-label bound.
pub const OTHER_TENANTS: &str = "_other";

type OutcomeLabel = [(&'static str, &'static str); 1];

/// Why no metrics were installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// The pools already have an admission observer.
    #[error("the pools already have an admission observer")]
    ObserverTaken,
}

/// The Prometheus collector of one registry. Register it with
/// [`PoolsMetrics::register`]; cheap to clone.
#[derive(Debug, Clone)]
pub struct PoolsMetrics {
    pools: ProviderPools,
    recorder: Arc<Recorder>,
}

impl PoolsMetrics {
    /// Installs the admission recorder into `pools`, labelling at most the
    /// default number of tenants (`pending_requests + running_requests`).
    ///
    /// # Errors
    ///
    /// [`MetricsError::ObserverTaken`] when `pools` already have an observer.
    pub fn install(pools: &ProviderPools) -> Result<Self, MetricsError> {
        let limits = pools.limits();
        let tenant_labels = limits.pending_requests as usize + limits.running_requests as usize;
        Self::install_with_tenant_labels(pools, tenant_labels)
    }

    /// As [`PoolsMetrics::install`], labelling at most `tenant_labels`
    /// distinct tenants.
    ///
    /// # Errors
    ///
    /// [`MetricsError::ObserverTaken`] when `pools` already have an observer.
    pub fn install_with_tenant_labels(
        pools: &ProviderPools,
        tenant_labels: usize,
    ) -> Result<Self, MetricsError> {
        let recorder = Arc::new(Recorder {
            outcomes: Family::default(),
            waits: Family::new_with_constructor(wait_histogram),
            served: Mutex::new(Served {
                tenants: BTreeMap::new(),
                other: 0,
                limit: tenant_labels,
            }),
        });
        if !pools.observe_admissions(Arc::clone(&recorder) as Arc<dyn AdmissionObserver>) {
            return Err(MetricsError::ObserverTaken);
        }
        Ok(Self {
            pools: pools.clone(),
            recorder,
        })
    }

    /// Registers the collector into the host's `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(self.clone()));
    }
}

fn wait_histogram() -> Histogram {
    Histogram::new(WAIT_BUCKETS)
}

/// What the admission path records.
#[derive(Debug)]
struct Recorder {
    outcomes: Family<OutcomeLabel, Counter>,
    waits: Family<OutcomeLabel, Histogram, fn() -> Histogram>,
    served: Mutex<Served>,
}

/// Granted admissions per labelled tenant, bounded by `limit` labels.
#[derive(Debug)]
struct Served {
    tenants: BTreeMap<TenantId, u64>,
    other: u64,
    limit: usize,
}

impl Served {
    fn count(&mut self, tenant: &TenantId) {
        if let Some(count) = self.tenants.get_mut(tenant) {
            *count += 1;
        } else if self.tenants.len() < self.limit {
            self.tenants.insert(tenant.clone(), 1);
        } else {
            self.other += 1;
        }
    }

    /// Every label with its count; `_other` only once used.
    fn rows(&self) -> Vec<(String, u64)> {
        let mut rows: Vec<_> = self
            .tenants
            .iter()
            .map(|(tenant, count)| (tenant.as_str().to_owned(), *count))
            .collect();
        if self.other > 0 {
            rows.push((OTHER_TENANTS.to_owned(), self.other));
        }
        rows
    }
}

impl AdmissionObserver for Recorder {
    fn admission(&self, event: &AdmissionEvent<'_>) {
        let label = [("outcome", event.outcome)];
        self.outcomes.get_or_create(&label).inc();
        self.waits
            .get_or_create(&label)
            .observe(event.wait.as_secs_f64());
        if event.outcome == AdmissionEvent::ADMITTED {
            self.served
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .count(event.tenant);
        }
    }
}

impl Collector for PoolsMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = self.pools.snapshot();
        let gauges = [
            (
                "configured_epochs",
                "Logical providers with a current epoch.",
                s.configured_epochs,
            ),
            (
                "retained_epochs",
                "Epochs alive: current plus retired ones still draining.",
                s.retained_epochs,
            ),
            (
                "clients",
                "Configured clients across every retained epoch.",
                s.clients,
            ),
            (
                "pending_requests",
                "Queued request owners.",
                s.pending_requests,
            ),
            (
                "running_requests",
                "Running or retained request owners.",
                s.running_requests,
            ),
            ("workers", "Provider jobs not yet joined.", s.workers),
            (
                "drivers",
                "Connection drivers not yet joined (no worker slot each).",
                s.drivers,
            ),
            (
                "cleanup_jobs",
                "Cleanup jobs not yet joined.",
                s.cleanup_jobs,
            ),
            (
                "failed_cleanup",
                "Resources whose cleanup failed, still owned.",
                s.failed_cleanup,
            ),
            (
                "connection_waiters",
                "Callers waiting for a connection of a client (behind its dial, or while it is at connections_per_client).",
                s.connections.waiting,
            ),
            (
                "metadata_bytes",
                "Accounted registry metadata, in bytes.",
                s.metadata_bytes,
            ),
        ];
        for (name, help, value) in gauges {
            let name = format!("provider_pools_{name}");
            gauge(&mut encoder, &name, help, i64::from(value))?;
        }
        let c = s.connections;
        let states = [
            ("active", c.active),
            ("idle", c.idle),
            ("connecting", c.connecting),
            ("retired", c.retired),
        ];
        let rows: Vec<_> = states
            .iter()
            .map(|(state, v)| ([("state", *state)], i64::from(*v)))
            .collect();
        labelled_gauges(
            &mut encoder,
            "provider_pools_connections",
            "Connections by state.",
            &rows,
        )?;
        let controls = [
            ("running", ControlState::Running),
            ("retiring", ControlState::Retiring),
            ("completed", ControlState::Completed),
            ("failed", ControlState::Failed),
        ];
        let rows: Vec<_> = controls
            .iter()
            .map(|(name, state)| ([("state", *name)], i64::from(s.control == *state)))
            .collect();
        labelled_gauges(
            &mut encoder,
            "provider_pools_control",
            "The control owner's state (1 for the current one).",
            &rows,
        )?;

        let recorder = &self.recorder;
        let metric = encoder.encode_descriptor(
            "provider_pools_admissions",
            "Finished admissions by outcome (stable codes).",
            None,
            MetricType::Counter,
        )?;
        recorder.outcomes.encode(metric)?;
        let metric = encoder.encode_descriptor(
            "provider_pools_admission_wait_seconds",
            "Time from admit to its outcome, by outcome.",
            None,
            MetricType::Histogram,
        )?;
        recorder.waits.encode(metric)?;

        let served = recorder
            .served
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .rows();
        let total: u64 = served.iter().map(|(_, n)| n).sum();
        let mut metric = encoder.encode_descriptor(
            "provider_pools_tenant_served",
            "Granted admissions per tenant (at most the tenant-label bound, then _other).",
            None,
            MetricType::Counter,
        )?;
        for (tenant, count) in &served {
            let label = [("tenant", tenant.as_str())];
            ConstCounter::new(*count).encode(metric.encode_family(&label)?)?;
        }
        let mut metric = encoder.encode_descriptor(
            "provider_pools_tenant_served_share",
            "Each tenant's share of all granted admissions (0..=1).",
            None,
            MetricType::Gauge,
        )?;
        for (tenant, count) in &served {
            let label = [("tenant", tenant.as_str())];
            let share = if total == 0 {
                0.0
            } else {
                *count as f64 / total as f64
            };
            ConstGauge::new(share).encode(metric.encode_family(&label)?)?;
        }
        let labels = recorder
            .served
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .limit;
        usage::encode(&mut encoder, &self.pools.usage(), labels)?;
        encode_rates(&mut encoder, &self.pools.provider_rates())
    }
}

/// The rate gauges of every provider with a rate.
fn encode_rates(
    encoder: &mut DescriptorEncoder,
    rates: &[(crate::ProviderId, crate::RateInForce)],
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(
        "provider_pools_provider_rate_per_second",
        "Each rate-limited provider's rate in force, in requests per second.",
        None,
        MetricType::Gauge,
    )?;
    for (provider, rate) in rates {
        let label = [("provider", provider.as_str())];
        ConstGauge::new(rate.per_second()).encode(metric.encode_family(&label)?)?;
    }
    let mut metric = encoder.encode_descriptor(
        "provider_pools_provider_rate_tokens",
        "Each rate-limited provider's tokens ready now (at most its burst).",
        None,
        MetricType::Gauge,
    )?;
    for (provider, rate) in rates {
        let label = [("provider", provider.as_str())];
        ConstGauge::new(i64::from(rate.tokens)).encode(metric.encode_family(&label)?)?;
    }
    Ok(())
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: i64,
) -> Result<(), std::fmt::Error> {
    let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    ConstGauge::new(value).encode(metric)
}

fn labelled_gauges(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[([(&'static str, &'static str); 1], i64)],
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (label, value) in rows {
        ConstGauge::new(*value).encode(metric.encode_family(label)?)?;
    }
    Ok(())
}
