//! Faults (issue 21), first slice: a core replica that hangs. Under a steady read load through
//! edge-rest over two core replicas, one replica is frozen (SIGSTOP) for 4 s and thawed: no read
//! fails and none takes 2 s or more, because the edge hedges a read that has no reply after
//! GRPC_HEDGE_AFTER_MS on the other replica and then skips the frozen one.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn start() -> TestApp {
    e2e_tests::start(Spec { dataset: Dataset::Demo, name: Some("faults_hang".into()), replicas: 2, ..Spec::default() }).unwrap_or_else(|e| panic!("environment: {e:#}"))
}

fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status().expect("kill").success();
    assert!(ok, "kill -{sig} {pid}");
}

/// Thaws the replica however the test ends.
struct Thaw(u32);

impl Drop for Thaw {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").arg("-CONT").arg(self.0.to_string()).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hung_core_replica_fails_no_read() {
    let app = tokio::task::spawn_blocking(start).await.expect("join");
    let core = app.pids("core");
    assert_eq!(core.len(), 2, "two core replicas");
    let client = e2e_tests::http_client().build().expect("client");
    let stop = Arc::new(AtomicBool::new(false));
    // 8 connections reading items by key and small lists, as fast as they are answered.
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let (client, stop, base) = (client.clone(), stop.clone(), app.rest_url.clone());
            tokio::spawn(async move {
                let (mut n, mut failed, mut slowest) = (0u32, Vec::new(), Duration::ZERO);
                while !stop.load(Ordering::Relaxed) {
                    let path = if n % 2 == 0 { format!("/items/articles/{}", 1 + (w + n) % 20) } else { "/items/authors?limit=5&fields=id,name".to_owned() };
                    let started = Instant::now();
                    let res = tokio::time::timeout(Duration::from_secs(10), client.get(format!("{base}{path}")).bearer_auth(ADMIN_TOKEN).send()).await;
                    let took = started.elapsed();
                    slowest = slowest.max(took);
                    match res {
                        Ok(Ok(r)) if r.status() == 200 => {}
                        Ok(Ok(r)) => failed.push(format!("{path}: {}", r.status())),
                        Ok(Err(e)) => failed.push(format!("{path}: {e}")),
                        Err(_) => failed.push(format!("{path}: no answer in 10 s")),
                    }
                    n += 1;
                }
                (n, failed, slowest)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let frozen = Thaw(core[0]);
    signal(frozen.0, "STOP");
    tokio::time::sleep(Duration::from_secs(4)).await;
    signal(frozen.0, "CONT");
    drop(frozen);
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut total, mut failed, mut slowest) = (0, Vec::new(), Duration::ZERO);
    for w in workers {
        let (n, f, s) = w.await.expect("worker");
        total += n;
        failed.extend(f);
        slowest = slowest.max(s);
    }
    assert!(total > 100, "the load ran: {total} reads");
    assert!(failed.is_empty(), "{} of {total} reads failed: {:?}", failed.len(), &failed[..failed.len().min(5)]);
    assert!(slowest < Duration::from_secs(2), "the slowest of {total} reads took {slowest:?}");
}
