//! The soak's samples, its RSS curve and the flatness verdict.

use std::time::Duration;

use provider_pools::Snapshot;

use crate::rss::rss;

/// One sample, taken when the completed requests crossed a mark.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub(crate) requests: u64,
    pub(crate) elapsed: Duration,
    pub(crate) rss: Option<u64>,
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
        Self {
            requests,
            elapsed,
            rss: rss(),
            snapshot,
            rotations,
        }
    }

    /// One progress line.
    pub(crate) fn print(&self) {
        let s = &self.snapshot;
        println!(
            "[{:>9} requests] {:>7.1} s | RSS {:>7} MiB | metadata {:>6} B | conns active {:>2} idle {:>3} connecting {} retired {:>2} | epochs configured {} retained {} | rotations {}",
            self.requests,
            self.elapsed.as_secs_f64(),
            mib(self.rss),
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

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("n/a".into(), |b| {
        format!("{:.1}", b as f64 / (1024.0 * 1024.0))
    })
}

/// The verdict on RSS flatness after warm-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass,
    Fail,
    /// The run ended before a second sample after warm-up (or RSS is not
    /// readable here).
    NotJudged,
}

/// Every sample from the warm-up mark on within `tolerance` (a fraction) of
/// the warm-up sample's RSS.
pub(crate) fn judge(samples: &[Sample], warmup: u64, tolerance: f64) -> (Verdict, Option<u64>) {
    let mut after = samples.iter().filter(|s| s.requests >= warmup);
    let Some(base) = after.next().and_then(|s| s.rss) else {
        return (Verdict::NotJudged, None);
    };
    let mut judged = false;
    for s in after {
        let Some(rss) = s.rss else {
            return (Verdict::NotJudged, Some(base));
        };
        judged = true;
        if (rss as f64 - base as f64).abs() > base as f64 * tolerance {
            return (Verdict::Fail, Some(base));
        }
    }
    if judged {
        (Verdict::Pass, Some(base))
    } else {
        (Verdict::NotJudged, Some(base))
    }
}

/// The RSS curve as a Markdown table (pasted into RELIABILITY.md).
pub(crate) fn table(samples: &[Sample], base: Option<u64>) {
    println!("| requests | elapsed s | RSS MiB | vs warm-up | metadata B | conns active/idle/connecting/retired | epochs configured/retained | rotations |");
    println!("| ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |");
    for s in samples {
        let delta = match (s.rss, base) {
            (Some(rss), Some(base)) => {
                format!("{:+.1} %", (rss as f64 / base as f64 - 1.0) * 100.0)
            }
            _ => "-".into(),
        };
        let c = &s.snapshot.connections;
        println!(
            "| {} | {:.1} | {} | {} | {} | {}/{}/{}/{} | {}/{} | {} |",
            s.requests,
            s.elapsed.as_secs_f64(),
            mib(s.rss),
            delta,
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
