//! What the abuse load generators (`abuse-load`, `abuse-streams`) share: the cheap reads they
//! measure, latency percentiles, status counts and a process's peak resident memory.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// CPU seconds (user + system) process `pid` has used so far, from `/proc/<pid>/stat`; 0 when
/// unreadable. Assumes the usual 100 clock ticks per second.
pub fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at the state, field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU seconds the whole machine has spent busy (not idle or waiting), from `/proc/stat`.
pub fn machine_busy_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu: Vec<f64> = stat.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let total: f64 = cpu.iter().sum();
    let idle = cpu.get(3).copied().unwrap_or(0.0) + cpu.get(4).copied().unwrap_or(0.0);
    (total - idle) / 100.0
}

/// The status of a response read to its end: its code, `<code>-cut` when the body broke off, or
/// `error` when no response came.
pub async fn status_of(res: Result<reqwest::Response, reqwest::Error>) -> String {
    match res {
        Ok(r) => {
            let s = r.status().as_u16().to_string();
            if r.bytes().await.is_ok() { s } else { format!("{s}-cut") }
        }
        Err(_) => "error".to_owned(),
    }
}

/// Sequential GETs of `url` with `token` until `stop` (or `n` of them), each counted as `cheap`:
/// their latencies in ms, sorted.
pub async fn cheap_reads(client: reqwest::Client, url: String, token: String, n: Option<usize>, stop: Arc<AtomicBool>, statuses: Statuses) -> Vec<f64> {
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) && n.is_none_or(|n| out.len() < n) {
        let t = Instant::now();
        let status = status_of(client.get(&url).bearer_auth(&token).send().await).await;
        out.push(t.elapsed().as_secs_f64() * 1000.0);
        count(&statuses, "cheap", &status);
    }
    out.sort_by(f64::total_cmp);
    out
}

/// [`cheap_reads`] as another user would make them: on a thread, runtime and connection pool of
/// their own, so they measure the services' latency, not the attacking process's queue of
/// tasks. Empty when no runtime or client can be made.
pub fn cheap_reads_apart(url: String, token: String, n: Option<usize>, stop: Arc<AtomicBool>, statuses: Statuses) -> std::thread::JoinHandle<Vec<f64>> {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return Vec::new() };
        let Ok(client) = reqwest::Client::builder().timeout(Duration::from_secs(60)).build() else { return Vec::new() };
        rt.block_on(cheap_reads(client, url, token, n, stop, statuses))
    })
}
