//! Operating the system (docs/operations.md): metrics on every process, the request id and W3C trace
//! context from the edge to the services, graceful shutdown under load, and two replicas of
//! core-service and auth-service behind the edges.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::auth_service_client::AuthServiceClient;
use cdapi_proto::v1::{GetCurrentUserRequest, LoginRequest, RefreshRequest, SessionMode};
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, http_client, send, start};
use reqwest::Method;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

const ADMIN_EMAIL: &str = "admin@example.com";
const ADMIN_PASSWORD: &str = "test-password";

fn spec(name: &str) -> Spec {
    Spec { dataset: Dataset::Demo, name: Some(name.into()), ..Default::default() }
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

async fn scrape(url: &str) -> String {
    let res = http_client().build().expect("client").get(url).send().await.unwrap_or_else(|e| panic!("scrape {url}: {e}"));
    assert_eq!(res.status().as_u16(), 200, "{url}");
    res.text().await.expect("metrics text")
}

/// The sum of the samples of `name` whose labels include every pair of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.split(['{', ' ']).next() == Some(name))
        .filter(|l| labels.iter().all(|(k, v)| l.contains(&format!("{k}=\"{v}\""))))
        .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
        .sum()
}

fn metrics_url<'a>(app: &'a TestApp, process: &str, replica: usize) -> &'a str {
    app.metrics.iter().filter(|(n, _)| *n == process).nth(replica).map(|(_, u)| u.as_str()).unwrap_or_else(|| panic!("no metrics for {process} #{replica}"))
}

/// Waits until `file` has a line containing every one of `needles`.
async fn log_line(file: &std::path::Path, needles: &[&str]) -> Option<String> {
    for _ in 0..100 {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if let Some(l) = text.lines().find(|l| needles.iter().all(|n| l.contains(n))) {
            return Some(l.to_owned());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_process_serves_metrics_and_logs_carry_the_request_id_and_trace() {
    let app =
        start(Spec { metrics: true, auth_env: env(&[("AUTH_RATE_LIMIT_POINTS", "2"), ("RUST_LOG", "info,service_runtime=debug")]), ..spec("ops_metrics") })
            .expect("environment");
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let r = send(
        &app,
        Method::GET,
        "/items/articles?limit=1",
        Some(ADMIN_TOKEN),
        &[("x-request-id", "ops-read-1"), ("traceparent", &format!("00-{trace}-b7ad6b7169203331-01"))],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers.get("x-request-id").and_then(|v| v.to_str().ok()), Some("ops-read-1"));
    // The core's statement log line carries both ids: one request, followed across processes.
    let line = log_line(&app.core_log, &["\"request_id\":\"ops-read-1\"", &format!("\"trace_id\":\"{trace}\""), "sqlx::query"]).await;
    assert!(line.is_some(), "core log has no statement with the request id and trace id");

    // Wrong passwords: logged by auth-service under the request id; the third is rate limited.
    let mut statuses = Vec::new();
    for i in 0..3 {
        let id = format!("ops-login-{i}");
        let body = json!({"email": ADMIN_EMAIL, "password": "wrong"}).to_string();
        let r = send(&app, Method::POST, "/auth/login", None, &[("x-request-id", &id)], Some(("application/json", body))).await;
        statuses.push(r.status);
    }
    assert_eq!(statuses, vec![401, 401, 429]);
    let auth_line = log_line(&app.log_file("auth-service.log"), &["\"request_id\":\"ops-login-0\"", "rpc done", "\"trace_id\":\""]).await;
    assert!(auth_line.is_some(), "auth log has no line for the login's request id");

    let gql = http_client()
        .build()
        .expect("client")
        .post(format!("{}/graphql", app.graphql_url))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"query": "{ articles(limit: 1) { id } }"}))
        .send()
        .await
        .expect("graphql");
    assert_eq!(gql.status().as_u16(), 200);

    let edge = scrape(metrics_url(&app, "edge", 0)).await;
    assert!(sample(&edge, "cdapi_http_requests_total", &[("route", "/items/:collection"), ("method", "GET"), ("status", "200")]) >= 1.0, "{edge}");
    assert!(sample(&edge, "cdapi_http_requests_total", &[("route", "/auth/login"), ("status", "429")]) >= 1.0, "{edge}");
    assert!(sample(&edge, "cdapi_http_request_duration_seconds_count", &[("route", "/items/:collection")]) >= 1.0, "{edge}");
    let core = scrape(metrics_url(&app, "core", 0)).await;
    assert!(sample(&core, "cdapi_grpc_requests_total", &[("rpc", "/cdapi.v1.ItemsService/Read"), ("code", "0")]) >= 1.0, "{core}");
    assert!(sample(&core, "cdapi_db_pool_max", &[]) >= 1.0, "{core}");
    assert!(core.contains("cdapi_db_pool_connections{state=\"idle\"}"), "{core}");
    let auth = scrape(metrics_url(&app, "auth", 0)).await;
    assert!(sample(&auth, "cdapi_grpc_requests_total", &[("rpc", "/cdapi.v1.AuthService/Login")]) >= 3.0, "{auth}");
    assert_eq!(sample(&auth, "cdapi_rate_limited_total", &[("limiter", "auth-attempts")]), 1.0, "{auth}");
    let graphql = scrape(metrics_url(&app, "graphql", 0)).await;
    assert!(sample(&graphql, "cdapi_http_requests_total", &[("route", "/graphql"), ("method", "POST"), ("status", "200")]) >= 1.0, "{graphql}");
    // Unknown paths share one series instead of one each.
    let r = send(&app, Method::GET, "/no/such/path/123", None, &[], None).await;
    assert_eq!(r.status, 404);
    let edge = scrape(metrics_url(&app, "edge", 0)).await;
    assert!(sample(&edge, "cdapi_http_requests_total", &[("route", "other")]) >= 1.0, "{edge}");
    assert!(!edge.contains("/no/such"), "raw paths must not become labels");
}

