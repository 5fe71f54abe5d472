//! The abuse benchmark's load generator (`bench/abuse`, docs/benchmark.md): while a flood of logins with
//! distinct huge emails and a burst of concurrent deep nested reads hit the edge, one client
//! keeps making a cheap read and records its latency; the peak RSS of the named processes is read
//! from `/proc/<pid>/status` (VmHWM) at the end.
//!
//! usage: abuse-load BASE_URL TOKEN LOGINS EMAIL_BYTES LOGIN_CONNS DEEP_READS CHEAP_PATH DEEP_PATH NAME=PID...
//! prints (key=value lines): the cheap read's idle and under-attack p50/p99 (ms), their ratio,
//! the status codes seen per kind of request, and each process's peak RSS (MiB).

use e2e_tests::load::{Statuses, cheap_reads, cheap_reads_apart, count, peak_rss_mib, percentile};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 9 {
        return Err("usage: abuse-load BASE_URL TOKEN LOGINS EMAIL_BYTES LOGIN_CONNS DEEP_READS CHEAP_PATH DEEP_PATH NAME=PID...".into());
    }
    let base = args[1].trim_end_matches('/').to_owned();
    let token = args[2].clone();
    let logins: usize = args[3].parse()?;
    let email_bytes: usize = args[4].parse()?;
    let login_conns: usize = args[5].parse()?;
    let deep_reads: usize = args[6].parse()?;
    let cheap = format!("{base}{}", args[7]);
    let deep = format!("{base}{}", args[8]);
    let pids: Vec<(String, String)> = args[9..].iter().filter_map(|a| a.split_once('=')).map(|(n, p)| (n.to_owned(), p.to_owned())).collect();
    let client = reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?;
    let statuses: Statuses = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));

    let idle = cheap_reads(client.clone(), cheap.clone(), token.clone(), Some(300), stop.clone(), statuses.clone()).await;
    // The cheap reader is another user (see `cheap_reads_apart`).
    let sampler = cheap_reads_apart(cheap.clone(), token.clone(), None, stop.clone(), statuses.clone());
    let started = Instant::now();

    // The login flood: LOGINS requests, LOGIN_CONNS at a time, each with a new huge email.
    let gate = Arc::new(tokio::sync::Semaphore::new(login_conns.max(1)));
    let mut tasks = Vec::with_capacity(logins + deep_reads);
    for i in 0..logins {
        let (client, gate, statuses, url) = (client.clone(), gate.clone(), statuses.clone(), format!("{base}/auth/login"));
        tasks.push(tokio::spawn(async move {
            let Ok(_permit) = gate.acquire_owned().await else { return };
            let mut email = format!("{i}-");
            email.push_str(&"a".repeat(email_bytes.saturating_sub(email.len() + 12)));
            email.push_str("@example.com");
            let body = serde_json::json!({"email": email, "password": "not-the-password"}).to_string();
            let status = match client.post(url).header("content-type", "application/json").body(body).send().await {
                Ok(r) => r.status().as_u16().to_string(),
                Err(_) => "error".to_owned(),
            };
            count(&statuses, "login", &status);
        }));
    }
    // The deep reads: all at once.
    for _ in 0..deep_reads {
        let (client, statuses, url, token) = (client.clone(), statuses.clone(), deep.clone(), token.clone());
        tasks.push(tokio::spawn(async move {
            let status = match client.get(url).bearer_auth(token).send().await {
                Ok(r) => {
                    let s = r.status().as_u16().to_string();
                    let _ = r.bytes().await;
                    s
                }
                Err(_) => "error".to_owned(),
            };
            count(&statuses, "deep", &status);
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let attack_secs = started.elapsed().as_secs_f64();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let attacked = sampler.join().map_err(|_| "the cheap reader panicked")?;

    let (i50, i99) = (percentile(&idle, 0.5), percentile(&idle, 0.99));
    let (a50, a99) = (percentile(&attacked, 0.5), percentile(&attacked, 0.99));
    println!("attack_seconds={attack_secs:.1}");
    println!("cheap_idle_p50_ms={i50:.2} cheap_idle_p99_ms={i99:.2}");
    println!("cheap_attack_p50_ms={a50:.2} cheap_attack_p99_ms={a99:.2} samples={}", attacked.len());
    println!("cheap_p99_ratio={:.2}", if i99 > 0.0 { a99 / i99 } else { 0.0 });
    if let Ok(m) = statuses.lock() {
        for (k, v) in m.iter() {
            println!("status {k}={v}");
        }
    }
    for (name, pid) in &pids {
        println!("peak_rss_mib {name}={}", peak_rss_mib(pid));
    }
    Ok(())
}
