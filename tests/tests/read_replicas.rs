//! Read replicas with read-your-writes (docs/operations.md "Read replicas"), against a real
//! streaming replica: the environment's own PostgreSQL and a replica of it made with
//! `pg_basebackup`, applying every commit [`DELAY_MS`] late (`recovery_min_apply_delay`), so it
//! is certainly behind right after a write.
//!
//! - a write answers with a consistency token (REST header and cookie, GraphQL header, gRPC
//!   metadata);
//! - a read without a token goes to the replica and sees the older state;
//! - a read with the token (header, cookie or metadata) never does: it is served by the primary
//!   while the replica lacks the write, and by the replica once it has it;
//! - a collection just made is readable at once, token or not (reads wait for a replica that
//!   has replayed the schema the core plans with);
//! - a malformed token is INVALID_QUERY;
//! - a forged token (beyond anything written) and reads of users go to the primary;
//! - a cookie that is no WAL position is ignored;
//! - a replica more than DB_REPLICA_MAX_LAG_MS behind is skipped until it catches up;
//! - a replica that stops is skipped at once (no failed read), and used again once it is back;
//!   once promoted (no longer following the primary), it is never read from.
//!
//! Which server answered is read from core-service's `cdapi_db_reads_total{target}` counter.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::{CreateItemRequest, Query, ReadRequest};
use e2e_tests::api::Api;
use e2e_tests::fixture::eventually;
use e2e_tests::{ADMIN_TOKEN, Dataset, Reply, Spec, TestApp, assert_error, send, start};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

/// How late the replica applies each commit (milliseconds).
const DELAY_MS: u64 = 2_000;

fn spec() -> Spec {
    let env = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<Vec<_>>();
    Spec {
        dataset: Dataset::DemoWrites,
        name: Some("read_replicas".into()),
        own_postgres: true,
        read_replica: Some(DELAY_MS),
        metrics: true,
        // The replica is DELAY_MS behind on purpose: well within the lag it may have.
        core_env: env(&[("DB_REPLICA_MAX_LAG_MS", "60000"), ("DB_REPLICA_WAIT_MS", "100"), ("DB_REPLICA_POLL_MS", "20")]),
        ..Spec::default()
    }
}

/// core-service's reads so far: (primary, replica).
async fn reads(app: &TestApp) -> (f64, f64) {
    let primary = e2e_tests::metric_total(app, "core", "cdapi_db_reads_total", "target=\"primary\"").await;
    let replica = e2e_tests::metric_total(app, "core", "cdapi_db_reads_total", "target=\"replica\"").await;
    (primary, replica)
}

