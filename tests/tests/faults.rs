//! Faults (issue 21), under a steady read load through edge-rest:
//! - a core replica that hangs: one of two is frozen (SIGSTOP) for 4 s and thawed; no read fails
//!   and none takes 2 s or more, because the edge hedges a read that has no reply after
//!   GRPC_HEDGE_AFTER_MS on the other replica and then skips the frozen one;
//! - the database connections cut under the services (as a database restart cuts them): every
//!   answer is 200 or 503 with `Retry-After`, never a 500 or a hang, and full service follows
//!   within 2 s.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lost_database_connection_is_a_503_with_retry_after_never_a_500() {
    let app = tokio::task::spawn_blocking(|| {
        e2e_tests::start(Spec { dataset: Dataset::Demo, name: Some("faults_db".into()), ..Spec::default() }).unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
    .await
    .expect("join");
    let client = e2e_tests::http_client().build().expect("client");
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let (client, stop, base) = (client.clone(), stop.clone(), app.rest_url.clone());
            tokio::spawn(async move {
                let (mut n, mut bad) = (0u32, Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    // Reads that keep a statement running a little, so some are in flight when
                    // their connection is cut.
                    let path = if n % 2 == 0 { format!("/items/articles?limit=50&sort=-id&filter[id][_gte]={}", w) } else { "/items/authors?limit=5".to_owned() };
                    let res = tokio::time::timeout(Duration::from_secs(10), client.get(format!("{base}{path}")).bearer_auth(ADMIN_TOKEN).send()).await;
                    match res {
                        Ok(Ok(r)) if r.status() == 200 => {}
                        Ok(Ok(r)) if r.status() == 503 && r.headers().contains_key("retry-after") => {}
                        Ok(Ok(r)) => bad.push(format!("{path}: {} {:?}", r.status(), r.text().await.unwrap_or_default())),
                        Ok(Err(e)) => bad.push(format!("{path}: {e}")),
                        Err(_) => bad.push(format!("{path}: no answer in 10 s")),
                    }
                    n += 1;
                }
                (n, bad)
            })
        })
        .collect();
    // Every connection the services hold to this database is cut, five times (what a database
    // restart does to them, as seen from the services).
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        e2e_tests::exec(&app, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut total, mut bad) = (0, Vec::new());
    for w in workers {
        let (n, b) = w.await.expect("worker");
        total += n;
        bad.extend(b);
    }
    assert!(total > 50, "the load ran: {total} reads");
    assert!(bad.is_empty(), "{} of {total} reads answered neither 200 nor 503 with Retry-After: {:?}", bad.len(), &bad[..bad.len().min(5)]);
    // Full service again within 2 s.
    let started = Instant::now();
    loop {
        let r = client.get(format!("{}/items/authors?limit=1", app.rest_url)).bearer_auth(ADMIN_TOKEN).send().await.expect("request");
        if r.status() == 200 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(2), "still {} after 2 s", r.status());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
