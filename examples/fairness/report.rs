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

/// The median of `values` (the mean of the middle two for an even count).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn name(kind: Kind, flood: bool) -> String {
    format!(
        "{} {}",
        kind.name(),
        if flood { "flood" } else { "no flood" }
    )
}

/// Prints the column heads; `first` names the first column.
pub(crate) fn header(first: &str) {
    println!(
        "{first:<7} {:<24} {:>9} {:>7} {:>8} {:>12} {:>12} {:>11}",
        "limiter, scenario",
        "grants/s",
        "Jain",
        "heavy %",
        "light p50 ms",
        "light p99 ms",
        "max gap ms"
    );
}

/// Prints one run.
pub(crate) fn row(label: &str, o: &Outcome) {
    println!(
        "{label:<7} {:<24} {:>9.0} {:>7.4} {:>8} {:>12.2} {:>12.2} {:>11.1}",
        name(o.kind, o.flood),
        o.grants_per_s,
        o.jain,
        o.heavy_share
            .map_or("-".to_string(), |s| format!("{:.1}", 100.0 * s)),
        o.light_p50_ms,
        o.light_p99_ms,
        o.max_gap_ms,
    );
}

/// Prints the medians over the repeats, the p99 ratios and the targets.
pub(crate) fn summary(settings: &Settings, outcomes: &[Outcome]) {
    let runs = |kind: Kind, flood: bool| -> Vec<&Outcome> {
        outcomes
            .iter()
            .filter(|o| o.kind == kind && o.flood == flood)
            .collect()
    };
    let med = |runs: &[&Outcome], field: fn(&Outcome) -> f64| -> f64 {
        median(&mut runs.iter().map(|o| field(o)).collect::<Vec<_>>())
    };
    let table = settings.repeats > 1;
    if table {
        println!();
        println!("medians over {} repeats", settings.repeats);
        header("median");
    }
    let mut ratios = Vec::new();
    for kind in Kind::ALL {
        let calm = runs(kind, false);
        let flood = runs(kind, true);
        for (flooding, runs) in [(false, &calm), (true, &flood)] {
            let heavy = runs
                .iter()
                .filter_map(|o| o.heavy_share)
                .collect::<Vec<_>>();
            let o = Outcome {
                kind,
                flood: flooding,
                grants_per_s: med(runs, |o| o.grants_per_s),
                jain: med(runs, |o| o.jain),
                heavy_share: (!heavy.is_empty()).then(|| median(&mut heavy.clone())),
                light_p50_ms: med(runs, |o| o.light_p50_ms),
                light_p99_ms: med(runs, |o| o.light_p99_ms),
                max_gap_ms: med(runs, |o| o.max_gap_ms),
                errors: 0,
                clean: true,
            };
            if table {
                row("", &o);
            }
        }
        let ratio = med(&flood, |o| o.light_p99_ms) / med(&calm, |o| o.light_p99_ms);
        ratios.push((kind, ratio, med(&flood, |o| o.jain)));
    }
    println!();
    for (kind, ratio, _) in &ratios {
        println!(
            "{}: median light p99 under the flood / without it = {ratio:.2}x",
            kind.name()
        );
    }
    if let Some((_, ratio, index)) = ratios.iter().find(|(k, _, _)| *k == Kind::Pools) {
        println!(
            "target Jain's index >= 0.99 under the flood: {index:.4} ({})",
            if *index >= 0.99 { "met" } else { "missed" }
        );
        println!(
            "target light p99 under the flood <= 1.1x its p99 with no flood: {ratio:.2}x ({})",
            if *ratio <= 1.1 { "met" } else { "missed" }
        );
    }
    let outstanding =
        settings.heavy_submitters() + settings.light_tenants * settings.light_submitters;
    println!(
        "(a fair share under the flood is {:.1}% per tenant; the heavy tenant keeps {:.1}% of \
         the outstanding requests)",
        100.0 / (settings.light_tenants + 1) as f64,
        100.0 * settings.heavy_submitters() as f64 / outstanding as f64
    );
}
