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

/// A small deterministic generator (xorshift64*), so a failure can be replayed.
struct Steps(u64);

impl Steps {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// The reads compared: lists, one item, nested to-one, to-many and many-to-many, counts and
/// aggregates, over the first 30 articles (the ones written). `{A}` is one of the first five.
const READS: [&str; 9] = [
    "/items/articles?fields=id,title,status,rating,author.name&filter[id][_lte]=30&sort=id",
    "/items/articles?filter[status][_eq]=published&filter[id][_lte]=30&fields=id,title&sort=-id&meta=total_count,filter_count",
    "/items/articles/{A}?fields=id,title,status,author.name,tags.tags_id.name",
    "/items/articles/{A}?fields=*,comments.body",
    "/items/authors?fields=id,name,articles.id,articles.status&filter[id][_lte]=5&sort=id",
    "/items/articles?aggregate[count]=*&aggregate[sum]=rating&groupBy[]=status&filter[id][_lte]=30&sort=status",
    "/items/tags?fields=id,name,articles.articles_id.title&filter[id][_lte]=5&sort=id",
    "/items/comments?fields=id,body,article.title&filter[article][_lte]=30&sort=id",
    "/items/articles_tags?fields=id,articles_id,tags_id&filter[articles_id][_lte]=30&sort=id",
];

/// One random write as the admin; created comments and links are remembered for deletes.
async fn write(app: &TestApp, rng: &mut Steps, step: usize, comments: &mut Vec<i64>, links: &mut Vec<i64>) {
    let article = 1 + rng.below(30);
    let (method, path, body) = match rng.below(9) {
        0 => (Method::PATCH, format!("/items/articles/{article}"), json!({"status": if rng.below(2) == 0 { "draft" } else { "published" }})),
        1 => (Method::PATCH, format!("/items/articles/{article}"), json!({"title": format!("title {step}")})),
        2 => (Method::PATCH, format!("/items/articles/{article}"), json!({"author": 1 + rng.below(8)})),
        3 => (Method::PATCH, format!("/items/authors/{}", 1 + rng.below(5)), json!({"name": format!("author {step}")})),
        4 => (Method::POST, "/items/comments".to_owned(), json!({"article": article, "body": format!("comment {step}")})),
        5 if !comments.is_empty() => (Method::DELETE, format!("/items/comments/{}", comments.remove(rng.below(comments.len() as u64) as usize)), Value::Null),
        6 => (Method::POST, "/items/articles_tags".to_owned(), json!({"articles_id": article, "tags_id": 1 + rng.below(5)})),
        7 if !links.is_empty() => (Method::DELETE, format!("/items/articles_tags/{}", links.remove(rng.below(links.len() as u64) as usize)), Value::Null),
        8 => (Method::PATCH, format!("/items/tags/{}", 1 + rng.below(5)), json!({"name": format!("tag {step}")})),
        _ => (Method::PATCH, "/items/articles".to_owned(), json!({"keys": [article, 1 + rng.below(30)], "data": {"rating": rng.below(6)}})),
    };
    let body = (!body.is_null()).then(|| ("application/json", body.to_string()));
    let r = send(app, method.clone(), &path, Some(ADMIN_TOKEN), &[], body).await;
    assert!(r.status == 200 || r.status == 204, "step {step}: {method} {path}: {} {}", r.status, r.body);
    let id = r.body["data"]["id"].as_i64();
    match (path.as_str(), method, id) {
        ("/items/comments", Method::POST, Some(id)) => comments.push(id),
        ("/items/articles_tags", Method::POST, Some(id)) => links.push(id),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_answers_equal_fresh_reads_over_random_writes() {
    let app = tokio::task::spawn_blocking(shared).await.expect("join");
    let fx = fixture::demo(app).await;
    let tokens = [Some(ADMIN_TOKEN), Some(fx.reviewer.as_str()), None];
    let mut rng = Steps(0x5EED_CAFE_F00D_0001);
    let (mut comments, mut links) = (Vec::new(), Vec::new());
    let hits_before = lookups(app, "hit").await;
    let mut compared = 0;
    for step in 0..2_000 {
        if rng.below(20) < 3 {
            write(app, &mut rng, step, &mut comments, &mut links).await;
            continue;
        }
        let path = READS[rng.below(READS.len() as u64) as usize].replace("{A}", &(1 + rng.below(5)).to_string());
        let token = tokens[rng.below(tokens.len() as u64) as usize];
        let cached = send(app, Method::GET, &path, token, &[], None).await;
        let fresh = send(app, Method::GET, &path, token, &[("cache-control", "no-store")], None).await;
        assert_eq!((cached.status, &cached.body), (fresh.status, &fresh.body), "step {step}: GET {path} as {token:?}: cached answer differs from a fresh read");
        compared += 1;
    }
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