/// Clients that stop sending once `/server/health` fails (as a load balancer does) and count
/// failed reads. Returns (ok, failed) when `stopped` turns true.
async fn load(base: String, workers: usize, stop_on_unready: bool, stopped: Arc<AtomicBool>) -> (usize, usize) {
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let client = http_client().build().expect("client");
    let mut tasks = Vec::new();
    if stop_on_unready {
        let (client, base, stopped) = (client.clone(), base.clone(), stopped.clone());
        tasks.push(tokio::spawn(async move {
            while !stopped.load(Ordering::SeqCst) {
                let healthy = matches!(client.get(format!("{base}/server/health")).send().await, Ok(r) if r.status().as_u16() == 200);
                if !healthy {
                    stopped.store(true, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }
    for _ in 0..workers {
        let (client, base, stopped, ok, failed) = (client.clone(), base.clone(), stopped.clone(), ok.clone(), failed.clone());
        tasks.push(tokio::spawn(async move {
            while !stopped.load(Ordering::SeqCst) {
                let r = client.get(format!("{base}/items/articles?limit=20&fields=*,author.*")).bearer_auth(ADMIN_TOKEN).send().await;
                match r {
                    Ok(r) if r.status().as_u16() == 200 => ok.fetch_add(1, Ordering::SeqCst),
                    Ok(r) => {
                        eprintln!("failed: HTTP {} {}", r.status(), r.text().await.unwrap_or_default());
                        failed.fetch_add(1, Ordering::SeqCst)
                    }
                    Err(e) => {
                        eprintln!("failed: {e}");
                        failed.fetch_add(1, Ordering::SeqCst)
                    }
                };
            }
        }));
    }
    for t in tasks {
        t.await.expect("load task");
    }
    (ok.load(Ordering::SeqCst), failed.load(Ordering::SeqCst))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_on_the_edge_turns_readiness_off_then_drains_without_failed_requests() {
    let mut app = start(Spec { edge_env: env(&[("SHUTDOWN_DELAY_MS", "1500")]), ..spec("ops_sigterm_edge") }).expect("environment");
    let stopped = Arc::new(AtomicBool::new(false));
    let running = tokio::spawn(load(app.rest_url.clone(), 6, true, stopped.clone()));
    tokio::time::sleep(Duration::from_millis(800)).await;
    app.signal("edge", 0, "TERM").expect("SIGTERM");
    let (ok, failed) = running.await.expect("load");
    assert!(ok > 20, "the load ran ({ok} requests)");
    assert_eq!(failed, 0, "requests failed during the shutdown");
    // Readiness is off but the listener still serves during the delay.
    let r = send(&app, Method::GET, "/items/articles?limit=1", Some(ADMIN_TOKEN), &[], None).await;
    assert_eq!(r.status, 200, "served during the drain delay");
    let status = tokio::task::block_in_place(|| app.wait_exit("edge", 0, Duration::from_secs(15))).expect("edge-rest");
    assert!(status.is_some_and(|s| s.success()), "edge-rest exits cleanly within the grace period: {status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_load_and_tokens_and_survive_losing_one() {
    let mut app = start(Spec { replicas: 2, metrics: true, core_env: env(&[("SHUTDOWN_DELAY_MS", "500")]), ..spec("ops_replicas") }).expect("environment");
    assert_eq!((app.core_urls.len(), app.auth_urls.len()), (2, 2));

    // A token issued by one auth replica is accepted by the other, and by the core through
    // the edge; the refresh token from one rotates at the other (sessions live in Redis).
    let mut a0 = AuthServiceClient::connect(app.auth_urls[0].clone()).await.expect("auth 0");
    let mut a1 = AuthServiceClient::connect(app.auth_urls[1].clone()).await.expect("auth 1");
    let t = a0
        .login(LoginRequest { email: ADMIN_EMAIL.into(), password: ADMIN_PASSWORD.into(), otp: None, mode: SessionMode::Json as i32 })
        .await
        .expect("login at replica 0")
        .into_inner();
    let mut me = tonic::Request::new(GetCurrentUserRequest {});
    me.metadata_mut().insert("authorization", format!("Bearer {}", t.access_token).parse().expect("header"));
    let user = a1.get_current_user(me).await.expect("replica 1 accepts replica 0's token").into_inner();
    assert_eq!(user.email, ADMIN_EMAIL);
    let rotated = a1
        .refresh(RefreshRequest { refresh_token: t.refresh_token.clone(), session_token: String::new(), mode: SessionMode::Json as i32 })
        .await
        .expect("replica 1 rotates replica 0's refresh token")
        .into_inner();
    assert!(!rotated.access_token.is_empty() && rotated.refresh_token != t.refresh_token);
    let r = send(&app, Method::GET, "/users/me", Some(&t.access_token), &[], None).await;
    assert_eq!(r.status, 200, "{}", r.body);

    // Calls spread over both core replicas.
    for _ in 0..40 {
        assert_eq!(send(&app, Method::GET, "/items/articles?limit=1", Some(ADMIN_TOKEN), &[], None).await.status, 200);
    }
    for replica in 0..2 {
        let m = scrape(metrics_url(&app, "core", replica)).await;
        let reads = sample(&m, "cdapi_grpc_requests_total", &[("rpc", "/cdapi.v1.ItemsService/Read")]);
        assert!(reads >= 10.0, "core replica {replica} served {reads} of 40 reads");
    }

    // SIGTERM to one core replica under load: it drains, the edge moves to the other.
    let stopped = Arc::new(AtomicBool::new(false));
    let running = tokio::spawn(load(app.rest_url.clone(), 6, false, stopped.clone()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    app.signal("core", 0, "TERM").expect("SIGTERM core 0");
    let status = tokio::task::block_in_place(|| app.wait_exit("core", 0, Duration::from_secs(15))).expect("core 0");
    assert!(status.is_some_and(|s| s.success()), "core replica 0 exits cleanly: {status:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    stopped.store(true, Ordering::SeqCst);
    let (ok, failed) = running.await.expect("load");
    assert!(ok > 20, "the load ran ({ok} requests)");
    assert_eq!(failed, 0, "requests failed while a core replica shut down");
    let edge = scrape(metrics_url(&app, "edge", 0)).await;
    eprintln!("retries: {}", sample(&edge, "cdapi_grpc_client_retries_total", &[]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_core_replica_mid_load_loses_no_read() {
    let app = start(Spec { replicas: 2, metrics: true, ..spec("ops_kill") }).expect("environment");
    let stopped = Arc::new(AtomicBool::new(false));
    let running = tokio::spawn(load(app.rest_url.clone(), 6, false, stopped.clone()));
    tokio::time::sleep(Duration::from_millis(700)).await;
    app.signal("core", 1, "KILL").expect("SIGKILL core 1");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stopped.store(true, Ordering::SeqCst);
    let (ok, failed) = running.await.expect("load");
    assert!(ok > 20, "the load ran ({ok} requests)");
    assert_eq!(failed, 0, "reads failed when a core replica died");
    let edge = scrape(metrics_url(&app, "edge", 0)).await;
    assert!(sample(&edge, "cdapi_grpc_client_retries_total", &[]) >= 1.0, "the edge retried on the other replica: {edge}");
}

/// A minimal OTLP/HTTP receiver: answers 200 to every POST and keeps the bodies.
fn otlp_receiver() -> (u16, Arc<std::sync::Mutex<Vec<Vec<u8>>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    kept.lock().expect("lock").push(body);
                    let mut w = &stream;
                    if w.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n").is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, bodies)
}

/// One exported span: (service, name, rpc attribute, trace id, span id, parent span id), ids in hex.
type Exported = (String, String, String, String, String, String);

fn exported(bodies: &[Vec<u8>]) -> Vec<Exported> {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let mut out = Vec::new();
    for b in bodies {
        let req = ExportTraceServiceRequest::decode(b.as_slice()).expect("an OTLP trace export");
        for rs in &req.resource_spans {
            let service = rs
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|a| a.key == "service.name")
                .and_then(|a| a.value.as_ref())
                .map(|v| format!("{:?}", v.value))
                .unwrap_or_default();
            for sp in rs.scope_spans.iter().flat_map(|ss| &ss.spans) {
                let rpc = sp.attributes.iter().find(|a| a.key == "rpc").map(|a| format!("{:?}", a.value)).unwrap_or_default();
                out.push((service.clone(), sp.name.clone(), rpc, hex(&sp.trace_id), hex(&sp.span_id), hex(&sp.parent_span_id)));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_over_otlp_when_configured() {
    let (port, bodies) = otlp_receiver();
    let otel = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", &format!("http://127.0.0.1:{port}")), ("OTEL_BSP_SCHEDULE_DELAY", "100")]);
    let app =
        start(Spec { core_env: otel.clone(), auth_env: otel.clone(), edge_env: otel.clone(), graphql_env: otel, ..spec("ops_otel") }).expect("environment");
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_parent = "00f067aa0ba902b7";
    let header = format!("00-{trace}-{client_parent}-01");
    let r = send(&app, Method::GET, "/items/articles?limit=1", Some(ADMIN_TOKEN), &[("traceparent", &header)], None).await;
    assert_eq!(r.status, 200);
    let body = json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}).to_string();
    let r = send(&app, Method::POST, "/auth/login", None, &[("traceparent", &header)], Some(("application/json", body))).await;
    assert_eq!(r.status, 200);
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = exported(&bodies.lock().expect("lock"));
        let in_trace: Vec<&Exported> = seen.iter().filter(|s| s.3 == trace).collect();
        // The edge's request span hangs under the client's span; each service's span under the edge's.
        let edge_spans: Vec<&&Exported> = in_trace.iter().filter(|s| s.0.contains("edge-rest") && s.5 == client_parent).collect();
        let child_of_edge = |svc: &str, rpc: &str| in_trace.iter().any(|s| s.0.contains(svc) && s.2.contains(rpc) && edge_spans.iter().any(|e| e.4 == s.5));
        if edge_spans.len() >= 2 && child_of_edge("core-service", "Read") && child_of_edge("auth-service", "Login") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the trace {trace} lacks edge → core/auth spans; exported: {seen:?}");
}
