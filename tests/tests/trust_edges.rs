//! Trust, the edges' share (docs/security.md): whom the services believe about the client's address (finding
//! 9), reads that cannot pin the database through the edges (finding 7: GraphQL document caps,
//! query-string and identifier budgets, statement timeouts answered once), and what errors and
//! exports give away (finding 10: constraint errors, CSV formula injection).

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::ReadRequest;
use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::{ApiError, ErrorCode};
use e2e_tests::api::Api;
use e2e_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// This file's environment: 127.0.0.1 is a trusted proxy of edge-rest (so tests act from other
/// addresses with `X-Forwarded-For`), statements are cancelled after 1 s, metrics are served,
/// and GraphQL caps are small enough to test.
fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        let pairs = |p: &[(&str, &str)]| p.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<Vec<_>>();
        start(Spec {
            dataset: Dataset::Demo,
            name: Some("trust_edges".into()),
            metrics: true,
            edge_env: pairs(&[("IP_TRUSTED_PROXIES", "127.0.0.1")]),
            core_env: pairs(&[("DB_STATEMENT_TIMEOUT_MS", "1000")]),
            ..Spec::default()
        })
        .expect("trust_edges environment")
    })
}

async fn scrape(app: &TestApp, process: &str) -> String {
    let url = app.metrics.iter().find(|(n, _)| *n == process).map(|(_, u)| u.clone()).expect("metrics url");
    http_client().build().expect("client").get(&url).send().await.expect("scrape").text().await.expect("metrics text")
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

/// A user with static token `token`, allowed only from `allowed` (an `ip_access` list).
async fn user_allowed_from(app: &TestApp, email: &str, token: &str, allowed: &str) -> String {
    let id = create_user(app, email, "a-good-password-1").await;
    exec(app, &format!("UPDATE cdapi.users SET ip_access = '{{{allowed}}}', token_hash = encode(sha256('{token}'), 'hex') WHERE id = '{id}'")).await;
    id
}

#[tokio::test]
async fn a_forged_client_ip_straight_to_the_core_is_not_believed() {
    let app = env();
    user_allowed_from(app, "office-grpc@example.com", "office-grpc-token", "10.1.2.3").await;
    let mut items = ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("connect core");
    let mut req = tonic::Request::new(ReadRequest { collection: "articles".into(), key: None, query: None });
    req.metadata_mut().insert("authorization", "Bearer office-grpc-token".parse().expect("header"));
    req.metadata_mut().insert("x-client-ip", "10.1.2.3".parse().expect("header"));
    let status = items.read(req).await.expect_err("a caller from 127.0.0.1 is outside the allow-list");
    assert_eq!(ApiError::from_status(&status).code, ErrorCode::InvalidIp, "{status:?}");

    // The same claim with a wrong internal credential is not believed either.
    let mut req = tonic::Request::new(ReadRequest { collection: "articles".into(), key: None, query: None });
    req.metadata_mut().insert("authorization", "Bearer office-grpc-token".parse().expect("header"));
    req.metadata_mut().insert("x-client-ip", "10.1.2.3".parse().expect("header"));
    req.metadata_mut().insert("x-internal-token", "guessed".parse().expect("header"));
    let status = items.read(req).await.expect_err("a wrong credential");
    assert_eq!(ApiError::from_status(&status).code, ErrorCode::InvalidIp, "{status:?}");

    // auth-service too: a login claiming the allowed address from elsewhere.
    use cdapi_proto::v1::auth_service_client::AuthServiceClient;
    use cdapi_proto::v1::{LoginRequest, SessionMode};
    let mut auth = AuthServiceClient::connect(app.auth_url.clone()).await.expect("connect auth");
    let mut req = tonic::Request::new(LoginRequest {
        email: "office-grpc@example.com".into(),
        password: "a-good-password-1".into(),
        otp: None,
        mode: SessionMode::Json as i32,
    });
    req.metadata_mut().insert("x-client-ip", "10.1.2.3".parse().expect("header"));
    let status = auth.login(req).await.expect_err("login from outside the allow-list");
    assert_eq!(ApiError::from_status(&status).code, ErrorCode::InvalidIp, "{status:?}");
}

#[tokio::test]
async fn through_a_trusted_proxy_the_right_most_untrusted_address_is_the_client() {
    let app = env();
    user_allowed_from(app, "office-edge@example.com", "office-edge-token", "10.1.2.3").await;
    let read = |xff: &'static str| async move {
        send(app, Method::GET, "/items/articles?limit=1", Some("office-edge-token"), &[("x-forwarded-for", xff)], None).await
    };
    // The proxy (127.0.0.1, trusted) saw 10.1.2.3: allowed (no permission yet: FORBIDDEN).
    assert_error(&read("10.1.2.3").await, 403, "FORBIDDEN", "allowed address");
    // A client claiming 10.1.2.3 behind the proxy's real view of it (203.0.113.9): refused.
    assert_error(&read("10.1.2.3, 203.0.113.9").await, 401, "INVALID_IP", "spoofed left entry");
    // Garbage on the right stops the walk: the proxy itself is the client, not 10.1.2.3.
    assert_error(&read("10.1.2.3, not-an-address").await, 401, "INVALID_IP", "garbage entry");
    // GraphQL (forwarded by edge-rest to edge-graphql) judges the same address.
    let gql = |xff: &'static str| async move {
        let body = json!({"query": "{ articles(limit: 1) { id } }"}).to_string();
        send(app, Method::POST, "/graphql", Some("office-edge-token"), &[("x-forwarded-for", xff)], Some(("application/json", body))).await
    };
    let r = gql("10.1.2.3, 203.0.113.9").await;
    assert_eq!(r.body["errors"][0]["extensions"]["code"], "INVALID_IP", "{}", r.body);
    let r = gql("10.1.2.3").await;
    assert_ne!(r.body["errors"][0]["extensions"]["code"], "INVALID_IP", "{}", r.body);
}

