//! The edge cache (docs/scaling.md "The edge cache"): item reads answered from an edge's
//! memory, never once stale, never another caller's.
//!
//! - A kept answer is served without asking the core; a write through another edge is seen at
//!   once, a plain SQL write once the database announced it; over thousands of random writes
//!   and reads by three callers through both edges, every answer equals a fresh read; an edge
//!   stopped with SIGTERM leaves the registry (writes stop waiting for it).
//! - From the attacker's side: another token, the public, the same token from another address
//!   never get a kept answer; a suspended user, a narrowed permission, an expired JWT and a
//!   logged-out session are refused at once.
//! - With the edges' feed frozen (a proxy between them and Redis that stops passing bytes
//!   without closing anything), a write's answer waits out the edges' lease, and no edge
//!   answers the old state afterwards.
//!
//! Edge and core lookups are read from `cdapi_cache_lookups_total{result}`.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{self, eventually};
use e2e_tests::{ADMIN_TOKEN, Dataset, Reply, Spec, TestApp, exec, post_json, send_at, start};
use reqwest::Method;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// `replicas` core replicas and two edges, both caches on; `edge_redis` overrides the edges'
/// REDIS_URL.
fn spec(name: &str, replicas: usize, edge_redis: Option<String>) -> Spec {
    let mut edge_env = env(&[("EDGE_CACHE_ENABLED", "true"), ("IP_TRUSTED_PROXIES", "127.0.0.1")]);
    edge_env.extend(edge_redis.map(|url| ("REDIS_URL".to_owned(), url)));
    Spec {
        dataset: Dataset::DemoWrites,
        name: Some(name.into()),
        replicas,
        edges: 2,
        metrics: true,
        core_env: env(&[("CACHE_ENABLED", "true"), ("CACHE_SKIP_ALLOWED", "true")]),
        edge_env,
        // Short-lived JWTs, to see a kept answer refused once its token expired.
        auth_env: env(&[("ACCESS_TOKEN_TTL", "4s")]),
        ..Spec::default()
    }
}

/// Lookups so far with this result (`hit`, `miss`, `bypass`; empty: all) in `process`
/// (`edge` or `core`), summed over replicas.
async fn lookups(app: &TestApp, process: &str, result: &str) -> f64 {
    e2e_tests::metric_total(app, process, "cdapi_cache_lookups_total", &format!("result=\"{result}")).await
}

async fn get_at(app: &TestApp, edge: usize, path: &str, token: Option<&str>, headers: &[(&str, &str)]) -> Reply {
    send_at(&app.rest_urls[edge], Method::GET, path, token, headers, None).await
}

