//! The result cache (docs/scaling.md "The result cache"): never stale.
//!
//! - Over thousands of random steps (writes through REST, reads by the admin, a role with row
//!   and field permissions and the public), every cached answer equals a fresh read of the
//!   database (`Cache-Control: no-store`, CACHE_SKIP_ALLOWED), with two core replicas sharing
//!   the cache; the cache answers many of them.
//! - A write through one core replica is seen at once by a read through another that had the
//!   old answer cached (gRPC, straight to each replica).
//! - A write made with plain SQL (not through the API) is seen once the database announced it.
//! - A permission change is visible at once.
//! - With the invalidation feed stopped (its connection killed and new connections refused),
//!   once the core noticed, a write made meanwhile is seen at once: reads go to the database;
//!   once the feed is back, the cache answers again.
//! - An answer over CACHE_MAX_ENTRY_BYTES is not stored; `Cache-Control: no-store` is ignored
//!   unless CACHE_SKIP_ALLOWED.
//!
//! Hits are read from core-service's `cdapi_cache_lookups_total{result}` counter.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::{Query, ReadRequest, UpdateItemRequest};
use e2e_tests::api::Api;
use e2e_tests::fixture::{self, eventually};
use e2e_tests::{ADMIN_TOKEN, Dataset, Reply, Spec, TestApp, exec, send, start};
use reqwest::Method;
use serde_json::{Value, json};

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// Two core replicas sharing the cache (the edges balance over them).
fn shared() -> &'static TestApp {
    static APP: std::sync::OnceLock<TestApp> = std::sync::OnceLock::new();
    APP.get_or_init(|| {
        start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("result_cache".into()),
            replicas: 2,
            metrics: true,
            core_env: env(&[("CACHE_ENABLED", "true"), ("CACHE_SKIP_ALLOWED", "true")]),
            ..Spec::default()
        })
        .expect("environment")
    })
}

