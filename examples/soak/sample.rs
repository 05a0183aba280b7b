//! The soak's samples, its RSS curve and the flatness verdict.
//!
//! Each sample reads, beside the pools' snapshot: `VmRSS` (what the verdict
//! judges) and its split into `RssAnon` (heap, stacks, allocator arenas)
//! and `RssFile` (the binary's and libraries' pages touched so far), the
//! thread count, and the live heap as the counting allocator sees it — so
//! a growing RSS can be told apart: live heap growing is a leak; live heap
//! flat and `RssAnon` growing is the allocator keeping freed memory;
//! `RssFile` growing is code paths run for the first time.

use std::time::Duration;

use provider_pools::Snapshot;

use crate::rss::rss;
use crate::GLOBAL;

/// Live heap bytes and blocks, as the counting allocator sees them.
///
/// `stats_alloc` already adds a reallocation's growth to `bytes_allocated`
/// (and its shrinkage to `bytes_deallocated`); `bytes_reallocated` is the
/// same net change again, so it is not added.
fn heap() -> (i64, i64) {
    let stats = GLOBAL.stats();
    let bytes = stats.bytes_allocated as i64 - stats.bytes_deallocated as i64;
    let blocks = stats.allocations as i64 - stats.deallocations as i64;
    (bytes, blocks)
}

/// `RssAnon` and `RssFile` in bytes and `Threads`, from `/proc/self/status`
/// (Linux only).
fn status() -> Option<(u64, u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some((
        field("RssAnon:")? * 1024,
        field("RssFile:")? * 1024,
        field("Threads:")?,
    ))
}

/// One sample, taken when the completed requests crossed a mark.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub(crate) requests: u64,
    pub(crate) elapsed: Duration,
    /// `VmRSS`: what the verdict judges.
    pub(crate) rss: Option<u64>,
    /// `RssAnon`, `RssFile` and `Threads`.
    pub(crate) status: Option<(u64, u64, u64)>,
    /// Live heap bytes (counting allocator).
    pub(crate) heap: i64,
    /// Live heap blocks.
    pub(crate) blocks: i64,
    pub(crate) snapshot: Snapshot,
    pub(crate) rotations: u64,
}

impl Sample {
    pub(crate) fn take(
        requests: u64,
        elapsed: Duration,
        snapshot: Snapshot,
        rotations: u64,
    ) -> Self {
        let (heap, blocks) = heap();
        Self {
            requests,
            elapsed,
            rss: rss(),
            status: status(),
            heap,
            blocks,
            snapshot,
            rotations,
        }
    }

    fn anon(&self) -> Option<u64> {
        self.status.map(|(anon, _, _)| anon)
    }

    fn file(&self) -> Option<u64> {
        self.status.map(|(_, file, _)| file)
    }

    fn threads(&self) -> String {
        self.status
            .map_or("n/a".into(), |(_, _, threads)| threads.to_string())
    }

    /// One progress line.
    pub(crate) fn print(&self) {
        let s = &self.snapshot;
        println!(
            "[{:>9} requests] {:>7.1} s | RSS {:>5} MiB (anon {:>5}, file {:>5}) | heap {:>6} KiB in {:>5} blocks | threads {:>2} | metadata {:>6} B | conns active {:>2} idle {:>3} connecting {} retired {:>2} | epochs configured {} retained {} | rotations {}",
            self.requests,
            self.elapsed.as_secs_f64(),
            mib(self.rss),
            mib(self.anon()),
            mib(self.file()),
            self.heap / 1024,
            self.blocks,
            self.threads(),
            s.metadata_bytes,
            s.connections.active,
            s.connections.idle,
            s.connections.connecting,
            s.connections.retired,
            s.configured_epochs,
            s.retained_epochs,
            self.rotations,
        );
    }
}

/// The working set's peak while priming: the most connections and running
/// requests seen at once, and the largest live heap, polled every few
/// milliseconds.
#[derive(Debug, Default)]
pub(crate) struct Peak {
    connections: u64,
    running: u64,
    heap: i64,
    polls: u64,
}

impl Peak {
    pub(crate) fn observe(&mut self, snapshot: &Snapshot) {
        let c = &snapshot.connections;
        self.connections = self
            .connections
            .max((c.active + c.idle + c.connecting + c.retired) as u64);
        self.running = self.running.max(snapshot.running_requests as u64);
        self.heap = self.heap.max(heap().0);
        self.polls += 1;
    }

    /// The line that ends priming.
    pub(crate) fn print(&self, requests: u64, elapsed: Duration) {
        let status = status();
        println!(
            "[{requests:>9} requests] {:>7.1} s | primed: peak {} connections, {} running requests, live heap {} KiB ({} polls) | RSS now {} MiB (anon {}) | origin answers at once from here",
            elapsed.as_secs_f64(),
            self.connections,
            self.running,
            self.heap / 1024,
            self.polls,
            mib(rss()),
            mib(status.map(|(anon, _, _)| anon)),
        );
    }
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("n/a".into(), |b| {
        format!("{:.2}", b as f64 / (1024.0 * 1024.0))
    })
}

/// The verdict on RSS flatness after warm-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass,
    Fail,
    /// No sample after the warm-up one (the run was shorter than warm-up
    /// plus one sampling interval), or RSS is not readable here.
    NotJudged,
}

/// The judged band: the baseline is the sample at the warm-up mark (the
/// first at or after it); every later sample must lie within `tolerance`
/// (a fraction) of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Judgement {
    pub(crate) verdict: Verdict,
    /// The baseline RSS.
    pub(crate) base: Option<u64>,
    /// The judged samples' lowest and highest RSS relative to the baseline
    /// (fractions), when any sample was judged.
    pub(crate) range: Option<(f64, f64)>,
}

