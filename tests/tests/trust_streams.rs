//! Trust, round two, from an anonymous attacker's side: one request, or a few sockets that never
//! read, must not take the service down (docs/security.md "Budgets"). Each test reproduces a
//! finding that held the core's database connections or its one channel to the edges:
//! streamed GraphQL lists waiting on each other, clients that never read a long list or an
//! export, a filter of 20,000 conditions, and an image transformation whose output would be
//! far larger than its source.
//!
//! The environment runs a small pool (DB_POOL_MAX 6, so STREAMS_MAX is 3), STREAMS_PER_CALLER 2
//! a 2 s STREAM_STALL_TIMEOUT_MS and a public pace of 2 MiB/s, so exhaustion and recovery happen within a test's time. The tests
//! run one at a time (`serial`): each measures the pool the others would use.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{PUBLIC_POLICY, eventually};
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, assert_error, exec};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Rows of `big_list`; each `body` is 1,500 bytes, so a whole list is about 12 MB.
const ROWS: usize = 8_000;

/// STREAM_BYTES_PER_SECOND_PUBLIC here (2 MiB/s).
const PUBLIC_PACE: usize = 2 << 20;

/// STREAM_STALL_TIMEOUT_MS of every process here.
const STALL_MS: u64 = 2_000;

fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        let stall = ("STREAM_STALL_TIMEOUT_MS".to_owned(), STALL_MS.to_string());
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("trust_streams".into()),
            core_env: vec![
                ("DB_POOL_MAX".into(), "6".into()),
                ("STREAMS_PER_CALLER".into(), "2".into()),
                ("QUERY_LIMIT_MAX".into(), "-1".into()),
                ("STREAM_BYTES_PER_SECOND_PUBLIC".into(), PUBLIC_PACE.to_string()),
                stall.clone(),
            ],
            edge_env: vec![stall.clone()],
            graphql_env: vec![stall],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// The environment with `big_list` served to the public, and this test's turn.
async fn serial() -> (&'static TestApp, tokio::sync::MutexGuard<'static, ()>) {
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    static TABLE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let turn = TURN.lock().await;
    let app = tokio::task::spawn_blocking(env).await.expect("environment");
    TABLE
        .get_or_init(|| async {
            exec(
                app,
                &format!(
                    "CREATE TABLE big_list (id serial PRIMARY KEY, label text NOT NULL, body text NOT NULL); \
                 INSERT INTO big_list (label, body) SELECT 'row ' || g, repeat(chr(97 + g % 26), 1500) FROM generate_series(1, {ROWS}) g;"
                ),
            )
            .await;
            eventually("big_list is served", || async { app.get("/items/big_list?limit=1").await.status == 200 }).await;
            let r =
                app.admin(Method::POST, "/permissions", json!({"policy": PUBLIC_POLICY, "collection": "big_list", "action": "read", "fields": ["*"]})).await;
            assert_eq!(r.status, 200, "public read of big_list: {}", r.body);
            eventually("the public reads big_list", || async { cheap_read(app).await.0 == 200 }).await;
        })
        .await;
    (app, turn)
}

fn client() -> reqwest::Client {
    e2e_tests::http_client().timeout(Duration::from_secs(60)).build().expect("client")
}

/// A cheap anonymous read: (status, milliseconds).
async fn cheap_read(app: &TestApp) -> (u16, u128) {
    let started = Instant::now();
    let status = match client().get(format!("{}/items/big_list/1?fields=id,label", app.rest_url)).send().await {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    };
    (status, started.elapsed().as_millis())
}

/// An anonymous GraphQL POST through edge-rest's `/graphql`: (status, body or the error reading
/// it), failing the test after `secs`.
async fn graphql_anonymously(app: &TestApp, query: &str, secs: u64) -> (u16, Result<Value, String>) {
    let call = async {
        let res = client().post(format!("{}/graphql", app.rest_url)).json(&json!({"query": query})).send().await.expect("response headers");
        let status = res.status().as_u16();
        let body = match res.text().await {
            Ok(text) => serde_json::from_str(&text).map_err(|e| format!("not JSON ({e}): {} bytes", text.len())),
            Err(e) => Err(format!("{e:?}")),
        };
        (status, body)
    };
    tokio::time::timeout(Duration::from_secs(secs), call).await.unwrap_or_else(|_| panic!("the GraphQL request did not finish within {secs} s"))
}