/// core-service's cache lookups so far with this result (`hit`, `miss`, `bypass`), summed
/// over replicas.
async fn lookups(app: &TestApp, result: &str) -> f64 {
    e2e_tests::metric_total(app, "core", "cdapi_cache_lookups_total", &format!("result=\"{result}\"")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_answers_equal_fresh_reads_over_random_writes() {
    let app = tokio::task::spawn_blocking(shared).await.expect("join");
    let fx = fixture::demo(app).await;
    let hits_before = lookups(app, "hit").await;
    let compared = e2e_tests::random_steps::compare(app, 0x5EED_CAFE_F00D_0001, 2_000, &fx.reviewer, |_| 0, |_| 0).await;
    let hits = lookups(app, "hit").await - hits_before;
    assert!(hits >= f64::from(compared) / 5.0, "the cache answered {hits} of {compared} reads");
}

/// `msg` as the admin.
fn authed<T>(msg: T) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
    req
}

/// The title of heading `id` read through the core replica `client` (headings: a collection
/// the random steps never write).
async fn title_via(client: &mut ItemsServiceClient<tonic::transport::Channel>, id: &str) -> Value {
    let q = Query { fields: e2e_tests::paths(&["title"]), ..Query::default() };
    let r = client.read(authed(ReadRequest { collection: "headings".into(), key: Some(id.into()), query: Some(q) })).await.expect("read");
    let item: Value = serde_json::from_slice(&r.into_inner().data).expect("json");
    item["title"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_one_core_replica_are_seen_through_another_at_once() {
    let app = tokio::task::spawn_blocking(shared).await.expect("join");
    let mut one = ItemsServiceClient::connect(app.core_urls[0].clone()).await.expect("core 1");
    let mut two = ItemsServiceClient::connect(app.core_urls[1].clone()).await.expect("core 2");
    for round in 0..20 {
        let before = title_via(&mut two, "1").await;
        // An answer is stored after it is sent (in the background): read until the cache answers.
        let mut cached = false;
        for _ in 0..50 {
            let hits = lookups(app, "hit").await;
            assert_eq!(title_via(&mut two, "1").await, before);
            if lookups(app, "hit").await > hits {
                cached = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(cached, "round {round}: a later read is answered by the cache");
        let title = format!("across replicas {round}");
        let data = json!({"title": title}).to_string().into_bytes().into();
        one.update_item(authed(UpdateItemRequest { collection: "headings".into(), key: "1".into(), data, query: None })).await.expect("update");
        assert_eq!(title_via(&mut two, "1").await, json!(title), "round {round}: the other replica's cached answer was dropped before the write answered");
    }

    // A write by plain SQL is announced by the database: seen once announced.
    for _ in 0..2 {
        let cached = send(app, Method::GET, "/items/headings/2?fields=title", Some(ADMIN_TOKEN), &[], None).await;
        assert_eq!(cached.status, 200, "{}", cached.body);
    }
    exec(app, "UPDATE headings SET title = 'written by plain SQL' WHERE id = 2").await;
    eventually("a plain SQL write reaches the cache", || async {
        let r = send(app, Method::GET, "/items/headings/2?fields=title", Some(ADMIN_TOKEN), &[], None).await;
        r.body["data"]["title"] == "written by plain SQL"
    })
    .await;
}

/// One core replica, the cache on: for the tests that stop its feed or change permissions.
fn single() -> TestApp {
    start(Spec {
        dataset: Dataset::DemoWrites,
        name: Some("result_cache_single".into()),
        metrics: true,
        core_env: env(&[("CACHE_ENABLED", "true")]),
        ..Spec::default()
    })
    .expect("environment")
}

/// The URL of database `db` on the tests' server.
fn test_harness_url(db: &str) -> String {
    test_harness::database_url(db)
}

async fn title_of(app: &TestApp, token: Option<&str>, id: i64) -> Reply {
    app.as_token(token, Method::GET, &format!("/items/articles/{id}?fields=title"), None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_changes_and_a_stopped_feed_never_serve_stale_answers() {
    let app: &'static TestApp = Box::leak(Box::new(tokio::task::spawn_blocking(single).await.expect("join")));
    let (token, _, _) = fixture::role(app, "Readers", json!([{"collection": "articles", "action": "read", "fields": ["id", "title"]}])).await;
    // Cached, then a permission that narrows the rows: the next read is refused at once.
    for _ in 0..2 {
        assert_eq!(title_of(app, Some(&token), 7).await.status, 200);
    }
    let id = app.sql("SELECT to_json(p.id)::text FROM cdapi.permissions p JOIN cdapi.policies y ON y.id = p.policy WHERE y.name = 'Readers' AND p.collection = 'articles'",
    )
    .await;
    let r = app.as_token(Some(ADMIN_TOKEN), Method::PATCH, &format!("/permissions/{id}"), Some(json!({"permissions": {"id": {"_gt": 7}}}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    e2e_tests::assert_error(&title_of(app, Some(&token), 7).await, 403, "FORBIDDEN", "a row the role may no longer read");

    // The feed stopped: its connection killed, new connections refused (the pool keeps its own).
    for _ in 0..2 {
        assert_eq!(title_of(app, Some(ADMIN_TOKEN), 8).await.status, 200);
    }
    let db = app.sql("SELECT to_json(current_database())::text").await;
    let db = db.as_str().expect("name").to_owned();
    use sqlx::Connection;
    let mut held = sqlx::PgConnection::connect(&app.database_url).await.expect("connect");
    // A database cannot refuse connections from a session of its own: said from another.
    let mut other = sqlx::PgConnection::connect(&test_harness_url("postgres")).await.expect("connect to postgres");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("ALTER DATABASE \"{db}\" ALLOW_CONNECTIONS false"))).execute(&mut other).await.expect("refuse connections");
    let killed: i64 = sqlx::query_scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%cdapi_cache_fence%' AND pid <> pg_backend_pid()",
    )
    .fetch_one(&mut held)
    .await
    .expect("kill the listener");
    assert_eq!(killed, 1, "one listener connection");
    // The core notices at once (the server ends the connection with an error).
    eventually("the core notices its feed is down", || async {
        let bypassed = lookups(app, "bypass").await;
        title_of(app, Some(ADMIN_TOKEN), 8).await;
        lookups(app, "bypass").await > bypassed
    })
    .await;
    // Written while nothing announces it: every read sees it at once.
    sqlx::query("UPDATE articles SET title = 'while the feed is down' WHERE id = 8").execute(&mut held).await.expect("write");
    let bypassed = lookups(app, "bypass").await;
    for _ in 0..5 {
        let r = title_of(app, Some(ADMIN_TOKEN), 8).await;
        assert_eq!(r.body["data"]["title"], "while the feed is down", "{}", r.body);
    }
    assert_eq!(lookups(app, "bypass").await - bypassed, 5.0, "reads went to the database while the feed was down");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("ALTER DATABASE \"{db}\" ALLOW_CONNECTIONS true"))).execute(&mut other).await.expect("allow connections");
    // Back: the cache answers again (after dropping everything).
    eventually("the cache answers again once the feed is back", || async {
        let hits = lookups(app, "hit").await;
        let r = title_of(app, Some(ADMIN_TOKEN), 8).await;
        r.body["data"]["title"] == "while the feed is down" && lookups(app, "hit").await > hits
    })
    .await;
}

/// An answer over CACHE_MAX_ENTRY_BYTES is never stored (each read is a miss), and
/// `Cache-Control: no-store` is ignored unless CACHE_SKIP_ALLOWED (default false, as Directus):
/// such reads are still answered from the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_answers_are_not_stored_and_no_store_needs_the_setting() {
    let small_entries = || {
        start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("result_cache_small".into()),
            metrics: true,
            core_env: env(&[("CACHE_ENABLED", "true"), ("CACHE_MAX_ENTRY_BYTES", "4096")]),
            ..Spec::default()
        })
        .expect("environment")
    };
    let app: &'static TestApp = Box::leak(Box::new(tokio::task::spawn_blocking(small_entries).await.expect("join")));
    let small = "/items/articles/3?fields=id,title";
    let no_store = [("cache-control", "no-store")];
    eventually("a small answer is stored", || async {
        let hits = lookups(app, "hit").await;
        assert_eq!(send(app, Method::GET, small, Some(ADMIN_TOKEN), &no_store, None).await.status, 200);
        lookups(app, "hit").await > hits
    })
    .await;
    let (hits, bypassed) = (lookups(app, "hit").await, lookups(app, "bypass").await);
    for _ in 0..3 {
        let r = send(app, Method::GET, small, Some(ADMIN_TOKEN), &no_store, None).await;
        assert_eq!(r.body["data"]["id"], 3, "{}", r.body);
    }
    assert_eq!(lookups(app, "bypass").await, bypassed, "no-store skipped the cache without CACHE_SKIP_ALLOWED");
    assert_eq!(lookups(app, "hit").await - hits, 3.0, "no-store reads answered from the cache");

    let big = "/items/articles?fields=id,title,body&limit=100&sort=id";
    let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, big, None).await;
    assert!(r.body.to_string().len() > 4096, "the answer must be over the entry size: {} bytes", r.body.to_string().len());
    let (hits, misses) = (lookups(app, "hit").await, lookups(app, "miss").await);
    for _ in 0..10 {
        assert_eq!(app.as_token(Some(ADMIN_TOKEN), Method::GET, big, None).await.status, 200);
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    }
    assert_eq!(lookups(app, "hit").await, hits, "an answer over CACHE_MAX_ENTRY_BYTES was stored");
    assert_eq!(lookups(app, "miss").await - misses, 10.0);
}