/// `GET /items/tags?filter[name][_eq]=<name>` as the admin with extra `headers`: the names found.
async fn tags_named(app: &TestApp, name: &str, headers: &[(&str, &str)]) -> Vec<Value> {
    let r = send(app, Method::GET, &format!("/items/tags?fields=name&filter[name][_eq]={name}"), Some(ADMIN_TOKEN), headers, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"].as_array().cloned().unwrap_or_default()
}

/// Creates a tag through REST; returns the reply.
async fn create_tag(app: &TestApp, name: &str) -> Reply {
    let r = send(app, Method::POST, "/items/tags", Some(ADMIN_TOKEN), &[], Some(("application/json", json!({"name": name}).to_string()))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r
}

/// `msg` as the admin.
fn authed<T>(msg: T) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
    req
}

fn token_of(r: &Reply) -> String {
    let token = r.headers.get("x-consistency-token").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    assert!(token.split_once('/').is_some_and(|(a, b)| hex(a) && hex(b)), "a write answers a WAL position as its token: {:?}", r.headers);
    token
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_with_a_writes_token_never_see_an_older_state() {
    let app = tokio::task::spawn_blocking(|| start(spec())).await.expect("join").expect("environment");
    // Reads reach the replica once it has replayed what the core saw at start.
    eventually("reads go to the replica", || async {
        let before = reads(&app).await.1;
        tags_named(&app, "nothing", &[]).await;
        reads(&app).await.1 > before
    })
    .await;

    // A write answers its token, as a header and a cookie.
    let w = create_tag(&app, "replica-one").await;
    let token = token_of(&w);
    let cookie = e2e_tests::cookie_value(&w, "cdapi_consistency");
    assert_eq!(cookie.as_deref(), Some(token.as_str()), "the cookie carries the token");

    // Without the token: the replica, DELAY_MS behind, answers the state before the write.
    let (p0, r0) = reads(&app).await;
    assert_eq!(tags_named(&app, "replica-one", &[]).await, Vec::<Value>::new(), "a read without the token may be old (the replica lags)");
    let (p1, r1) = reads(&app).await;
    assert_eq!((p1 - p0, r1 - r0), (0.0, 1.0), "the tokenless read went to the replica");

    // With it (header, then cookie): the write is seen, from the primary while the replica lacks it.
    assert_eq!(tags_named(&app, "replica-one", &[("x-consistency-token", &token)]).await, vec![json!({"name": "replica-one"})]);
    let cookie_header = format!("cdapi_consistency={token}");
    assert_eq!(tags_named(&app, "replica-one", &[("cookie", &cookie_header)]).await, vec![json!({"name": "replica-one"})]);
    let (p2, r2) = reads(&app).await;
    assert_eq!((p2 - p1, r2 - r1), (2.0, 0.0), "reads holding the token waited DB_REPLICA_WAIT_MS, then went to the primary");

    // Once the replica replayed the write, reads holding the token go to it.
    tokio::time::sleep(Duration::from_millis(DELAY_MS)).await;
    eventually("the replica serves the token once it has replayed it", || async {
        let before = reads(&app).await.1;
        assert_eq!(tags_named(&app, "replica-one", &[("x-consistency-token", &token)]).await, vec![json!({"name": "replica-one"})]);
        reads(&app).await.1 > before
    })
    .await;

    // A forged token beyond anything written: answered by the primary (at once, not after
    // waiting for replicas that will never reach it).
    let (p3, r3) = reads(&app).await;
    assert_eq!(tags_named(&app, "replica-one", &[("x-consistency-token", "FFFFFFFF/FFFFFFFE")]).await, vec![json!({"name": "replica-one"})]);
    // Users are written by auth-service too (whose answers carry no token): read on the primary.
    let me = send(&app, Method::GET, "/users/me", Some(ADMIN_TOKEN), &[], None).await;
    assert_eq!(me.status, 200, "{}", me.body);
    let (p4, r4) = reads(&app).await;
    assert_eq!((p4 - p3, r4 - r3), (2.0, 0.0), "a forged token and a user read go to the primary");

    // A cookie that is no WAL position (another site's, say) is ignored, not an error.
    assert_eq!(tags_named(&app, "replica-one", &[("cookie", "cdapi_consistency=garbage")]).await, vec![json!({"name": "replica-one"})]);

    // A new collection is readable at once, without a token: reads planned on the snapshot
    // that has it wait for a replica that has it too (or go to the primary).
    let c = send(
        &app,
        Method::POST,
        "/collections",
        Some(ADMIN_TOKEN),
        &[],
        Some(("application/json", json!({"collection": "replica_fresh", "schema": {}, "fields": [{"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}}]}).to_string())),
    )
    .await;
    assert_eq!(c.status, 200, "{}", c.body);
    let r = send(&app, Method::GET, "/items/replica_fresh", Some(ADMIN_TOKEN), &[], None).await;
    assert_eq!((r.status, &r.body["data"]), (200, &json!([])), "a collection just made reads at once: {}", r.body);

    // A token that is not a WAL position is refused, not ignored.
    let r = send(&app, Method::GET, "/items/tags", Some(ADMIN_TOKEN), &[("x-consistency-token", "newest please")], None).await;
    assert_error(&r, 400, "INVALID_QUERY", "a malformed consistency token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphql_and_grpc_carry_the_token_and_a_stopped_replica_is_skipped() {
    let app = tokio::task::spawn_blocking(|| start(Spec { name: Some("read_replicas_other".into()), ..spec() })).await.expect("join").expect("environment");
    eventually("reads go to the replica", || async {
        let before = reads(&app).await.1;
        tags_named(&app, "nothing", &[]).await;
        reads(&app).await.1 > before
    })
    .await;

    // GraphQL: the mutation's answer carries the token; a query sending it sees the write.
    let m = app.graphql("/graphql", Some(ADMIN_TOKEN), r#"mutation { create_tags_item(data: {name: "replica-gql"}) { name } }"#, json!({})).await;
    assert_eq!(m.status, 200, "{}", m.body);
    let token = token_of(&m);
    let query = json!({"query": r#"{ tags(filter: {name: {_eq: "replica-gql"}}) { name } }"#}).to_string();
    let ask = |headers: Vec<(&'static str, String)>| {
        let (app, query) = (&app, query.clone());
        async move {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let r = send(app, Method::POST, "/graphql", Some(ADMIN_TOKEN), &h, Some(("application/json", query))).await;
            assert_eq!(r.status, 200, "{}", r.body);
            r.body["data"]["tags"].clone()
        }
    };
    assert_eq!(ask(vec![]).await, json!([]), "without the token the lagging replica answers");
    assert_eq!(ask(vec![("x-consistency-token", token.clone())]).await, json!([{"name": "replica-gql"}]));

    // gRPC: the write's response metadata holds the token; a read sending it sees the write.
    let mut items = ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    let created = items
        .create_item(authed(CreateItemRequest { collection: "tags".into(), data: json!({"name": "replica-grpc"}).to_string().into(), query: None }))
        .await
        .expect("CreateItem");
    let grpc_token = created.metadata().get("x-consistency-token").and_then(|v| v.to_str().ok()).map(str::to_owned).expect("a token in the metadata");
    let key: Value = serde_json::from_slice(&created.get_ref().data).expect("item");
    let read = |token: Option<String>| {
        let mut items = items.clone();
        let key = key["id"].to_string();
        async move {
            let mut req = authed(ReadRequest { collection: "tags".into(), key: Some(key), query: Some(Query::default()) });
            if let Some(t) = token {
                req.metadata_mut().insert("x-consistency-token", t.parse().expect("metadata"));
            }
            items.read(req).await.map(|r| r.into_inner().data)
        }
    };
    assert_eq!(read(None).await.map_err(|s| s.code()).err(), Some(tonic::Code::PermissionDenied), "the replica has no such item yet");
    assert!(read(Some(grpc_token)).await.is_ok_and(|d| !d.is_empty()), "with the token the item is read");

    // The replica stops: reads go on, from the primary, without a failure.
    let a = std::sync::Arc::new(app);
    let stop = a.clone();
    tokio::task::spawn_blocking(move || stop.read_replica().and_then(|r| r.halt())).await.expect("join").expect("the replica stops");
    for _ in 0..20 {
        assert_eq!(tags_named(&a, "replica-grpc", &[]).await, vec![json!({"name": "replica-grpc"})], "served by the primary");
    }
    let (p0, r0) = reads(&a).await;
    tags_named(&a, "replica-grpc", &[]).await;
    let (p1, r1) = reads(&a).await;
    assert_eq!((p1 - p0, r1 - r0), (1.0, 0.0), "a stopped replica is skipped");

    // Back again: used again.
    let resume = a.clone();
    tokio::task::spawn_blocking(move || resume.read_replica().and_then(|r| r.resume())).await.expect("join").expect("the replica starts");
    eventually("reads go to the replica again", || async {
        let before = reads(&a).await.1;
        tags_named(&a, "nothing", &[]).await;
        reads(&a).await.1 > before
    })
    .await;

    // Promoted to a primary of its own (it no longer follows ours): never read from again.
    let promote = a.clone();
    tokio::task::spawn_blocking(move || promote.read_replica().and_then(|r| r.promote())).await.expect("join").expect("the replica is promoted");
    eventually("a promoted replica is skipped", || async {
        let before = reads(&a).await;
        tags_named(&a, "nothing", &[]).await;
        let after = reads(&a).await;
        (after.0 - before.0, after.1 - before.1) == (1.0, 0.0)
    })
    .await;
    for _ in 0..10 {
        let (p, r) = reads(&a).await;
        tags_named(&a, "nothing", &[]).await;
        assert_eq!(reads(&a).await, (p + 1.0, r), "a promoted replica stays skipped");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_too_far_behind_is_skipped_until_it_catches_up() {
    let lag_env = [("DB_REPLICA_MAX_LAG_MS", "500"), ("DB_REPLICA_WAIT_MS", "100"), ("DB_REPLICA_POLL_MS", "20")];
    let spec = Spec {
        name: Some("read_replicas_lag".into()),
        // Applying 4 s late: more than DB_REPLICA_MAX_LAG_MS behind for 3.5 s after a write.
        read_replica: Some(4_000),
        core_env: lag_env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        ..spec()
    };
    let app = tokio::task::spawn_blocking(move || start(spec)).await.expect("join").expect("environment");
    eventually("reads go to the replica", || async {
        let before = reads(&app).await.1;
        tags_named(&app, "nothing", &[]).await;
        reads(&app).await.1 > before
    })
    .await;
    create_tag(&app, "lag-one").await;
    // Past DB_REPLICA_MAX_LAG_MS and well before the replica applies the write: it is skipped,
    // so even a read without a token sees the write, from the primary.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let (p0, r0) = reads(&app).await;
    assert_eq!(tags_named(&app, "lag-one", &[]).await, vec![json!({"name": "lag-one"})], "served by the primary");
    let (p1, r1) = reads(&app).await;
    assert_eq!((p1 - p0, r1 - r0), (1.0, 0.0), "a replica too far behind is skipped");
    // Caught up: read from again.
    eventually("the replica is read from once it caught up", || async {
        let before = reads(&app).await.1;
        assert_eq!(tags_named(&app, "lag-one", &[]).await, vec![json!({"name": "lag-one"})]);
        reads(&app).await.1 > before
    })
    .await;
}
