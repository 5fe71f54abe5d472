//! Faults (docs/operations.md "What failures look like"), under a steady load through edge-rest ([`Load`]):
//! - a core replica that hangs: one of two is frozen (SIGSTOP) for 4 s and thawed under reads,
//!   creates and updates; no request fails and none takes 2 s or more, because the edge hedges
//!   a read, or an item write with its write key, that has no reply after GRPC_HEDGE_AFTER_MS on
//!   the other replica and then skips the frozen one; every create is stored exactly once;
//! - a core replica killed (SIGKILL) and started again, three times, under reads, creates and
//!   updates: no request fails or takes 2 s (item writes are retried under their write key),
//!   every create is stored exactly once;
//! - the database connections cut under the services (as a database restart cuts them): every
//!   answer is 200 or 503 with `Retry-After`, never a 500 or a hang, and full service follows
//!   within 2 s;
//! - the environment's own PostgreSQL stopped for 4 s and started again, under reads, writes and
//!   logins: 200 or 503 with `Retry-After` throughout, readiness (the core's gRPC health, the
//!   edge's `/server/health`) off while it is away and back after, full service within 2 s of
//!   its return, and every write answered 200 is in the table exactly once (none answered 503
//!   is);
//! - a rolling restart (SIGTERM, drain, start again; [`TestApp::roll`]) of both core and both
//!   auth replicas, one at a time, under reads, writes and logins: no request fails, and every
//!   write is stored once;
//! - a rolling restart of both edge-rest replicas behind a balancer that follows their readiness
//!   ([`Edges`], as a Kubernetes Service): no request fails, every write is stored once.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp};
use reqwest::Method;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tonic_health::pb::health_check_response::ServingStatus;

