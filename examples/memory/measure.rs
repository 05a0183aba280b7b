//! Reading memory: RSS, the counting allocator and the pools' accounting.

use std::time::Duration;

use crate::registry::Registry;
use crate::rss::rss;
use crate::GLOBAL;

/// One measurement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    rss: Option<u64>,
    heap: i64,
    blocks: i64,
    accounted: u64,
}

/// Live heap bytes, as the counting allocator sees them. A `realloc`
/// already adds its growth to `bytes_allocated` (and its shrinkage to
/// `bytes_deallocated`); `bytes_reallocated` is the same net change again,
/// so it is not added.
fn heap() -> i64 {
    let stats = GLOBAL.stats();
    stats.bytes_allocated as i64 - stats.bytes_deallocated as i64
}

/// Live heap blocks (allocations not yet freed).
fn blocks() -> i64 {
    let stats = GLOBAL.stats();
    stats.allocations as i64 - stats.deallocations as i64
}

pub(crate) async fn sample(registries: &[Registry]) -> Sample {
    // Let freshly spawned tasks and actors run before reading.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Sample {
        rss: rss(),
        heap: heap(),
        blocks: blocks(),
        accounted: registries
            .iter()
            .map(|r| u64::from(r.pools.snapshot().metadata_bytes))
            .sum(),
    }
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("n/a".into(), |b| {
        format!("{:.1}", b as f64 / (1024.0 * 1024.0))
    })
}

/// One table row: the phase's totals and its growth per item.
pub(crate) fn row(phase: &str, items: usize, before: Sample, after: Sample) -> Option<f64> {
    let per = |delta: i64| delta as f64 / items.max(1) as f64;
    let rss_per = match (before.rss, after.rss) {
        (Some(b), Some(a)) => Some(per(a as i64 - b as i64)),
        _ => None,
    };
    println!(
        "{:<34} {:>8} {:>9} {:>10} {:>12} {:>12} {:>11} {:>13}",
        phase,
        mib(after.rss),
        rss_per.map_or("n/a".into(), |b| format!("{b:.0}")),
        format!("{:.1}", after.heap as f64 / (1024.0 * 1024.0)),
        format!("{:.0}", per(after.heap - before.heap)),
        format!("{:.1}", per(after.blocks - before.blocks)),
        after.accounted,
        format!(
            "{:.0}",
            per(after.accounted as i64 - before.accounted as i64)
        ),
    );
    rss_per
}
