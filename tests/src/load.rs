//! What the load generators (`src/bin/*-load.rs`, `abuse-streams`) share: latency percentiles,
//! status counts and a process's peak resident memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Answers counted by `kind:status`.
pub type Statuses = Arc<Mutex<BTreeMap<String, u64>>>;

/// The `p` percentile (0–1) of `sorted` (0 when empty).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len().max(1) as f64 - 1.0) * p).round() as usize;
    sorted.get(i.min(sorted.len().saturating_sub(1))).copied().unwrap_or(0.0)
}

/// Counts one answer of `kind` with `status`.
pub fn count(statuses: &Statuses, kind: &str, status: &str) {
    if let Ok(mut m) = statuses.lock() {
        *m.entry(format!("{kind}:{status}")).or_default() += 1;
    }
}

/// The peak resident memory (VmHWM) of process `pid` in MiB, one decimal; `?` when unreadable.
pub fn peak_rss_mib(pid: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|kb| kb.parse::<u64>().ok()))
        .map_or_else(|| "?".to_owned(), |kb| format!("{:.1}", kb as f64 / 1024.0))
}