pub(crate) fn judge(samples: &[Sample], warmup: u64, tolerance: f64) -> Judgement {
    let mut after = samples.iter().filter(|s| s.requests >= warmup);
    let not_judged = |base| Judgement {
        verdict: Verdict::NotJudged,
        base,
        range: None,
    };
    let Some(base) = after.next().and_then(|s| s.rss) else {
        return not_judged(None);
    };
    let mut range: Option<(f64, f64)> = None;
    for s in after {
        let Some(rss) = s.rss else {
            return not_judged(Some(base));
        };
        let delta = rss as f64 / base as f64 - 1.0;
        range = Some(range.map_or((delta, delta), |(lo, hi)| (lo.min(delta), hi.max(delta))));
    }
    let verdict = match range {
        None => Verdict::NotJudged,
        Some((lo, hi)) if lo < -tolerance || hi > tolerance => Verdict::Fail,
        Some(_) => Verdict::Pass,
    };
    Judgement {
        verdict,
        base: Some(base),
        range,
    }
}

/// The RSS curve as a Markdown table (pasted into RELIABILITY.md).
pub(crate) fn table(samples: &[Sample], base: Option<u64>) {
    println!("| requests | elapsed s | RSS MiB | vs warm-up | anon / file MiB | live heap KiB (blocks) | threads | metadata B | conns active/idle/connecting/retired | epochs configured/retained | rotations |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |");
    for s in samples {
        let delta = match (s.rss, base) {
            (Some(rss), Some(base)) => {
                format!("{:+.1} %", (rss as f64 / base as f64 - 1.0) * 100.0)
            }
            _ => "-".into(),
        };
        let c = &s.snapshot.connections;
        println!(
            "| {} | {:.1} | {} | {} | {} / {} | {} ({}) | {} | {} | {}/{}/{}/{} | {}/{} | {} |",
            s.requests,
            s.elapsed.as_secs_f64(),
            mib(s.rss),
            delta,
            mib(s.anon()),
            mib(s.file()),
            s.heap / 1024,
            s.blocks,
            s.threads(),
            s.snapshot.metadata_bytes,
            c.active,
            c.idle,
            c.connecting,
            c.retired,
            s.snapshot.configured_epochs,
            s.snapshot.retained_epochs,
            s.rotations,
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use provider_pools::{ConnectionCounts, ControlState, Snapshot};

    use super::{judge, Sample, Verdict};

    const MIB: u64 = 1024 * 1024;

    /// A sample at `requests` with `rss` MiB (`None`: unreadable).
    fn sample(requests: u64, rss: Option<u64>) -> Sample {
        Sample {
            requests,
            elapsed: Duration::ZERO,
            rss: rss.map(|mib| mib * MIB),
            status: None,
            heap: 0,
            blocks: 0,
            snapshot: Snapshot {
                configured_epochs: 0,
                retained_epochs: 0,
                clients: 0,
                connections: ConnectionCounts::default(),
                pending_requests: 0,
                running_requests: 0,
                workers: 0,
                drivers: 0,
                cleanup_jobs: 0,
                failed_cleanup: 0,
                metadata_bytes: 0,
                control: ControlState::Running,
            },
            rotations: 0,
        }
    }

    #[test]
    fn samples_within_five_percent_of_the_warm_up_sample_pass_and_earlier_ones_are_ignored() {
        // 100 MiB at the 200 mark; the 100 mark (50 MiB) is warm-up.
        let samples = [
            sample(100, Some(50)),
            sample(200, Some(100)),
            sample(300, Some(104)),
            sample(400, Some(96)),
        ];
        let judged = judge(&samples, 200, 0.05);
        assert_eq!(judged.verdict, Verdict::Pass);
        assert_eq!(judged.base, Some(100 * MIB));
        let (lo, hi) = judged.range.expect("two samples judged");
        assert!(
            (lo + 0.04).abs() < 1e-9 && (hi - 0.04).abs() < 1e-9,
            "{lo} {hi}"
        );
    }

    #[test]
    fn one_sample_past_five_percent_after_warm_up_fails() {
        let grows = [
            sample(200, Some(100)),
            sample(300, Some(102)),
            sample(400, Some(106)),
        ];
        assert_eq!(judge(&grows, 200, 0.05).verdict, Verdict::Fail);
        let shrinks = [sample(200, Some(100)), sample(300, Some(94))];
        assert_eq!(judge(&shrinks, 200, 0.05).verdict, Verdict::Fail);
    }

    #[test]
    fn the_baseline_is_the_first_sample_at_or_after_the_warm_up_mark() {
        // Warm-up 150: the 200 sample (100 MiB) is the baseline, so 104 passes
        // although it is 30 % above the 100 sample.
        let samples = [
            sample(100, Some(80)),
            sample(200, Some(100)),
            sample(300, Some(104)),
        ];
        let judged = judge(&samples, 150, 0.05);
        assert_eq!(judged.base, Some(100 * MIB));
        assert_eq!(judged.verdict, Verdict::Pass);
    }

    #[test]
    fn a_run_without_a_sample_after_the_baseline_or_without_rss_is_not_judged() {
        let short = [sample(100, Some(100)), sample(200, Some(100))];
        assert_eq!(judge(&short, 200, 0.05).verdict, Verdict::NotJudged);
        let unreadable = [sample(200, Some(100)), sample(300, None)];
        assert_eq!(judge(&unreadable, 200, 0.05).verdict, Verdict::NotJudged);
        let no_rss = [sample(200, None), sample(300, None)];
        assert_eq!(judge(&no_rss, 200, 0.05).verdict, Verdict::NotJudged);
    }
}
