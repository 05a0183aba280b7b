//! The process's resident set size (shared by `examples/memory/` and
//! `examples/soak/`; included with `#[path]`).

/// Resident set size in bytes, from `/proc/self/status` (Linux only).
pub(crate) fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