fn start(spec: Spec) -> TestApp {
    e2e_tests::start(spec).unwrap_or_else(|e| panic!("environment: {e:#}"))
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

/// One request of a [`Load`]: method, path, JSON body.
type Call = (Method, String, Option<serde_json::Value>);

/// One answer of a [`Load`].
#[derive(Debug)]
struct Answer {
    /// When the request was sent, from the start of the load.
    at: Duration,
    took: Duration,
    call: String,
    /// The status, or why there was none (transport error, no answer in 10 s).
    outcome: Result<u16, String>,
    retry_after: bool,
    /// The write's `name`, for a POST.
    wrote: Option<String>,
}

impl Answer {
    fn is_ok(&self) -> bool {
        self.outcome == Ok(200)
    }

    /// 200, or 503 with Retry-After: what a dependency's absence may look like.
    fn is_ok_or_unavailable(&self) -> bool {
        self.is_ok() || (self.outcome == Ok(503) && self.retry_after)
    }
}

/// A steady load: `workers` connections, each sending `call(worker, n)` for its n-th request as
/// soon as the previous one is answered, until [`Load::finish`].
struct Load {
    started: Instant,
    stop: Arc<AtomicBool>,
    workers: Vec<tokio::task::JoinHandle<Vec<Answer>>>,
}

/// Where a [`Load`]'s requests go: round-robin over the edge-rest processes marked ready, as a
/// Kubernetes Service sends to the pods whose readiness probe passes ([`Edges::probe`]).
#[derive(Clone)]
struct Edges {
    urls: Arc<Vec<String>>,
    ready: Arc<Vec<AtomicBool>>,
    next: Arc<std::sync::atomic::AtomicUsize>,
}

impl Edges {
    /// All of `urls`, ready.
    fn new(urls: Vec<String>) -> Self {
        let ready = urls.iter().map(|_| AtomicBool::new(true)).collect();
        Self { urls: Arc::new(urls), ready: Arc::new(ready), next: Arc::default() }
    }

    /// The next ready edge (the first one when none is).
    fn pick(&self) -> String {
        let n = self.urls.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let i = (0..n).map(|k| (start + k) % n).find(|&i| self.ready[i].load(Ordering::Relaxed)).unwrap_or(0);
        self.urls[i].clone()
    }

    /// Probes each edge's `/server/health` every 100 ms (an answer within 500 ms, 200: ready),
    /// until the task is aborted.
    fn probe(&self) -> tokio::task::JoinHandle<()> {
        let edges = self.clone();
        tokio::spawn(async move {
            let client = e2e_tests::http_client().timeout(Duration::from_millis(500)).build().expect("client");
            loop {
                for (i, url) in edges.urls.iter().enumerate() {
                    let ok = client.get(format!("{url}/server/health")).send().await.is_ok_and(|r| r.status() == 200);
                    edges.ready[i].store(ok, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    }
}

impl Load {
    fn start(app: &TestApp, workers: usize, call: fn(usize, u32) -> Call) -> Self {
        Self::start_on(Edges::new(vec![app.rest_url.clone()]), workers, call)
    }

    /// [`Load::start`] over `edges`.
    fn start_on(edges: Edges, workers: usize, call: fn(usize, u32) -> Call) -> Self {
        let client = e2e_tests::http_client().build().expect("client");
        let (started, stop) = (Instant::now(), Arc::new(AtomicBool::new(false)));
        let workers = (0..workers)
            .map(|w| {
                let (client, stop, edges) = (client.clone(), stop.clone(), edges.clone());
                tokio::spawn(async move {
                    let mut answers = Vec::new();
                    let mut n = 0u32;
                    while !stop.load(Ordering::Relaxed) {
                        let base = edges.pick();
                        let (method, path, body) = call(w, n);
                        let wrote = body.as_ref().and_then(|b| b["name"].as_str().map(str::to_owned));
                        let mut req = client.request(method.clone(), format!("{base}{path}")).bearer_auth(ADMIN_TOKEN);
                        if let Some(b) = body {
                            req = req.json(&b);
                        }
                        let at = started.elapsed();
                        let res = tokio::time::timeout(Duration::from_secs(10), req.send()).await;
                        let took = started.elapsed() - at;
                        let (outcome, retry_after) = match res {
                            Ok(Ok(r)) => (Ok(r.status().as_u16()), r.headers().contains_key("retry-after")),
                            Ok(Err(e)) => (Err(e.to_string()), false),
                            Err(_) => (Err("no answer in 10 s".to_owned()), false),
                        };
                        answers.push(Answer { at, took, call: format!("{method} {path}"), outcome, retry_after, wrote });
                        n += 1;
                    }
                    answers
                })
            })
            .collect();
        Self { started, stop, workers }
    }

    /// Time since the load started.
    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// Stops the load; every answer.
    async fn finish(self) -> Vec<Answer> {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for w in self.workers {
            all.extend(w.await.expect("worker"));
        }
        all
    }
}

/// Fails listing the first few `answers` that do not pass `ok`.
fn assert_all<'a>(answers: impl IntoIterator<Item = &'a Answer>, what: &str, ok: impl Fn(&Answer) -> bool) {
    let all: Vec<&Answer> = answers.into_iter().collect();
    let bad: Vec<&&Answer> = all.iter().filter(|a| !ok(a)).collect();
    assert!(bad.is_empty(), "{} of {} answers are not {what}: {:?}", bad.len(), all.len(), &bad[..bad.len().min(5)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hung_core_replica_fails_no_request_and_applies_each_write_once() {
    // A write transaction left idle by the frozen replica ends after 0.8 s, so its locks are
    // gone before the write is sent to the other replica (GRPC_HEDGE_AFTER_MS, 1 s after the
    // request; the idle time counts from the frozen replica's last statement, which may come
    // after that: with an idle limit equal to the hedge, the write took 2.05 s once).
    let spec = Spec {
        dataset: Dataset::DemoWrites,
        name: Some("faults_hang".into()),
        replicas: 2,
        core_env: vec![("DB_WRITE_IDLE_TIMEOUT_MS".into(), "800".into())],
        ..Spec::default()
    };
    let app = tokio::task::spawn_blocking(|| start(spec)).await.expect("join");
    let core = app.pids("core");
    assert_eq!(core.len(), 2, "two core replicas");
    // 8 connections, as fast as they are answered: reads by key and of small lists, creates
    // (unique names, counted below) and updates of 4 shared items (their row locks contended).
    let load = Load::start(&app, 8, |w, n| match n % 4 {
        0 => (Method::GET, format!("/items/articles/{}", 1 + (w as u32 + n) % 20), None),
        1 => (Method::GET, "/items/authors?limit=5&fields=id,name".to_owned(), None),
        2 => (Method::POST, "/items/tags".to_owned(), Some(json!({"name": format!("hang-{w}-{n}")}))),
        _ => (Method::PATCH, format!("/items/articles/{}", 1 + w % 4), Some(json!({"title": format!("Hung {w}-{n}")}))),
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let frozen = Thaw(core[0]);
    signal(frozen.0, "STOP");
    tokio::time::sleep(Duration::from_secs(4)).await;
    signal(frozen.0, "CONT");
    drop(frozen);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let answers = load.finish().await;
    assert!(answers.len() > 100, "the load ran: {} requests", answers.len());
    assert_all(&answers, "200", Answer::is_ok);
    let slowest = answers.iter().max_by_key(|a| a.took).expect("answers");
    assert!(slowest.took < Duration::from_secs(2), "the slowest of {} requests took {:?}: {slowest:?}", answers.len(), slowest.took);
    let answered: std::collections::BTreeSet<String> = answers.iter().filter_map(|a| a.wrote.clone()).collect();
    assert_eq!(stored_tags(&app, "hang-").await, answered, "every create answered 200 is stored, once");
}

/// A core replica killed (SIGKILL: no drain) under reads and writes, then started again: the
/// calls it had are sent to the other replica (reads as always; item writes because their write
/// key makes a second attempt safe), so no request fails or takes 2 s, and every create is
/// stored exactly once, also one the killed replica had committed without answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_core_replica_fails_no_request_and_applies_each_write_once() {
    let spec = Spec { dataset: Dataset::DemoWrites, name: Some("faults_kill".into()), replicas: 2, ..Spec::default() };
    let mut app = tokio::task::spawn_blocking(|| start(spec)).await.expect("join");
    let load = Load::start(&app, 8, |w, n| match n % 3 {
        0 => (Method::GET, format!("/items/articles/{}", 1 + (w as u32 + n) % 20), None),
        1 => (Method::POST, "/items/tags".to_owned(), Some(json!({"name": format!("kill-{w}-{n}")}))),
        _ => (Method::PATCH, format!("/items/articles/{}", 1 + w % 4), Some(json!({"title": format!("Killed {w}-{n}")}))),
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    for index in [0, 1, 0] {
        app = tokio::task::spawn_blocking(move || {
            app.kill_and_restart("core", index).unwrap_or_else(|e| panic!("killing core {index}: {e:#}"));
            app
        })
        .await
        .expect("join");
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    let answers = load.finish().await;
    assert!(answers.len() > 100, "the load ran: {} requests", answers.len());
    assert_all(&answers, "200", Answer::is_ok);
    let slowest = answers.iter().max_by_key(|a| a.took).expect("answers");
    assert!(slowest.took < Duration::from_secs(2), "the slowest of {} requests took {:?}: {slowest:?}", answers.len(), slowest.took);
    let answered: std::collections::BTreeSet<String> = answers.iter().filter_map(|a| a.wrote.clone()).collect();
    assert_eq!(stored_tags(&app, "kill-").await, answered, "every create answered 200 is stored, once");
}

/// auth-service settings for a load with logins: they are attempts to the brute-force limiter,
/// so enough points for the load's.
fn login_limits() -> Vec<(String, String)> {
    ["AUTH_RATE_LIMIT_POINTS", "AUTH_RATE_LIMIT_ACCOUNT_POINTS", "AUTH_RATE_LIMIT_IP_POINTS"].map(|k| (k.to_owned(), "100000".to_owned())).to_vec()
}

/// Waits (at most 2 s) until edge-rest answers `/items/authors?limit=1` with 200; the time it took.
async fn full_service(app: &TestApp) -> Duration {
    let client = e2e_tests::http_client().build().expect("client");
    let started = Instant::now();
    loop {
        let r = client.get(format!("{}/items/authors?limit=1", app.rest_url)).bearer_auth(ADMIN_TOKEN).send().await.expect("request");
        if r.status() == 200 {
            return started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(2), "still {} after 2 s", r.status());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lost_database_connection_is_a_503_with_retry_after_never_a_500() {
    let app = tokio::task::spawn_blocking(|| start(Spec { dataset: Dataset::Demo, name: Some("faults_db".into()), ..Spec::default() })).await.expect("join");
    // Reads that keep a statement running a little, so some are in flight when their
    // connection is cut.
    let load = Load::start(&app, 8, |w, n| {
        let path = if n % 2 == 0 { format!("/items/articles?limit=50&sort=-id&filter[id][_gte]={w}") } else { "/items/authors?limit=5".to_owned() };
        (Method::GET, path, None)
    });
    // Every connection the services hold to this database is cut, five times (what a database
    // restart does to them, as seen from the services).
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        e2e_tests::exec(&app, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
            .await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answers = load.finish().await;
    assert!(answers.len() > 50, "the load ran: {} reads", answers.len());
    assert_all(&answers, "200 or 503 with Retry-After", Answer::is_ok_or_unavailable);
    full_service(&app).await;
}

/// The names of the tags starting with `prefix`, asserting none is stored twice.
async fn stored_tags(app: &TestApp, prefix: &str) -> std::collections::BTreeSet<String> {
    let sql = format!("SELECT json_build_array(count(*), count(DISTINCT name), coalesce(json_agg(name), '[]'))::text FROM tags WHERE name LIKE '{prefix}%'");
    let rows = app.sql(&sql).await;
    assert_eq!(rows[0], rows[1], "no write applied twice");
    rows[2].as_array().expect("names").iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
}

/// The core replica's readiness (`""`) and its `postgres` dependency, by gRPC health.
async fn core_health(url: &str) -> (i32, i32) {
    let channel = tonic::transport::Endpoint::from_shared(url.to_owned()).expect("url").connect().await.expect("core answers");
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let mut status = [0; 2];
    for (i, service) in ["", "postgres"].into_iter().enumerate() {
        // -1: not registered (yet).
        status[i] = health.check(tonic_health::pb::HealthCheckRequest { service: service.to_owned() }).await.map_or(-1, |r| r.into_inner().status);
    }
    (status[0], status[1])
}

/// Polls until the core's readiness and `postgres` are both `want` and the edge's
/// `/server/health` answers `edge_status`; the time it took (at most `within`).
async fn readiness(app: &TestApp, want: ServingStatus, edge_status: u16, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let core = core_health(&app.grpc_url).await;
        let edge = e2e_tests::send(app, Method::GET, "/server/health", None, &[], None).await.status;
        if core == (want as i32, want as i32) && edge == edge_status {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "after {within:?}: core (readiness, postgres) = {core:?}, edge /server/health = {edge}; wanted {want:?} and {edge_status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_database_is_503s_and_full_service_returns_within_2_s() {
    let app = tokio::task::spawn_blocking(|| {
        // A call that needs a new connection just as the database goes waits for one at most
        // DB_ACQUIRE_TIMEOUT_MS (1.5 s here); once the readiness check finds it away, calls
        // fail at once.
        let acquire = ("DB_ACQUIRE_TIMEOUT_MS".to_owned(), "1500".to_owned());
        let mut auth_env = login_limits();
        auth_env.push(acquire.clone());
        start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("faults_pg".into()),
            own_postgres: true,
            replicas: 2,
            core_env: vec![acquire],
            auth_env,
            ..Spec::default()
        })
    })
    .await
    .expect("join");
    let app = Arc::new(app);
    readiness(&app, ServingStatus::Serving, 200, Duration::from_secs(5)).await;
    // Reads, writes (each write's name is unique, so the table says which writes happened) and,
    // on one connection, logins (auth-service needs the database too).
    let load = Load::start(&app, 8, |w, n| match (w, n % 2) {
        (0, _) => (Method::POST, "/auth/login".to_owned(), Some(json!({"email": "admin@example.com", "password": "test-password"}))),
        (_, 0) => (Method::GET, format!("/items/articles/{}", 1 + (w as u32 + n) % 20), None),
        _ => (Method::POST, "/items/tags".to_owned(), Some(json!({"name": format!("pg-fault-{w}-{n}")}))),
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let a = app.clone();
    tokio::task::spawn_blocking(move || a.stop_postgres()).await.expect("join").expect("PostgreSQL stops");
    let down_at = load.now();
    // Readiness turns off while it is away: the core's (gRPC health `""` and `postgres`), and
    // through it the edge's /server/health.
    let noticed = readiness(&app, ServingStatus::NotServing, 503, Duration::from_secs(3)).await;
    tokio::time::sleep(Duration::from_secs(4).saturating_sub(noticed)).await;
    let a = app.clone();
    tokio::task::spawn_blocking(move || a.start_postgres()).await.expect("join").expect("PostgreSQL starts");
    let up_at = load.now();
    let back = readiness(&app, ServingStatus::Serving, 200, Duration::from_secs(2)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let answers = load.finish().await;

    let during: Vec<&Answer> = answers.iter().filter(|a| a.at >= down_at && a.at < up_at).collect();
    assert!(during.len() > 20, "the load ran while PostgreSQL was away: {} requests", during.len());
    assert!(during.iter().any(|a| a.outcome == Ok(503) && a.wrote.is_some()), "writes while it was away were answered 503");
    assert!(during.iter().any(|a| a.outcome == Ok(503) && a.call.contains("/auth/login")), "logins while it was away were answered 503");
    assert_all(&answers, "200 or 503 with Retry-After", Answer::is_ok_or_unavailable);
    let slowest = answers.iter().max_by_key(|a| a.took).expect("answers");
    assert!(slowest.took < Duration::from_secs(2), "never a hang: the slowest answer took {:?} ({slowest:?})", slowest.took);
    // Full service within 2 s of its return: every request sent after that is answered 200.
    let late: Vec<&Answer> = answers.iter().filter(|a| a.at >= up_at + Duration::from_secs(2)).collect();
    assert!(late.len() > 20, "the load ran after its return: {} requests", late.len());
    assert_all(late.iter().copied(), "200 two seconds after the return", Answer::is_ok);
    assert!(back < Duration::from_secs(2), "readiness back {back:?} after the return");
    // No write lost or applied twice: the rows are exactly the writes answered 200.
    let answered: std::collections::BTreeSet<String> = answers.iter().filter(|a| a.is_ok()).filter_map(|a| a.wrote.clone()).collect();
    assert!(answers.iter().any(|a| a.wrote.is_some() && a.outcome == Ok(503)), "some writes were refused while it was away");
    assert_eq!(stored_tags(&app, "pg-fault-").await, answered, "the rows are the writes answered 200");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_of_core_and_auth_fails_no_request_and_loses_no_write() {
    let spec = Spec { dataset: Dataset::DemoWrites, name: Some("faults_roll".into()), replicas: 2, auth_env: login_limits(), ..Spec::default() };
    let mut app = tokio::task::spawn_blocking(|| start(spec)).await.expect("join");
    // Reads, writes (unique names, counted below) and, on one connection, logins (auth-service).
    let load = Load::start(&app, 8, |w, n| match (w, n % 3) {
        (0, 0) => (Method::POST, "/auth/login".to_owned(), Some(json!({"email": "admin@example.com", "password": "test-password"}))),
        (_, 1) => (Method::POST, "/items/tags".to_owned(), Some(json!({"name": format!("roll-{w}-{n}")}))),
        _ => (Method::GET, format!("/items/articles/{}", 1 + (w as u32 + n) % 20), None),
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    // One replica at a time, as Kubernetes rolls a Deployment.
    for (name, index) in [("core", 0), ("core", 1), ("auth", 0), ("auth", 1)] {
        app = tokio::task::spawn_blocking(move || {
            app.roll(name, index).unwrap_or_else(|e| panic!("rolling {name} {index}: {e:#}"));
            app
        })
        .await
        .expect("join");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let answers = load.finish().await;
    assert!(answers.len() > 100, "the load ran: {} requests", answers.len());
    assert!(answers.iter().any(|a| a.call.contains("/auth/login")), "logins were part of the load");
    assert_all(&answers, "200", Answer::is_ok);
    let answered: std::collections::BTreeSet<String> = answers.iter().filter_map(|a| a.wrote.clone()).collect();
    assert_eq!(stored_tags(&app, "roll-").await, answered, "every write answered 200 is stored");
}

/// Edge replicas rolled one at a time behind a balancer that follows their readiness (as a
/// Kubernetes Service does): an edge given SIGTERM turns `/server/health` off at once, keeps
/// serving for SHUTDOWN_DELAY_MS while the balancer stops sending to it, then finishes what it
/// has; no request fails and every write is stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_of_the_edges_fails_no_request_behind_a_readiness_aware_balancer() {
    let spec = Spec {
        dataset: Dataset::DemoWrites,
        name: Some("faults_edges".into()),
        edges: 2,
        edge_env: vec![("SHUTDOWN_DELAY_MS".into(), "1000".into())],
        ..Spec::default()
    };
    let mut app = tokio::task::spawn_blocking(|| start(spec)).await.expect("join");
    let edges = Edges::new(app.rest_urls.clone());
    let probe = edges.probe();
    let load = Load::start_on(edges, 8, |w, n| match n % 2 {
        0 => (Method::GET, format!("/items/articles/{}", 1 + (w as u32 + n) % 20), None),
        _ => (Method::POST, "/items/tags".to_owned(), Some(json!({"name": format!("edge-{w}-{n}")}))),
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    for index in [0, 1] {
        app = tokio::task::spawn_blocking(move || {
            app.roll("edge", index).unwrap_or_else(|e| panic!("rolling edge {index}: {e:#}"));
            app
        })
        .await
        .expect("join");
        // The probe sees it ready again before the next one goes.
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    let answers = load.finish().await;
    probe.abort();
    assert!(answers.len() > 100, "the load ran: {} requests", answers.len());
    assert_all(&answers, "200", Answer::is_ok);
    let answered: std::collections::BTreeSet<String> = answers.iter().filter_map(|a| a.wrote.clone()).collect();
    assert_eq!(stored_tags(&app, "edge-").await, answered, "every write answered 200 is stored, once");
}
