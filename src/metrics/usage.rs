//! The per-key gauges: each tenant's, each provider's and each priority
//! class's running and queued requests now, from
//! [`ProviderPools::usage`](crate::ProviderPools::usage).
//!
//! Invariants:
//! - At most `labels` tenants (and `labels` providers) get a label of
//!   their own: those holding the most requests (running + queued; ties
//!   by id). The rest are summed under `_other`, which no id can spell.
//! - A family's values sum to the snapshot's totals read in the same
//!   scrape (up to requests that moved between the two reads).
//! - Every class has its label, whether it holds requests or not.

use std::collections::BTreeMap;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use super::OTHER_TENANTS;
use crate::{Held, Usage};

/// Encodes the six per-key families of `usage`.
pub(super) fn encode(
    encoder: &mut DescriptorEncoder,
    usage: &Usage,
    labels: usize,
) -> Result<(), std::fmt::Error> {
    let tenants = bounded(&usage.tenants, labels);
    let providers = bounded(&usage.providers, labels);
    let classes: Vec<(String, Held)> = (usage.classes.iter())
        .map(|(class, held)| (class.name().to_owned(), *held))
        .collect();
    let families = [
        (
            "provider_pools_tenant_running_requests",
            "Running requests per tenant (the most loaded tenants, then _other).",
            "tenant",
            &tenants,
            true,
        ),
        (
            "provider_pools_tenant_pending_requests",
            "Queued requests per tenant (the most loaded tenants, then _other).",
            "tenant",
            &tenants,
            false,
        ),
        (
            "provider_pools_provider_running_requests",
            "Running requests per provider (the most loaded providers, then _other).",
            "provider",
            &providers,
            true,
        ),
        (
            "provider_pools_provider_pending_requests",
            "Queued requests per provider (the most loaded providers, then _other).",
            "provider",
            &providers,
            false,
        ),
        (
            "provider_pools_class_running_requests",
            "Running requests per priority class.",
            "class",
            &classes,
            true,
        ),
        (
            "provider_pools_class_pending_requests",
            "Queued requests per priority class.",
            "class",
            &classes,
            false,
        ),
    ];
    for (name, help, key, rows, running) in families {
        let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (label, held) in rows {
            let value = if running { held.running } else { held.pending };
            let label = [(key, label.as_str())];
            ConstGauge::new(i64::from(value)).encode(metric.encode_family(&label)?)?;
        }
    }
    Ok(())
}

/// The `labels` keys holding the most, by label, then `_other` with the
/// sum of the rest (only when there is a rest).
fn bounded<K: AsRef<str>>(held: &BTreeMap<K, Held>, labels: usize) -> Vec<(String, Held)> {
    let mut ranked: Vec<(&K, &Held)> = held.iter().collect();
    ranked.sort_by(|(ka, a), (kb, b)| {
        let load = |h: &Held| u64::from(h.running) + u64::from(h.pending);
        load(b)
            .cmp(&load(a))
            .then_with(|| ka.as_ref().cmp(kb.as_ref()))
    });
    let mut rows: Vec<(String, Held)> = ranked
        .iter()
        .take(labels)
        .map(|(key, held)| (key.as_ref().to_owned(), **held))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    if ranked.len() > labels {
        let mut other = Held::default();
        for (_, held) in &ranked[labels..] {
            other.pending = other.pending.saturating_add(held.pending);
            other.running = other.running.saturating_add(held.running);
        }
        rows.push((OTHER_TENANTS.to_owned(), other));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TenantId;

    fn held(pending: u32, running: u32) -> Held {
        Held { pending, running }
    }

    #[test]
    fn the_most_loaded_keys_are_labelled_and_the_rest_summed_under_other() {
        let tenants: BTreeMap<TenantId, Held> = [
            ("a", held(0, 1)),
            ("b", held(3, 2)),
            ("c", held(1, 1)),
            ("d", held(0, 2)),
        ]
        .into_iter()
        .map(|(t, h)| (TenantId::new(t).expect("valid"), h))
        .collect();
        let rows = bounded(&tenants, 2);
        assert_eq!(
            rows,
            [
                ("b".to_owned(), held(3, 2)),
                ("c".to_owned(), held(1, 1)),
                ("_other".to_owned(), held(0, 3)),
            ]
        );
        assert_eq!(bounded(&tenants, 4).len(), 4, "no _other when all fit");
    }
}
