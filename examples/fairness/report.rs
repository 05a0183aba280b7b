//! The figures: Jain's index, percentiles and the printed table.

use std::time::Duration;

use crate::limiter::Kind;
use crate::settings::Settings;
use crate::Outcome;

/// Jain's fairness index: 1 when every share is equal, 1/n when one tenant
/// gets everything.
pub(crate) fn jain(shares: &[u64]) -> f64 {
    let sum: f64 = shares.iter().map(|&x| x as f64).sum();
    let squares: f64 = shares.iter().map(|&x| (x as f64) * (x as f64)).sum();
    if squares == 0.0 {
        0.0
    } else {
        sum * sum / (shares.len() as f64 * squares)
    }
}

/// Nearest-rank percentile of sorted waits, in milliseconds.
pub(crate) fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1_000.0
}

pub(crate) fn report(settings: &Settings, outcomes: &[Outcome]) {
    println!(
        "{:<15} {:<9} {:>9} {:>7} {:>8} {:>12} {:>12} {:>12}",
        "limiter",
        "scenario",
        "grants/s",
        "Jain",
        "heavy %",
        "light p50 ms",
        "light p99 ms",
        "p99/no flood"
    );
    for o in outcomes {
        let total: u64 = o.grants.iter().sum();
        let heavy = if o.flood {
            format!("{:.1}", 100.0 * o.grants[0] as f64 / total.max(1) as f64)
        } else {
            "-".to_string()
        };
        let ratio = if o.flood {
            outcomes
                .iter()
                .find(|b| b.kind == o.kind && !b.flood)
                .map_or("-".to_string(), |b| {
                    format!(
                        "{:.2}×",
                        percentile_ms(&o.light_waits, 0.99) / percentile_ms(&b.light_waits, 0.99)
                    )
                })
        } else {
            "1.00×".to_string()
        };
        println!(
            "{:<15} {:<9} {:>9.0} {:>7.4} {:>8} {:>12.2} {:>12.2} {:>12}",
            o.kind.name(),
            if o.flood { "flood" } else { "no flood" },
            total as f64 / o.measured.as_secs_f64(),
            jain(&o.grants),
            heavy,
            percentile_ms(&o.light_waits, 0.50),
            percentile_ms(&o.light_waits, 0.99),
            ratio,
        );
    }
    let find = |kind, flood| outcomes.iter().find(|o| o.kind == kind && o.flood == flood);
    if let (Some(flood), Some(calm)) = (find(Kind::Pools, true), find(Kind::Pools, false)) {
        let index = jain(&flood.grants);
        let ratio =
            percentile_ms(&flood.light_waits, 0.99) / percentile_ms(&calm.light_waits, 0.99);
        println!();
        println!(
            "target Jain's index >= 0.99 under the flood: {:.4} ({})",
            index,
            if index >= 0.99 { "met" } else { "missed" }
        );
        println!(
            "target light p99 under the flood <= 2x its p99 with no flood: {:.2}x ({})",
            ratio,
            if ratio <= 2.0 { "met" } else { "missed" }
        );
    }
    let fair = 1.0 / (settings.light_tenants + 1) as f64;
    println!(
        "(a fair share under the flood is {:.1}% per tenant; the heavy tenant holds {:.1}% of the outstanding requests)",
        100.0 * fair,
        100.0 * settings.heavy_submitters() as f64
            / (settings.heavy_submitters() + settings.light_tenants * settings.light_submitters)
                as f64
    );
}