/// Reads `path` at `edge` until that edge answers it from memory (it serves once it holds a
/// lease); returns the answer.
async fn kept(app: &TestApp, edge: usize, path: &str, token: Option<&str>, headers: &[(&str, &str)]) -> Reply {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let hits = lookups(app, "edge", "hit").await;
        let r = get_at(app, edge, path, token, headers).await;
        if lookups(app, "edge", "hit").await > hits {
            return r;
        }
        if Instant::now() >= deadline {
            let mut seen = String::new();
            for (_, url) in app.metrics.iter().filter(|(n, _)| *n == "edge") {
                let text = reqwest::get(url).await.expect("metrics").text().await.unwrap_or_default();
                seen.push_str(&text.lines().filter(|l| l.starts_with("cdapi_cache_lookups_total")).collect::<Vec<_>>().join(" "));
                seen.push_str(" | ");
            }
            panic!("edge {edge} never answered {path} from memory: {} {}; edges: {seen}", r.status, r.body);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn patch_at(app: &TestApp, edge: usize, path: &str, body: serde_json::Value) -> Reply {
    let r = send_at(&app.rest_urls[edge], Method::PATCH, path, Some(ADMIN_TOKEN), &[], Some(("application/json", body.to_string()))).await;
    assert_eq!(r.status, 200, "PATCH {path}: {}", r.body);
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_answer_skips_the_core_and_writes_are_seen_at_once() {
    let app: &'static TestApp = Box::leak(Box::new(tokio::task::spawn_blocking(|| start(spec("edge_cache", 2, None))).await.expect("join").expect("env")));
    let path = "/items/headings/1?fields=id,title";
    for round in 0..20 {
        kept(app, 0, path, Some(ADMIN_TOKEN), &[]).await;
        // Answered from memory: the core is not asked at all.
        let (core, hits) = (lookups(app, "core", "").await, lookups(app, "edge", "hit").await);
        for _ in 0..3 {
            assert_eq!(get_at(app, 0, path, Some(ADMIN_TOKEN), &[]).await.status, 200);
        }
        assert_eq!(lookups(app, "edge", "hit").await - hits, 3.0, "round {round}: kept answers");
        assert_eq!(lookups(app, "core", "").await, core, "round {round}: a kept answer reached the core");
        // A write through the other edge (and either core replica) answers only once this
        // edge can no longer answer the old state.
        let title = format!("through the other edge {round}");
        patch_at(app, 1, "/items/headings/1", json!({"title": title})).await;
        let r = get_at(app, 0, path, Some(ADMIN_TOKEN), &[]).await;
        assert_eq!(r.body["data"]["title"], json!(title), "round {round}: the kept answer was dropped before the write answered");
    }

    // A direct gRPC client (no internal credential) asking for the marks gets none: which
    // collections a read depended on is for the edges only.
    let mut core = cdapi_proto::v1::items_service_client::ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("core");
    let mut read = tonic::Request::new(cdapi_proto::v1::ReadRequest { collection: "headings".into(), key: Some("1".into()), query: None });
    read.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
    read.metadata_mut().insert(cdapi_proto::edge_feed::ASK_METADATA, tonic::metadata::MetadataValue::from_static("1"));
    let answer = core.read(read).await.expect("read");
    assert!(answer.metadata().get(cdapi_proto::edge_feed::REUSE_METADATA).is_none(), "marks given to a gRPC client");

    // A plain SQL write is seen once the database announced it.
    kept(app, 1, path, Some(ADMIN_TOKEN), &[]).await;
    exec(app, "UPDATE headings SET title = 'written by plain SQL' WHERE id = 1").await;
    eventually("a plain SQL write reaches the edges", || async {
        get_at(app, 1, path, Some(ADMIN_TOKEN), &[]).await.body["data"]["title"] == "written by plain SQL"
    })
    .await;

    // Lists and aggregates are kept too, and match fresh reads after writes.
    let list = "/items/headings?fields=id,title&sort=id&limit=3&meta=total_count";
    kept(app, 0, list, Some(ADMIN_TOKEN), &[]).await;
    patch_at(app, 1, "/items/headings/2", json!({"title": "a list's item written"})).await;
    let cached = get_at(app, 0, list, Some(ADMIN_TOKEN), &[]).await;
    let fresh = get_at(app, 0, list, Some(ADMIN_TOKEN), &[("cache-control", "no-store")]).await;
    assert_eq!(cached.body, fresh.body);
    assert_eq!(cached.body["data"][1]["title"], "a list's item written");

    // An edge that stops leaves the registry, so writes no longer wait for it.
    let mut redis = redis::Client::open(app.redis.0.as_str()).expect("redis").get_multiplexed_async_connection().await.expect("connect");
    let registry = cdapi_proto::edge_feed::registry(&app.redis.1);
    let registered: i64 = redis::cmd("ZCARD").arg(&registry).query_async(&mut redis).await.expect("ZCARD");
    assert_eq!(registered, 2, "both edges are registered");
    app.signal("edge", 1, "TERM").expect("SIGTERM");
    let mut left = false;
    for _ in 0..150 {
        let registered: i64 = redis::cmd("ZCARD").arg(&registry).query_async(&mut redis).await.expect("ZCARD");
        if registered == 1 {
            left = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left, "the stopped edge left the registry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_answers_equal_fresh_reads_over_random_writes_through_both_edges() {
    let app: &'static TestApp =
        Box::leak(Box::new(tokio::task::spawn_blocking(|| start(spec("edge_cache_steps", 2, None))).await.expect("join").expect("env")));
    let fx = fixture::demo(app).await;
    kept(app, 0, "/items/tags/1", Some(ADMIN_TOKEN), &[]).await;
    let hits_before = lookups(app, "edge", "hit").await;
    // Reads alternate between the edges, and each write goes through the other one.
    let compared = e2e_tests::random_steps::compare(app, 0x5EED_CAFE_F00D_0002, 2_000, &fx.reviewer, |step| step % 2, |step| (step + 1) % 2).await;
    let hits = lookups(app, "edge", "hit").await - hits_before;
    // Each edge keeps its own answers, per token: about one read in nine is a hit here.
    assert!(hits >= f64::from(compared) / 20.0, "the edges answered {hits} of {compared} reads from memory");
}

/// The environment of the attacker-side tests: one core replica, so a write's answer means
/// the only replica's listener forgot what it changed (across replicas that takes the other
/// listeners' milliseconds, as without the edge cache: docs/security.md).
fn guarded() -> &'static TestApp {
    static APP: std::sync::OnceLock<TestApp> = std::sync::OnceLock::new();
    APP.get_or_init(|| start(spec("edge_cache_guarded", 1, None)).expect("environment"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_caller_gets_another_callers_kept_answer() {
    let app = tokio::task::spawn_blocking(guarded).await.expect("join");
    let (reader, reader_id, _) = fixture::role(app, "EdgeTitleReaders", json!([{"collection": "articles", "action": "read", "fields": ["id", "title"]}])).await;
    let path = "/items/articles/3?fields=id,title,body";
    let admin = kept(app, 0, path, Some(ADMIN_TOKEN), &[]).await;
    assert!(admin.body["data"]["body"].is_string(), "{}", admin.body);
    for (who, token) in [("a role without the field", Some(reader.as_str())), ("the public", None)] {
        for _ in 0..3 {
            let r = get_at(app, 0, path, token, &[]).await;
            let fresh = get_at(app, 0, path, token, &[("cache-control", "no-store")]).await;
            assert_ne!(r.body, admin.body, "{who} got the admin's kept answer");
            assert_eq!((r.status, &r.body), (fresh.status, &fresh.body), "{who}: not their own answer");
        }
    }

    // The same token from another address: the key holds the address, so the allow-list is
    // checked again.
    exec(app, &format!("UPDATE cdapi.users SET ip_access = '{{10.20.0.0/16}}' WHERE id = '{reader_id}'")).await;
    let inside = [("x-forwarded-for", "10.20.0.7")];
    let title = "/items/articles/3?fields=id,title";
    eventually("the allow-list is applied", || async { get_at(app, 0, title, Some(&reader), &[("x-forwarded-for", "203.0.113.9")]).await.status == 401 }).await;
    let ok = kept(app, 0, title, Some(&reader), &inside).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let outside = get_at(app, 0, title, Some(&reader), &[("x-forwarded-for", "203.0.113.9")]).await;
    e2e_tests::assert_error(&outside, 401, "INVALID_IP", "the same token from outside the allow-list");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocations_and_expiry_take_effect_at_once() {
    let app = tokio::task::spawn_blocking(guarded).await.expect("join");
    let path = "/items/articles/4?fields=id,title";
    let rows = json!([{"collection": "articles", "action": "read", "fields": ["id", "title"]}]);

    // A suspended user's static token.
    let (token, user, _) = fixture::role(app, "EdgeSuspended", rows.clone()).await;
    kept(app, 0, path, Some(&token), &[]).await;
    patch_at(app, 1, &format!("/users/{user}"), json!({"status": "suspended"})).await;
    e2e_tests::assert_error(&get_at(app, 0, path, Some(&token), &[]).await, 401, "INVALID_CREDENTIALS", "a suspended user's kept answer");

    // A permission narrowed to other rows.
    let (token, _, _) = fixture::role(app, "EdgeNarrowed", rows.clone()).await;
    kept(app, 0, path, Some(&token), &[]).await;
    let id = app
        .sql("SELECT to_json(p.id)::text FROM cdapi.permissions p JOIN cdapi.policies y ON y.id = p.policy WHERE y.name = 'EdgeNarrowed' AND p.collection = 'articles'")
        .await;
    patch_at(app, 1, &format!("/permissions/{id}"), json!({"permissions": {"id": {"_gt": 4}}})).await;
    e2e_tests::assert_error(&get_at(app, 0, path, Some(&token), &[]).await, 403, "FORBIDDEN", "a row the role may no longer read");

    // An access JWT (4 s here): kept while valid, refused once expired.
    let (_, user, _) = fixture::role(app, "EdgeExpiring", rows.clone()).await;
    patch_at(app, 1, &format!("/users/{user}"), json!({"password": "edge-password-1"})).await;
    let login = post_json(app, "/auth/login", json!({"email": "edgeexpiring@example.com", "password": "edge-password-1"}), &[]).await;
    assert_eq!(login.status, 200, "{}", login.body);
    let jwt = login.body["data"]["access_token"].as_str().expect("access token").to_owned();
    let signed_in = Instant::now();
    kept(app, 0, path, Some(&jwt), &[]).await;
    tokio::time::sleep(Duration::from_secs(5).saturating_sub(signed_in.elapsed())).await;
    e2e_tests::assert_error(&get_at(app, 0, path, Some(&jwt), &[]).await, 401, "TOKEN_EXPIRED", "an expired token's kept answer");

    // A session token is never kept: a logout (no database write) ends it at once.
    let login = post_json(app, "/auth/login", json!({"email": "edgeexpiring@example.com", "password": "edge-password-1", "mode": "session"}), &[]).await;
    let session = e2e_tests::cookie_value(&login, "directus_session_token").expect("session cookie");
    for _ in 0..3 {
        assert_eq!(get_at(app, 0, path, Some(&session), &[]).await.status, 200);
    }
    let jar = format!("directus_session_token={session}");
    let out = send_at(&app.rest_urls[1], Method::POST, "/auth/logout", None, &[("cookie", &jar)], None).await;
    assert_eq!(out.status, 204, "{}", out.body);
    e2e_tests::assert_error(&get_at(app, 0, path, Some(&session), &[]).await, 401, "INVALID_CREDENTIALS", "a logged-out session");
}

/// A TCP proxy to Redis that can freeze: while frozen it passes no bytes, and closes nothing.
async fn freezable_proxy(redis: &str) -> (String, Arc<AtomicBool>) {
    let rest = redis.trim_start_matches("redis://");
    let (target, db) = rest.split_once('/').map_or((rest.to_owned(), String::new()), |(t, d)| (t.to_owned(), format!("/{d}")));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("redis://{}{db}", listener.local_addr().expect("address"));
    let frozen = Arc::new(AtomicBool::new(false));
    let flag = frozen.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(&target).await else { continue };
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            tokio::spawn(pass(cr, sw, flag.clone()));
            tokio::spawn(pass(sr, cw, flag.clone()));
        }
    });
    (url, frozen)
}

async fn pass(mut from: tokio::net::tcp::OwnedReadHalf, mut to: tokio::net::tcp::OwnedWriteHalf, frozen: Arc<AtomicBool>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let Ok(n) = from.read(&mut buf).await else { return };
        if n == 0 {
            return;
        }
        while frozen.load(Ordering::Acquire) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_while_the_edges_feed_is_frozen_waits_out_their_lease() {
    let (url, frozen) = freezable_proxy(&test_harness::redis_url()).await;
    let app: &'static TestApp =
        Box::leak(Box::new(tokio::task::spawn_blocking(move || start(spec("edge_cache_frozen", 2, Some(url)))).await.expect("join").expect("env")));
    let path = "/items/headings/3?fields=title";
    for round in 0..3 {
        kept(app, 0, path, Some(ADMIN_TOKEN), &[]).await;
        frozen.store(true, Ordering::Release);
        let began = Instant::now();
        let title = format!("while the feed is frozen {round}");
        patch_at(app, 1, "/items/headings/3", json!({"title": title})).await;
        let waited = began.elapsed();
        for edge in [0, 1] {
            let r = get_at(app, edge, path, Some(ADMIN_TOKEN), &[]).await;
            assert_eq!(r.body["data"]["title"], json!(title), "round {round}: edge {edge} answered the old state");
        }
        // The write waited out the lease (1 s): no edge acknowledged its fence.
        assert!(waited >= Duration::from_millis(900), "round {round}: the write answered after {waited:?}");
        frozen.store(false, Ordering::Release);
    }
}