#[tokio::test]
async fn a_statement_timeout_is_answered_once_and_never_retried() {
    let app = env();
    // A collection whose every read outlasts DB_STATEMENT_TIMEOUT_MS (1 s).
    exec(app, "CREATE VIEW slow_view AS SELECT 1 AS id, pg_sleep(3)::text AS nap").await;
    let mut visible = false;
    for _ in 0..100 {
        if app.get("/items/slow_view?fields=id&limit=0").await.status == 200 {
            visible = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(visible, "the view became a collection");
    let before = scrape(app, "core").await;
    let calls = |m: &str| sample(m, "cdapi_grpc_requests_total", &[("rpc", "/cdapi.v1.ItemsService/Read"), ("code", "14")]);
    let started = std::time::Instant::now();
    let r = app.get("/items/slow_view").await;
    assert_error(&r, 503, "SERVICE_UNAVAILABLE", "a cancelled statement");
    assert!(started.elapsed() < std::time::Duration::from_millis(1900), "answered after one timeout, not two: {:?}", started.elapsed());
    let after = scrape(app, "core").await;
    assert_eq!(calls(&after) - calls(&before), 1.0, "the core ran the read once");
    let edge = scrape(app, "edge").await;
    assert_eq!(sample(&edge, "cdapi_grpc_client_retries_total", &[("rpc", "/cdapi.v1.ItemsService/Read")]), 0.0, "{edge}");
}

/// A GraphQL request straight to edge-graphql with request id `id` (which the services log).
async fn gql_with_id(app: &TestApp, endpoint: &str, query: &str, id: &str) -> Reply {
    let res = http_client()
        .build()
        .expect("client")
        .post(format!("{}{endpoint}", app.graphql_url))
        .bearer_auth(ADMIN_TOKEN)
        .header("x-request-id", id)
        .json(&json!({"query": query}))
        .send()
        .await
        .expect("graphql request");
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let body = serde_json::from_str(&res.text().await.unwrap_or_default()).unwrap_or(Value::Null);
    Reply { status, body, headers }
}

/// Whether a log file has a line carrying request id `id`, waiting up to 2 s for it.
async fn logged(file: &std::path::Path, id: &str) -> bool {
    for _ in 0..40 {
        if std::fs::read_to_string(file).unwrap_or_default().contains(id) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn graphql_documents_have_caps_checked_before_any_core_call() {
    let app = env();
    let expect_refused = |r: &Reply, what: &str| {
        assert_eq!(r.status, 400, "{what}: {}", r.body);
        assert_eq!(r.body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION", "{what}: {}", r.body);
    };
    // Many aliased root fields: each would be a core call.
    let roots: String = (0..40).map(|i| format!("a{i}: articles(limit: 1) {{ id }} ")).collect();
    // The same through a fragment on the root type; many aliases deeper down; a huge document.
    let frag = format!("query {{ ...R }} fragment R on Query {{ {roots} }}");
    let aliases: String = (0..300).map(|i| format!("t{i}: title ")).collect();
    let padding = "#".repeat(70_000);
    let refused = [
        ("40 root fields", format!("{{ {roots} }}")),
        ("root fields in a fragment", frag),
        ("300 aliases", format!("{{ articles(limit: 1) {{ {aliases} }} }}")),
        ("a 70 kB document", format!("{padding}\n{{ articles(limit: 1) {{ id }} }}")),
    ];
    for (i, (what, doc)) in refused.iter().enumerate() {
        let id = format!("gqlcap-refused-{i}-{}", std::process::id());
        expect_refused(&gql_with_id(app, "/graphql", doc, &id).await, what);
        assert!(!std::fs::read_to_string(&app.core_log).unwrap_or_default().contains(&id), "{what} reached the core");
    }
    // Two logins in one document: one is the cap (Directus clients send one).
    let logins = r#"mutation { a: auth_login(email: "x@example.com", password: "p") { access_token } b: auth_login(email: "y@example.com", password: "p") { access_token } }"#;
    let id = format!("gqlcap-logins-{}", std::process::id());
    expect_refused(&gql_with_id(app, "/graphql/system", logins, &id).await, "two auth_login");
    assert!(!std::fs::read_to_string(app.log_file("auth-service.log")).unwrap_or_default().contains(&id), "the logins reached auth-service");
    // Ordinary documents still run, and reach the core (so the log check above can fail).
    let id = format!("gqlcap-ok-{}", std::process::id());
    let ok = gql_with_id(app, "/graphql", "{ a: articles(limit: 1) { id } b: articles(limit: 1) { title } }", &id).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.body.get("errors").is_none(), "{}", ok.body);
    assert!(logged(&app.core_log, &id).await, "an accepted document's calls are logged with its request id");
}

#[tokio::test]
async fn long_query_strings_and_identifiers_are_refused_early() {
    let app = env();
    // MAX_QUERY_STRING_SIZE is 16 KiB by default (hyper itself stops at 64 KiB).
    let long = "x".repeat(20 * 1024);
    let r = app.get(&format!("/items/articles?filter[title][_eq]={long}")).await;
    assert_error(&r, 400, "INVALID_QUERY", "a 20 KiB query string");
    let r = send(app, Method::GET, &format!("/graphql?query={{articles{{id}}}}&x={long}"), Some(ADMIN_TOKEN), &[], None).await;
    assert_eq!(r.status, 400, "GraphQL over GET too: {}", r.body);
    let name = "f".repeat(65);
    for q in [format!("fields={name}"), format!("sort=-{name}"), format!("filter[{name}][_eq]=1"), format!("fields=author.{name}")] {
        let r = app.get(&format!("/items/articles?{q}")).await;
        assert_error(&r, 400, "INVALID_QUERY", &q);
        assert!(!r.body.to_string().contains(&name), "the identifier is not echoed: {}", r.body);
    }
    let body = json!({"query": {"fields": [name.clone()]}}).to_string();
    let r = send(app, Method::from_bytes(b"SEARCH").expect("method"), "/items/articles", Some(ADMIN_TOKEN), &[], Some(("application/json", body))).await;
    assert_error(&r, 400, "INVALID_QUERY", "SEARCH body");
    // 64 characters is still a name (unknown here: FORBIDDEN).
    assert_error(&app.get(&format!("/items/articles?fields={}", "f".repeat(64))).await, 403, "FORBIDDEN", "64 characters");
}

#[tokio::test]
async fn csv_exports_neutralise_formula_cells() {
    let app = env();
    let payloads = ["=HYPERLINK(\"http://evil.example\")", "+1+cmd", "-2+3", "@SUM(A1)", "\tTAB", "\rCR", "plain"];
    let body = Value::Array(payloads.iter().map(|t| json!({"title": t, "status": "draft", "body": "csv-injection"})).collect()).to_string();
    let r = send(app, Method::POST, "/items/articles", Some(ADMIN_TOKEN), &[], Some(("application/json", body))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let res = http_client()
        .build()
        .expect("client")
        .get(format!("{}/items/articles?fields=title,word_count&filter[body][_eq]=csv-injection&sort=id&limit=-1&export=csv", app.rest_url))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .expect("export");
    assert_eq!(res.status().as_u16(), 200);
    let text = res.text().await.expect("csv");
    let titles: Vec<String> = csv_rows(&text).into_iter().skip(1).map(|row| row[0].clone()).collect();
    let expected: Vec<String> = payloads.iter().map(|t| if *t == "plain" { (*t).to_owned() } else { format!("'{t}") }).collect();
    assert_eq!(titles, expected, "{text}");
}

#[tokio::test]
async fn constraint_errors_name_the_collection_and_field_only() {
    let app = env();
    let post = |path: &'static str, body: Value| async move {
        send(app, Method::POST, path, Some(ADMIN_TOKEN), &[], Some(("application/json", body.to_string()))).await
    };
    // Unique: the caller's own value may come back; nothing else of the database does.
    let r = post("/items/authors", json!({"name": "U1", "email": "unique-1@example.com"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post("/items/authors", json!({"name": "U2", "email": "unique-1@example.com"})).await;
    assert_error(&r, 400, "RECORD_NOT_UNIQUE", "duplicate email");
    let ext = &r.body["errors"][0]["extensions"];
    assert_eq!((ext["collection"].as_str(), ext["field"].as_str()), (Some("authors"), Some("email")), "{}", r.body);
    // A system collection is named as the API names it, never by its table.
    let r = post("/users", json!({"email": "admin@example.com", "password": "a-good-password-1"})).await;
    assert_error(&r, 400, "RECORD_NOT_UNIQUE", "duplicate user email");
    let ext = &r.body["errors"][0]["extensions"];
    assert_eq!(ext["collection"], "directus_users", "{}", r.body);
    assert!(!r.body.to_string().contains("cdapi."), "{}", r.body);
    // Check constraint: the field, not the constraint's name.
    let r = post("/items/articles", json!({"title": "c", "status": "bogus"})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "check constraint");
    assert_eq!(r.body["errors"][0]["extensions"]["field"], "status", "{}", r.body);
    assert!(!r.body.to_string().contains("articles_status_check"), "{}", r.body);
    // Deleting a referenced item: neither the referencing collection nor its column is named.
    let author = post("/items/authors", json!({"name": "Referenced"})).await;
    let author_id = author.body["data"]["id"].clone();
    let r = post("/items/articles", json!({"title": "refers", "author": author_id})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = send(app, Method::DELETE, &format!("/items/authors/{author_id}"), Some(ADMIN_TOKEN), &[], None).await;
    assert_error(&r, 400, "INVALID_FOREIGN_KEY", "still referenced");
    let text = r.body.to_string();
    assert!(!text.contains("articles"), "the referencing collection is not named: {text}");
    assert_eq!(r.body["errors"][0]["extensions"]["collection"], "authors", "{text}");
}

/// The rows of a CSV text (RFC 4180: quoted fields may hold commas, quotes, CR and LF).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut cell, mut quoted) = (Vec::new(), Vec::new(), String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut cell)),
            ('\n', false) => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            ('\r', false) if chars.peek() == Some(&'\n') => {}
            (c, _) => cell.push(c),
        }
    }
    if !cell.is_empty() || !row.is_empty() {
        row.push(cell);
        rows.push(row);
    }
    rows
}