/// Backends of core-service's pool sending rows to a core that does not take them.
async fn backends_waiting_on_the_core(app: &TestApp) -> i64 {
    let n = app.sql("SELECT count(*)::text FROM pg_stat_activity WHERE application_name = 'cdapi-core' AND wait_event = 'ClientWrite'").await;
    n.as_i64().unwrap_or(-1)
}

/// A socket that asks `path` (as `token`'s owner, or anonymously) and then never reads (a 4 KiB
/// receive buffer, so the response backs up at once). `Connection: close`: a refused request's
/// socket is closed by the edge once answered.
async fn never_reading(app: &TestApp, path: &str, token: Option<&str>) -> tokio::net::TcpStream {
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    never_reading_request(app, format!("GET {path} HTTP/1.1\r\nHost: edge\r\n{auth}Connection: close\r\n\r\n")).await
}

/// A socket that sends an anonymous GraphQL POST of `query` to edge-rest's `/graphql` and then
/// never reads.
async fn never_reading_graphql(app: &TestApp, query: &str) -> tokio::net::TcpStream {
    let body = json!({ "query": query }).to_string();
    let head = format!("POST /graphql HTTP/1.1\r\nHost: edge\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    never_reading_request(app, head + &body).await
}

/// A socket with a 4 KiB receive buffer that sends `request` to edge-rest and never reads.
async fn never_reading_request(app: &TestApp, request: String) -> tokio::net::TcpStream {
    let addr: std::net::SocketAddr = app.rest_url.trim_start_matches("http://").parse().expect("edge address");
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("receive buffer");
    let mut stream = socket.connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("request");
    stream
}

/// A long list as `token`'s owner (or anonymously), read whole: (status, items, the error code).
async fn long_list(app: &TestApp, token: Option<&str>) -> (u16, Option<usize>, Option<String>, String) {
    let mut req = client().get(format!("{}/items/big_list?limit=-1&fields=id", app.rest_url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.expect("headers");
    let status = res.status().as_u16();
    let retry = e2e_tests::header_text(res.headers(), "retry-after").to_owned();
    let body: Value = res.json().await.expect("JSON");
    (status, body["data"].as_array().map(Vec::len), body["errors"][0]["extensions"]["code"].as_str().map(str::to_owned), retry)
}

/// Finding 1: 12 (and 50) aliased streamed root lists in one anonymous GraphQL request hung
/// it, and every later GraphQL request timed out until a restart: each list's stream was
/// opened while the operation ran and drained one after another, so the waiting ones filled
/// the one channel's flow-control window. Now only GRAPHQL_STREAM_LISTS_MAX (4) lists of a
/// request stream, the others are INVALID_QUERY, and the streamed ones are opened one at a time.
#[tokio::test]
async fn many_streamed_lists_in_one_anonymous_graphql_request_never_jam_the_service() {
    let (app, _turn) = serial().await;
    for aliases in [12usize, 50] {
        let fields: String = (0..aliases).map(|i| format!("a{i}: big_list(limit: -1) {{ id label }} ")).collect();
        let (status, body) = graphql_anonymously(app, &format!("{{ {fields} }}"), 60).await;
        // 50 root fields are over GRAPHQL_MAX_ROOT_FIELDS (20): refused before any call.
        if aliases > 20 {
            assert_eq!(status, 400, "{aliases} root fields: {body:?}");
            continue;
        }
        let body = body.expect("a whole JSON reply");
        let errors = body["errors"].as_array().cloned().unwrap_or_default();
        assert!(
            errors.iter().any(|e| e["extensions"]["code"] == "INVALID_QUERY" && e["message"].as_str().is_some_and(|m| m.contains("GRAPHQL_STREAM_LISTS_MAX"))),
            "lists over the budget are refused: {errors:?}"
        );
        // Whatever the reply, the service still answers at once afterwards.
        let (status, ms) = cheap_read(app).await;
        assert_eq!(status, 200, "a cheap read after {aliases} lists");
        assert!(ms < 5_000, "a cheap read after {aliases} lists took {ms} ms");
        let (status, body) = graphql_anonymously(app, "{ big_list(limit: 2) { id } }", 10).await;
        assert_eq!((status, body.expect("JSON")["data"]["big_list"].as_array().map(Vec::len)), (200, Some(2)), "GraphQL after {aliases} lists");
    }
    // Within the budget, every list streams whole, one after another.
    let fields: String = (0..4).map(|i| format!("a{i}: big_list(limit: -1, sort: [\"id\"]) {{ id }} ")).collect();
    let (status, body) = graphql_anonymously(app, &format!("{{ {fields} }}"), 60).await;
    let body = body.expect("a whole JSON reply");
    assert_eq!(status, 200);
    assert!(body.get("errors").is_none(), "{:?}", body["errors"]);
    for i in 0..4 {
        let items = body["data"][format!("a{i}")].as_array().map(Vec::len);
        assert_eq!(items, Some(ROWS), "list a{i} complete");
    }
    eventually("no backend waits on the core", || async { backends_waiting_on_the_core(app).await == 0 }).await;
}

/// Finding 2: sockets that asked for a long list, an export or a GraphQL list and never read
/// held the core's database connections (backends in `ClientWrite`) for as long as they
/// stayed, and every cheap public read answered 503. Now long streams take at most STREAMS_MAX (half the pool) and
/// STREAMS_PER_CALLER places, a stalled reader is cut off after STREAM_STALL_TIMEOUT_MS, and its
/// connection comes back.
#[tokio::test]
async fn clients_that_never_read_long_lists_or_exports_give_the_database_back() {
    let (app, _turn) = serial().await;
    // A GraphQL list (through edge-rest's `/graphql` and edge-graphql) first, so it gets one of
    // the public's two places; then lists and exports.
    let mut sockets = vec![never_reading_graphql(app, "{ big_list(limit: -1) { id label body } }").await];
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..12 {
        let path = if i % 3 == 2 { "/items/big_list?limit=-1&fields=*&export=json" } else { "/items/big_list?limit=-1&fields=*" };
        sockets.push(never_reading(app, path, None).await);
    }

    // While they hold on: cheap reads are answered, never 503.
    let attack_ends = Instant::now() + Duration::from_millis(STALL_MS * 2);
    let mut slowest = 0;
    while Instant::now() < attack_ends {
        let (status, ms) = cheap_read(app).await;
        assert_eq!(status, 200, "a cheap read while 12 sockets do not read");
        slowest = slowest.max(ms);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(slowest < 2_000, "the slowest cheap read took {slowest} ms");
    // After the stall limit no backend waits for the core, and the edges closed the sockets.
    eventually("no backend waits on the core", || async { backends_waiting_on_the_core(app).await == 0 }).await;
    for (i, mut s) in sockets.into_iter().enumerate() {
        let mut sink = vec![0u8; 1 << 16];
        let ended = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match s.read(&mut sink).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(ended.is_ok(), "socket {i} was cut off");
    }
    // The places are free again: long lists at once, each read whole.
    let (a, b) = tokio::join!(long_list(app, Some(ADMIN_TOKEN)), long_list(app, None));
    for got in [a, b] {
        assert_eq!((got.0, got.1), (200, Some(ROWS)), "{got:?}");
    }
}

/// Finding 2, the budgets themselves: one caller runs at most STREAMS_PER_CALLER (2 here) long
/// streams at once, the next is 429 REQUESTS_EXCEEDED; the replica runs at most STREAMS_MAX (3
/// here), the next is 503 SERVICE_UNAVAILABLE; both with `Retry-After: 1`, before any database
/// work, and the places come back when the streams end.
#[tokio::test]
async fn one_caller_cannot_take_every_stream() {
    let (app, _turn) = serial().await;
    let mut sockets =
        vec![never_reading(app, "/items/big_list?limit=-1&fields=*", None).await, never_reading(app, "/items/big_list?limit=-1&fields=*", None).await];
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _, code, retry) = long_list(app, None).await;
    assert_eq!((status, code.as_deref(), retry.as_str()), (429, Some("REQUESTS_EXCEEDED"), "1"), "a third public stream");
    // Another caller still gets the replica's last place, and then the replica is full.
    sockets.push(never_reading(app, "/items/big_list?limit=-1&fields=*", Some(ADMIN_TOKEN)).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _, code, retry) = long_list(app, Some(ADMIN_TOKEN)).await;
    assert_eq!((status, code.as_deref(), retry.as_str()), (503, Some("SERVICE_UNAVAILABLE"), "1"), "a fourth stream on the replica");
    // Short reads are no streams: still served.
    assert_eq!(cheap_read(app).await.0, 200);
    drop(sockets);
    eventually("the places come back", || async { long_list(app, None).await.0 == 200 }).await;
}

/// Finding 4: a 720 KB anonymous filter of 20,000 conditions pinned a PostgreSQL backend for 7
/// minutes (JIT compiling it; nothing could cancel it). Now a filter's conditions have a budget
/// (FILTER_MAX_CONDITIONS_PUBLIC 100 for the public, FILTER_MAX_CONDITIONS 1,000 signed in),
/// checked before any SQL runs, and the core's connections run with JIT off; a `SEARCH` body of
/// more than QUERY_MAX_NODES (3,000) objects and arrays is refused by the edge before it is even
/// parsed (parsing the 720 KB body cost the edge 30 ms of CPU).
#[tokio::test]
async fn a_huge_anonymous_filter_is_refused_before_the_database() {
    let (app, _turn) = serial().await;
    let search = |n: usize, token: Option<&'static str>| async move {
        let conditions: Vec<Value> = (0..n).map(|i| json!({"label": {"_ncontains": format!("x{i}")}})).collect();
        let body = json!({"query": {"filter": {"_and": conditions}, "limit": -1, "fields": ["id"]}});
        let started = Instant::now();
        let mut req = client().request(Method::from_bytes(b"SEARCH").expect("method"), format!("{}/items/big_list", app.rest_url)).json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.expect("response");
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        (e2e_tests::Reply { status, body, headers: Default::default() }, started.elapsed())
    };
    let (r, took) = search(20_000, None).await;
    assert_error(&r, 400, "INVALID_QUERY", "20,000 anonymous conditions");
    assert!(took < Duration::from_secs(2), "refused at once, took {took:?}");
    assert!(r.body.to_string().contains("QUERY_MAX_NODES"), "refused by the edge, unparsed: {}", r.body);
    // Under the edge's ceiling, the core's budgets: 1,200 conditions (2,405 JSON nodes) reach it.
    let (r, _) = search(1_200, None).await;
    assert_error(&r, 400, "INVALID_QUERY", "1,200 anonymous conditions");
    assert!(r.body.to_string().contains("FILTER_MAX_CONDITIONS_PUBLIC"), "{}", r.body);
    // The public's budget: 100 nodes (the `_and` group counts), admins' 1,000.
    assert_eq!(search(99, None).await.0.status, 200);
    assert_error(&search(100, None).await.0, 400, "INVALID_QUERY", "101 anonymous nodes");
    assert_eq!(search(999, Some(ADMIN_TOKEN)).await.0.status, 200);
    assert_error(&search(1_000, Some(ADMIN_TOKEN)).await.0, 400, "INVALID_QUERY", "1,001 nodes signed in");
    // Nothing of it reached the database.
    let running =
        app.sql("SELECT count(*)::text FROM pg_stat_activity WHERE application_name = 'cdapi-core' AND state = 'active' AND query LIKE '%big_list%'").await;
    assert_eq!(running, json!(0));
}

/// Finding 3: a 103-byte 1×6000 PNG resized to `width=300` made a 300×1,800,000 image (1.69 GB,
/// 22 s) and `width=2500` aborted core-service. Now the largest image a transformation makes is
/// computed from the header and refused past ASSETS_TRANSFORM_IMAGE_MAX_DIMENSION or
/// ASSETS_TRANSFORM_MAX_OUTPUT_PIXELS, before a pixel is decoded.
#[tokio::test]
async fn an_extreme_aspect_ratio_cannot_blow_up_a_transformation() {
    let (app, _turn) = serial().await;
    let mut png = Vec::new();
    image::DynamicImage::new_luma8(1, 6000).write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).expect("png");
    let (status, file) = e2e_tests::upload_file(app, Some(ADMIN_TOKEN), &[], "sliver.png", "image/png", png).await;
    assert_eq!(status, 200, "{file}");
    let id = file["data"]["id"].as_str().expect("id").to_owned();
    let r = app.admin(Method::PATCH, &format!("/files/{id}"), json!({"title": "sliver"})).await;
    assert_eq!(r.status, 200);
    for asked in ["width=300", "width=2500", "width=300&height=300", "width=300&height=300&fit=outside", "width=300&height=300&fit=cover"] {
        let started = Instant::now();
        let (status, _, body) = e2e_tests::get_raw(app, &format!("/assets/{id}?{asked}"), Some(ADMIN_TOKEN), &[]).await;
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert_eq!((status, body["errors"][0]["extensions"]["code"].as_str()), (400, Some("ILLEGAL_ASSET_TRANSFORMATION")), "{asked}: {body}");
        assert!(started.elapsed() < Duration::from_secs(2), "{asked} refused at once");
    }
    // Within the budget it still works, and the core is alive.
    let (status, headers, bytes) = e2e_tests::get_raw(app, &format!("/assets/{id}?height=300&format=png"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!(status, 200, "{headers:?}");
    let img = image::load_from_memory(&bytes).expect("an image");
    assert_eq!((img.width(), img.height()), (1, 300));
    assert_eq!(cheap_read(app).await.0, 200);
}

/// The GraphQL-list flood of `bench/abuse`: 8 anonymous requests streaming 4 × 3.5 MB lists each
/// kept both cores busy (cheap reads' p99 × 42). Now the streams of one client address of the
/// public together send at most STREAM_BYTES_PER_SECOND_PUBLIC (2 MiB/s here) — its first
/// second's worth at once — and a user's are not paced (STREAM_BYTES_PER_SECOND 0): the 12 MB
/// list takes the public at least 5 s, two at once take twice as long, and the admin less.
#[tokio::test]
async fn the_publics_long_lists_are_paced_together_and_users_are_not() {
    let (app, _turn) = serial().await;
    let timed = |token: Option<&'static str>| async move {
        let started = Instant::now();
        let mut req = client().get(format!("{}/items/big_list?limit=-1&fields=*", app.rest_url));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.expect("headers");
        assert_eq!(res.status(), 200);
        let bytes = res.bytes().await.expect("the whole list").len();
        (bytes, started.elapsed())
    };
    let (bytes, public) = timed(None).await;
    assert!(bytes > 4 * PUBLIC_PACE, "the list is {bytes} bytes");
    let least = Duration::from_secs_f64((bytes - PUBLIC_PACE) as f64 / PUBLIC_PACE as f64 * 0.9);
    assert!(public >= least, "the public read {bytes} bytes in {public:?}, faster than its pace allows ({least:?})");
    let (_, admin_took) = timed(Some(ADMIN_TOKEN)).await;
    assert!(admin_took < public, "the admin is paced too: {admin_took:?} (the public: {public:?})");
    // Two lists of one address share its pace.
    let started = Instant::now();
    let (a, b) = tokio::join!(timed(None), timed(None));
    let least_two = Duration::from_secs_f64((a.0 + b.0 - PUBLIC_PACE) as f64 / PUBLIC_PACE as f64 * 0.9);
    assert!(started.elapsed() >= least_two, "two public lists in {:?}, faster than one pace allows ({least_two:?})", started.elapsed());
    assert_eq!(cheap_read(app).await.0, 200);
}
