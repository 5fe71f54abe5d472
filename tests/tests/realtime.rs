//! Realtime (docs/realtime.md): Directus's WebSocket protocol on `/websocket`, fed by the database's
//! item events, with two core replicas and two edge-rest processes (a write through one reaches
//! subscribers of the other).
//! A real WebSocket client (tungstenite) and the Directus SDK's `realtime()` (`tests/js`).
//! From the attacker's side: a restricted role never receives an item or a field it may not
//! read, nor events of a collection it may not read; a handshake connection that does not
//! authenticate is closed; a bad token is refused; a suspended user or a removed static token is
//! refused at once, in open subscriptions too. Budgets, in environments of their own: one
//! user cannot hold more connections (also by authenticating after the upgrade) or more
//! subscriptions than allowed, a client that does not read is closed by the bytes waiting for it,
//! a larger event than RESPONSE_MAX_BYTES comes in parts, and a subscriber whose item is too
//! large or whose events were lost is told so, while other collections lose nothing.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{app_role, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, exec, repo_root};
use futures_util::{SinkExt as _, StreamExt as _};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("realtime".into()),
            replicas: 2,
            edges: 2,
            edge_env: vec![
                ("WEBSOCKETS_REST_AUTH_TIMEOUT".into(), "1".into()),
                ("WEBSOCKETS_HEARTBEAT_PERIOD".into(), "2".into()),
                ("WEBSOCKETS_QUEUE".into(), "8".into()),
            ],
            // Short-lived JWTs, to see subscriptions end when they expire.
            auth_env: vec![("ACCESS_TOKEN_TTL".into(), "3s".into())],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// An environment with small budgets (one replica, one edge): WEBSOCKETS_CONN_LIMIT_PER_USER 2
/// (the public: per client address) and WEBSOCKETS_QUEUE_BYTES 1 MiB at the edge, and
/// REALTIME_MAX_SUBSCRIPTIONS_PER_USER 3 at the core.
fn limited() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("realtime_limits".into()),
            edge_env: vec![("WEBSOCKETS_CONN_LIMIT_PER_USER".into(), "2".into()), ("WEBSOCKETS_QUEUE_BYTES".into(), "1048576".into())],
            core_env: vec![("REALTIME_MAX_SUBSCRIPTIONS_PER_USER".into(), "3".into())],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// An environment whose core delivers little (one replica, one edge): REALTIME_BACKLOG 2,
/// REALTIME_READS_AT_ONCE 1, RESPONSE_MAX_BYTES 100,000.
fn narrow() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("realtime_backlog".into()),
            core_env: vec![
                ("REALTIME_BACKLOG".into(), "2".into()),
                ("REALTIME_READS_AT_ONCE".into(), "1".into()),
                ("RESPONSE_MAX_BYTES".into(), "100000".into()),
            ],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A connection to the first edge's `/websocket` (`query`: `?access_token=...` or empty).
async fn connect(app: &TestApp, query: &str) -> Socket {
    connect_at(&app.rest_url, query).await
}

/// A connection to `/websocket` of the edge at `base`.
async fn connect_at(base: &str, query: &str) -> Socket {
    let url = format!("{}/websocket{query}", base.replacen("http://", "ws://", 1));
    tokio_tungstenite::connect_async(url).await.expect("websocket handshake").0
}

/// The HTTP status refusing a `/websocket` upgrade (`query` as in [`connect`]); panics when
/// the upgrade is accepted.
async fn refused(app: &TestApp, query: &str) -> u16 {
    let url = format!("{}/websocket{query}", app.rest_url.replacen("http://", "ws://", 1));
    match tokio_tungstenite::connect_async(url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => res.status().as_u16(),
        Err(e) => panic!("not an HTTP refusal: {e}"),
        Ok(_) => panic!("the upgrade was accepted"),
    }
}

async fn send(ws: &mut Socket, v: Value) {
    ws.send(Message::text(v.to_string())).await.expect("send");
}

/// The next JSON message (server pings answered and skipped); `None` when the connection
/// closed or nothing came within `secs`.
async fn next(ws: &mut Socket, secs: u64) -> Option<Value> {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(secs), ws.next()).await.ok()??.ok()?;
        match m {
            Message::Text(t) => {
                let v: Value = serde_json::from_str(t.as_str()).expect("JSON");
                if v["type"] == "ping" {
                    send(ws, json!({"type": "pong"})).await;
                    continue;
                }
                return Some(v);
            }
            Message::Close(_) => return None,
            _ => {}
        }
    }
}

/// Authenticates (handshake) and asserts the answer.
async fn authed(app: &TestApp, token: &str) -> Socket {
    let mut ws = connect(app, "").await;
    send(&mut ws, json!({"type": "auth", "access_token": token})).await;
    assert_eq!(next(&mut ws, 10).await, Some(json!({"type": "auth", "status": "ok"})));
    ws
}

/// A connection authenticated with a fresh login's JWT, which expires in 3 s here
/// (ACCESS_TOKEN_TTL).
async fn authed_for_3_s(app: &TestApp) -> Socket {
    let login = e2e_tests::post_json(app, "/auth/login", json!({"email": "admin@example.com", "password": "test-password"}), &[]).await;
    let jwt = login.body["data"]["access_token"].as_str().expect("access token").to_owned();
    authed(app, &jwt).await
}

/// Whether `m` is a delete event: it carries keys only, so every subscriber of the collection
/// gets it, also for other tests' items.
fn is_delete(m: &Value) -> bool {
    m["event"] == "delete"
}

/// The next message for `uid` (deletes skipped: see [`deleted`]), or an error.
async fn event(ws: &mut Socket, uid: &str) -> Value {
    loop {
        let m = next(ws, 10).await.unwrap_or_else(|| panic!("no event for {uid}"));
        if (m["uid"] == uid && !is_delete(&m)) || m["status"] == "error" {
            return m;
        }
    }
}

/// Waits for the delete event of `uid` naming `key`.
async fn deleted(ws: &mut Socket, uid: &str, key: &str) -> Value {
    loop {
        let m = next(ws, 10).await.unwrap_or_else(|| panic!("no delete of {key} for {uid}"));
        if m["uid"] == uid && is_delete(&m) && m["data"].as_array().is_some_and(|k| k.contains(&json!(key))) {
            return m;
        }
    }
}

/// No item for `uid` within `ms` (deletes of others' items and other messages are skipped).
async fn silent(ws: &mut Socket, uid: &str, ms: u64) {
    let until = tokio::time::Instant::now() + Duration::from_millis(ms);
    while let Ok(Some(m)) = tokio::time::timeout_at(until, next(ws, 10)).await {
        assert!(m["uid"] != uid || is_delete(&m), "unexpected: {m}");
    }
}

#[tokio::test]
async fn subscribers_receive_every_write_as_directus_sends_it() {
    let app = env();
    let mut ws = authed(app, ADMIN_TOKEN).await;
    // (Other tests write articles meanwhile: this one's titles start with "Live".)
    let filter = json!({"_and": [{"status": {"_neq": "archived"}}, {"title": {"_starts_with": "Live"}}]});
    send(&mut ws, json!({"type": "subscribe", "collection": "articles", "query": {"fields": ["id", "title"], "filter": filter}, "uid": "a"})).await;
    let init = event(&mut ws, "a").await;
    assert_eq!(init, json!({"type": "subscription", "event": "init", "data": [], "uid": "a"}));

    // Through REST (either core replica), then by plain SQL: every committed write is an event.
    let r = app.admin(Method::POST, "/items/articles", json!({"title": "Live", "author": 1})).await;
    let id = r.body["data"]["id"].clone();
    assert_eq!(event(&mut ws, "a").await, json!({"type": "subscription", "event": "create", "data": [{"id": id, "title": "Live"}], "uid": "a"}));
    app.admin(Method::PATCH, &format!("/items/articles/{id}"), json!({"title": "Livelier"})).await;
    assert_eq!(event(&mut ws, "a").await, json!({"type": "subscription", "event": "update", "data": [{"id": id, "title": "Livelier"}], "uid": "a"}));
    exec(app, &format!("UPDATE articles SET title = 'Live by SQL' WHERE id = {id}")).await;
    assert_eq!(event(&mut ws, "a").await, json!({"type": "subscription", "event": "update", "data": [{"id": id, "title": "Live by SQL"}], "uid": "a"}));
    // A write the subscription's filter leaves out is not sent; a rolled-back one never happened.
    exec(app, &format!("UPDATE articles SET status = 'archived' WHERE id = {id}")).await;
    exec(app, &format!("BEGIN; UPDATE articles SET status = 'draft' WHERE id = {id}; ROLLBACK")).await;
    silent(&mut ws, "a", 600).await;
    app.admin(Method::DELETE, &format!("/items/articles/{id}"), json!(null)).await;
    assert_eq!(deleted(&mut ws, "a", &id.to_string()).await, json!({"type": "subscription", "event": "delete", "data": [id.to_string()], "uid": "a"}));

    // Only the events asked for; ping/pong; unsubscribe.
    send(&mut ws, json!({"type": "subscribe", "collection": "tags", "event": "delete", "uid": "t"})).await;
    assert_eq!(event(&mut ws, "t").await["event"], "init");
    let r = app.admin(Method::POST, "/items/tags", json!({"name": "realtime-tag"})).await;
    silent(&mut ws, "t", 600).await;
    let tag = r.body["data"]["id"].to_string();
    app.admin(Method::DELETE, &format!("/items/tags/{tag}"), json!(null)).await;
    deleted(&mut ws, "t", &tag).await;
    send(&mut ws, json!({"type": "ping", "uid": "p"})).await;
    assert_eq!(event(&mut ws, "p").await, json!({"type": "pong", "uid": "p"}));
    send(&mut ws, json!({"type": "unsubscribe", "uid": "a"})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    app.admin(Method::POST, "/items/articles", json!({"title": "Live but unheard", "author": 1})).await;
    silent(&mut ws, "a", 600).await;

    // CRUD over the socket.
    send(
        &mut ws,
        json!({"type": "items", "collection": "tags", "action": "create", "data": {"name": "socket-tag"}, "query": {"fields": ["name"]}, "uid": "c"}),
    )
    .await;
    assert_eq!(event(&mut ws, "c").await, json!({"type": "items", "data": {"name": "socket-tag"}, "uid": "c"}));
    send(
        &mut ws,
        json!({"type": "items", "collection": "tags", "action": "read", "query": {"filter": {"name": {"_eq": "socket-tag"}}, "fields": ["name"]}, "uid": "r"}),
    )
    .await;
    assert_eq!(event(&mut ws, "r").await, json!({"type": "items", "data": [{"name": "socket-tag"}], "uid": "r"}));
    send(&mut ws, json!({"type": "items", "collection": "nowhere", "action": "read", "uid": "x"})).await;
    let err = event(&mut ws, "x").await;
    assert_eq!((err["type"].clone(), err["status"].clone(), err["error"]["code"].clone()), (json!("items"), json!("error"), json!("FORBIDDEN")), "{err}");
}

#[tokio::test]
async fn a_restricted_role_receives_only_what_it_may_read() {
    let app = env();
    let (token, _, _) = role(
        app,
        "LiveReaders",
        json!([{"collection": "articles", "action": "read", "fields": ["id", "title", "status"], "permissions": {"status": {"_eq": "published"}}}]),
    )
    .await;
    let mut ws = authed(app, &token).await;
    // Everything it may see of articles, nothing of a collection it may not read.
    send(&mut ws, json!({"type": "subscribe", "collection": "articles", "query": {"fields": ["*"]}, "uid": "all"})).await;
    let init = event(&mut ws, "all").await;
    let items = init["data"].as_array().expect("init data");
    assert!(!items.is_empty() && items.iter().all(|i| i["status"] == "published" && i.get("body").is_none()), "{init}");
    send(&mut ws, json!({"type": "unsubscribe", "uid": "all"})).await;
    // (Other tests write articles meanwhile: this one's titles start with "Role".)
    send(
        &mut ws,
        json!({"type": "subscribe", "collection": "articles", "query": {"fields": ["*"], "filter": {"title": {"_starts_with": "Role"}}}, "uid": "r"}),
    )
    .await;
    assert_eq!(event(&mut ws, "r").await["data"], json!([]));
    send(&mut ws, json!({"type": "subscribe", "collection": "authors", "uid": "x"})).await;
    let refused = event(&mut ws, "x").await;
    assert_eq!((refused["type"].clone(), refused["error"]["code"].clone()), (json!("subscribe"), json!("FORBIDDEN")), "{refused}");
    send(&mut ws, json!({"type": "subscribe", "collection": "articles", "query": {"fields": ["body"]}, "uid": "f"})).await;
    assert_eq!(event(&mut ws, "f").await["error"]["code"], "FORBIDDEN", "a field it may not read");

    // A draft is never announced to it; a published item is, without the fields it may not read.
    app.admin(Method::POST, "/items/articles", json!({"title": "Role hidden draft", "body": "secret", "author": 1, "status": "draft"})).await;
    app.admin(Method::POST, "/items/authors", json!({"name": "Hidden author"})).await;
    silent(&mut ws, "r", 700).await;
    let r = app.admin(Method::POST, "/items/articles", json!({"title": "Role news", "body": "secret", "author": 1, "status": "published"})).await;
    let id = r.body["data"]["id"].clone();
    assert_eq!(
        event(&mut ws, "r").await,
        json!({"type": "subscription", "event": "create", "data": [{"id": id, "title": "Role news", "status": "published"}], "uid": "r"})
    );
    // Unpublished: the update leaves its view, so there is nothing to send of it.
    app.admin(Method::PATCH, &format!("/items/articles/{id}"), json!({"status": "draft", "title": "Role secret title"})).await;
    silent(&mut ws, "r", 700).await;

    // Its grant taken away: the next event ends the subscription with FORBIDDEN, no item sent.
    exec(app, "DELETE FROM cdapi.permissions WHERE policy IN (SELECT id FROM cdapi.policies WHERE name = 'LiveReaders')").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    app.admin(Method::POST, "/items/articles", json!({"title": "Role after revocation", "author": 1, "status": "published"})).await;
    let ended = event(&mut ws, "r").await;
    assert_eq!(
        (ended["type"].clone(), ended["status"].clone(), ended["error"]["code"].clone()),
        (json!("subscribe"), json!("error"), json!("FORBIDDEN")),
        "{ended}"
    );
    app.admin(Method::POST, "/items/articles", json!({"title": "Role after the end", "author": 1, "status": "published"})).await;
    silent(&mut ws, "r", 800).await;
}

#[tokio::test]
async fn connections_must_authenticate_as_configured() {
    let app = env();
    // Handshake mode: nothing sent within WEBSOCKETS_REST_AUTH_TIMEOUT (1 s here) → closed.
    let mut ws = connect(app, "").await;
    let m = next(&mut ws, 5).await.expect("an auth error");
    assert_eq!((m["type"].clone(), m["status"].clone(), m["error"]["code"].clone()), (json!("auth"), json!("error"), json!("AUTH_TIMEOUT")));
    assert!(next(&mut ws, 5).await.is_none(), "then closed");
    // A first message that is not `auth` → closed.
    let mut ws = connect(app, "").await;
    send(&mut ws, json!({"type": "subscribe", "collection": "articles"})).await;
    assert_eq!(next(&mut ws, 5).await.expect("an auth error")["error"]["code"], "AUTH_FAILED");
    assert!(next(&mut ws, 5).await.is_none());
    // A bad token.
    let mut ws = connect(app, "").await;
    send(&mut ws, json!({"type": "auth", "access_token": "not-a-token"})).await;
    assert_eq!(next(&mut ws, 5).await.expect("an auth error")["error"]["code"], "AUTH_FAILED");
    // The token in the handshake request: authenticated at once; a bad one is refused (401).
    let mut ws = connect(app, &format!("?access_token={ADMIN_TOKEN}")).await;
    send(&mut ws, json!({"type": "subscribe", "collection": "tags", "uid": "h"})).await;
    assert_eq!(event(&mut ws, "h").await["event"], "init");
    let url = format!("{}/websocket?access_token=nope", app.rest_url.replacen("http://", "ws://", 1));
    match tokio_tungstenite::connect_async(url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => assert_eq!(res.status().as_u16(), 401),
        other => panic!("a bad token is refused at the handshake: {:?}", other.map(|_| ())),
    }
    // Login by email and password over the socket answers a refresh token.
    let mut ws = connect(app, "").await;
    send(&mut ws, json!({"type": "auth", "email": "admin@example.com", "password": "test-password"})).await;
    let m = next(&mut ws, 10).await.expect("auth answer");
    assert!(m["status"] == "ok" && m["refresh_token"].is_string(), "{m}");
    // /server/info tells apps where and how (Directus's shape).
    let info = app.get("/server/info").await;
    assert_eq!(
        info.body["data"]["websocket"],
        json!({"rest": {"authentication": "handshake", "path": "/websocket"}, "graphql": {"authentication": "handshake", "path": "/graphql"}, "heartbeat": 2})
    );
    // The server pings every WEBSOCKETS_HEARTBEAT_PERIOD (2 s here).
    let mut ws = connect(app, &format!("?access_token={ADMIN_TOKEN}")).await;
    let ping = tokio::time::timeout(Duration::from_secs(5), ws.next()).await.expect("a ping in time").expect("open").expect("frame");
    assert_eq!(ping.to_text().ok().map(|t| serde_json::from_str::<Value>(t).ok()), Some(Some(json!({"type": "ping"}))));
}

#[tokio::test]
async fn the_directus_sdk_realtime_client_works_unchanged() {
    let app = env();
    let js = repo_root().join("tests/js");
    assert!(js.join("node_modules/ws").exists(), "run `npm ci` in tests/js (deploy/local/test does)");
    // `headings`: a collection no other test here writes to, so no other test's delete events
    // (sent to every subscriber of a collection) come between the script's events.
    let out =
        std::process::Command::new("node").arg("sdk-realtime.mjs").arg(&app.rest_url).arg(ADMIN_TOKEN).arg("headings").current_dir(&js).output().expect("node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let id = report["created_id"].clone();
    let expected = json!({
        "init": {"event": "init", "isArray": true},
        "created_id": id,
        "create": {"event": "create", "data": [{"id": id, "title": "Realtime one"}]},
        "update": {"event": "update", "data": [{"id": id, "title": "Realtime two"}]},
        "delete": {"event": "delete", "data": [id.to_string()]},
        "items": {"title": "Realtime socket", "hasUid": true},
        "socket_create": ["Realtime socket"],
        "unsubscribed": true,
    });
    // The whole report on a mismatch: what the script saw tells which message went missing.
    assert_eq!(report, expected, "the SDK script's report");
}

#[tokio::test]
async fn an_expired_token_pauses_its_subscriptions_until_it_authenticates_again() {
    let app = env();
    let mut ws = authed_for_3_s(app).await;
    send(&mut ws, json!({"type": "subscribe", "collection": "tags", "uid": "e1"})).await;
    send(&mut ws, json!({"type": "subscribe", "collection": "authors", "uid": "e2"})).await;
    assert_eq!(event(&mut ws, "e1").await["event"], "init");
    // At the token's expiry (3 s): one TOKEN_EXPIRED message, however many subscriptions end.
    let expired = loop {
        let m = next(&mut ws, 8).await.expect("the expiry message");
        if m["type"] == "auth" {
            break m;
        }
    };
    assert_eq!(expired, json!({"type": "auth", "status": "error", "error": {"code": "TOKEN_EXPIRED", "message": "Token expired."}}));
    // Paused: nothing reaches the expired token (it has WEBSOCKETS_REST_AUTH_TIMEOUT, 1 s here,
    // to authenticate again).
    let r = app.admin(Method::POST, "/items/tags", json!({"name": "after-expiry"})).await;
    assert_eq!(r.status, 200);
    let mut seen = Vec::new();
    while let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(400), next(&mut ws, 1)).await {
        seen.push(m);
    }
    assert!(seen.iter().all(|m| m["type"] != "auth" && m["type"] != "subscription"), "nothing more for the expired token: {seen:?}");
    // Authenticated again in time: the same subscriptions go on (no new `subscribe`, no second
    // `init`), as the Directus SDK expects after it re-authenticates.
    send(&mut ws, json!({"type": "auth", "access_token": ADMIN_TOKEN})).await;
    assert_eq!(next(&mut ws, 5).await, Some(json!({"type": "auth", "status": "ok"})));
    let r = app.admin(Method::POST, "/items/tags", json!({"name": "after-reauth"})).await;
    assert_eq!(r.status, 200);
    // Within 10 s overall (the server's pings would keep `next` waiting forever).
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let m = next(&mut ws, 5).await.expect("the create made after re-authenticating");
            assert!(m["event"] != "init", "no second init: {m}");
            assert!(!m.to_string().contains("after-expiry"), "nothing of the gap: {m}");
            if m["uid"] == "e1" && m["event"] == "create" && m["data"][0]["name"] == "after-reauth" {
                break;
            }
        }
    })
    .await
    .expect("the create made after re-authenticating, within 10 s");
}

/// The grant of the "less privileged" user the switching tests authenticate as: articles'
/// `id`, `title`, `status` when published; nothing of authors.
fn published_titles_only() -> Value {
    json!([{"collection": "articles", "action": "read", "fields": ["id", "title", "status"], "permissions": {"status": {"_eq": "published"}}}])
}

/// After `ws` authenticated as the role of [`published_titles_only`], with subscriptions `s`
/// (articles titled `prefix…`, all fields) and `w` (authors) opened by an admin: `w` ends with
/// FORBIDDEN, and `s` delivers a published article without its body and no draft.
/// `before`: what came before the answer to `auth` ([`auth_ok`]).
async fn delivers_only_what_the_new_user_may_read(app: &TestApp, ws: &mut Socket, prefix: &str, before: Vec<Value>) {
    tokio::time::timeout(Duration::from_secs(20), async {
        let refused = match before.into_iter().find(|m| m["uid"] == "w" && m["status"] == "error") {
            Some(m) => m,
            None => event(ws, "w").await,
        };
        assert_eq!((refused["type"].clone(), refused["error"]["code"].clone()), (json!("subscribe"), json!("FORBIDDEN")), "{refused}");
        app.admin(Method::POST, "/items/authors", json!({"name": format!("{prefix} author")})).await;
        app.admin(Method::POST, "/items/articles", json!({"title": format!("{prefix} draft"), "body": "secret", "author": 1, "status": "draft"})).await;
        let r =
            app.admin(Method::POST, "/items/articles", json!({"title": format!("{prefix} news"), "body": "secret", "author": 1, "status": "published"})).await;
        let id = r.body["data"]["id"].clone();
        loop {
            let m = next(ws, 5).await.expect("the published article's create");
            assert!(!m.to_string().contains("secret") && !m.to_string().contains("draft") && m["uid"] != "w", "outside the new user's grant: {m}");
            if m["uid"] == "s" && m["event"] == "create" {
                assert_eq!(m["data"], json!([{"id": id, "title": format!("{prefix} news"), "status": "published"}]));
                break;
            }
        }
    })
    .await
    .expect("within 20 s");
}

/// Waits for `{"type": "auth", "status": "ok"}`; the messages that came before it (subscription
/// events, and the errors of subscriptions the new user may not open again).
async fn auth_ok(ws: &mut Socket) -> Vec<Value> {
    let mut before = Vec::new();
    loop {
        let m = next(ws, 5).await.expect("the answer to auth");
        if m["type"] == "auth" {
            assert_eq!(m, json!({"type": "auth", "status": "ok"}));
            return before;
        }
        before.push(m);
    }
}

/// Subscribes `ws` (an admin's) to `s` and `w` of [`delivers_only_what_the_new_user_may_read`].
async fn subscribe_as_admin(ws: &mut Socket, prefix: &str) {
    send(ws, json!({"type": "subscribe", "collection": "articles", "query": {"fields": ["*"], "filter": {"title": {"_starts_with": prefix}}}, "uid": "s"}))
        .await;
    assert_eq!(event(ws, "s").await["event"], "init");
    send(ws, json!({"type": "subscribe", "collection": "authors", "uid": "w"})).await;
    assert_eq!(event(ws, "w").await["event"], "init");
}

/// From the attacker's side: subscriptions an admin opened, paused by the expiry of its token,
/// resume as the user who authenticates next, not as the admin.
#[tokio::test]
async fn subscriptions_resumed_by_another_user_deliver_only_what_it_may_read() {
    let app = env();
    let (token, _, _) = role(app, "ResumedReaders", published_titles_only()).await;
    let mut ws = authed_for_3_s(app).await;
    subscribe_as_admin(&mut ws, "Resumed").await;
    loop {
        let m = next(&mut ws, 8).await.expect("the expiry message");
        if m["type"] == "auth" {
            assert_eq!(m["error"]["code"], "TOKEN_EXPIRED", "{m}");
            break;
        }
    }
    send(&mut ws, json!({"type": "auth", "access_token": token})).await;
    let before = auth_ok(&mut ws).await;
    delivers_only_what_the_new_user_may_read(app, &mut ws, "Resumed", before).await;
}

/// From the attacker's side: a connection that authenticates as another user while its
/// subscriptions run (an app's next user on the same socket) gets from then on only what that
/// user may read, not the previous user's items.
#[tokio::test]
async fn a_connection_switching_user_delivers_only_what_the_new_user_may_read() {
    let app = env();
    let (token, _, _) = role(app, "SwitchedReaders", published_titles_only()).await;
    let mut ws = authed(app, ADMIN_TOKEN).await;
    subscribe_as_admin(&mut ws, "Switched").await;
    send(&mut ws, json!({"type": "auth", "access_token": token})).await;
    let before = auth_ok(&mut ws).await;
    delivers_only_what_the_new_user_may_read(app, &mut ws, "Switched", before).await;
}

#[tokio::test]
async fn an_expired_token_not_renewed_in_time_closes_the_connection() {
    let app = env();
    let mut ws = authed_for_3_s(app).await;
    send(&mut ws, json!({"type": "subscribe", "collection": "authors", "uid": "t1"})).await;
    assert_eq!(event(&mut ws, "t1").await["event"], "init");
    let mut messages = Vec::new();
    // TOKEN_EXPIRED at 3 s, then AUTH_TIMEOUT 1 s later (WEBSOCKETS_REST_AUTH_TIMEOUT) and the
    // close, within 10 s (the server's pings would keep `next` waiting forever).
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(m) = next(&mut ws, 8).await {
            messages.push(m);
        }
    })
    .await;
    assert!(closed.is_ok(), "the connection was not closed: {messages:?}");
    let auth: Vec<&Value> = messages.iter().filter(|m| m["type"] == "auth").collect();
    assert_eq!(auth.len(), 2, "{messages:?}");
    assert_eq!(auth[0]["error"]["code"], "TOKEN_EXPIRED");
    assert_eq!(auth[1]["error"]["code"], "AUTH_TIMEOUT");
}

#[tokio::test]
async fn a_client_too_slow_to_read_is_closed_without_holding_others_back() {
    let app = env();
    // Rows of about 20 KB, so each update of them is an event of about 1 MB.
    exec(app, "INSERT INTO articles (title, author, status) SELECT 'Slow ' || g, 1, 'draft' FROM generate_series(1, 50) g").await;
    let mut slow = authed(app, ADMIN_TOKEN).await;
    send(
        &mut slow,
        json!({"type": "subscribe", "collection": "articles", "query": {"fields": ["id", "body"], "filter": {"title": {"_starts_with": "Slow "}}}, "uid": "s"}),
    )
    .await;
    assert_eq!(event(&mut slow, "s").await["event"], "init");
    let mut other = authed(app, ADMIN_TOKEN).await;
    send(
        &mut other,
        json!({"type": "subscribe", "collection": "tags", "query": {"fields": ["name"], "filter": {"name": {"_starts_with": "slow-test"}}}, "uid": "o"}),
    )
    .await;
    assert_eq!(event(&mut other, "o").await["event"], "init");
    // `slow` reads nothing while 30 MB of events are written for it.
    for i in 0..30 {
        exec(app, &format!("UPDATE articles SET body = repeat('{}', 20000) WHERE title LIKE 'Slow %'", i % 10)).await;
    }
    // The other client is served meanwhile.
    app.admin(Method::POST, "/items/tags", json!({"name": "slow-test-tag"})).await;
    assert_eq!(event(&mut other, "o").await["data"], json!([{"name": "slow-test-tag"}]));
    // `slow` finds, after what was already on its way, the close for being too slow (4008).
    assert_eq!(close_code(&mut slow).await, Some(4008));
    exec(app, "DELETE FROM articles WHERE title LIKE 'Slow %'").await;
}

/// The close code `ws` finds after what was already on its way (within 30 s).
async fn close_code(ws: &mut Socket) -> Option<u16> {
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(m) = ws.next().await {
            match m {
                Ok(Message::Close(frame)) => return frame.map(|f| u16::from(f.code)),
                Ok(_) => continue,
                Err(_) => return None,
            }
        }
        None
    })
    .await
    .expect("closed in time")
}

#[tokio::test]
async fn a_client_too_slow_to_read_large_events_is_closed_by_their_bytes() {
    let app = limited();
    exec(app, "INSERT INTO articles (title, author, status) SELECT 'Bulky ' || g, 1, 'draft' FROM generate_series(1, 50) g").await;
    let (token, _, _) = role(app, "BulkyReaders", json!([{"collection": "articles", "action": "read", "fields": ["*"]}])).await;
    let mut slow = connect(app, &format!("?access_token={token}")).await;
    send(&mut slow, json!({"type": "subscribe", "collection": "articles", "query": {"fields": ["id", "body"], "filter": {"title": {"_starts_with": "Bulky "}}}, "uid": "b"}))
        .await;
    assert_eq!(event(&mut slow, "b").await["event"], "init");
    // Thirty events of about 1 MB: far fewer messages than WEBSOCKETS_QUEUE (1,024 here), far
    // more bytes than WEBSOCKETS_QUEUE_BYTES (1 MiB here).
    for i in 0..30 {
        exec(app, &format!("UPDATE articles SET body = repeat('{}', 20000) WHERE title LIKE 'Bulky %'", i % 10)).await;
    }
    assert_eq!(close_code(&mut slow).await, Some(4008));
    exec(app, "DELETE FROM articles WHERE title LIKE 'Bulky %'").await;
}

#[tokio::test]
async fn a_subscriber_on_one_edge_receives_writes_made_through_another() {
    let app = env();
    let mut ws = connect_at(&app.rest_urls[1], &format!("?access_token={ADMIN_TOKEN}")).await;
    send(
        &mut ws,
        json!({"type": "subscribe", "collection": "tags", "query": {"fields": ["name"], "filter": {"name": {"_starts_with": "edge2-"}}}, "uid": "e"}),
    )
    .await;
    assert_eq!(event(&mut ws, "e").await["event"], "init");
    let r = app.admin(Method::POST, "/items/tags", json!({"name": "edge2-tag"})).await;
    assert_eq!(r.status, 200);
    assert_eq!(event(&mut ws, "e").await, json!({"type": "subscription", "event": "create", "data": [{"name": "edge2-tag"}], "uid": "e"}));
}

#[tokio::test]
async fn authenticating_after_the_upgrade_takes_one_of_the_users_own_places() {
    let app = limited();
    let (token, _, _) = role(app, "PlacedReaders", json!([{"collection": "tags", "action": "read", "fields": ["*"]}])).await;
    // Opened without a token, then authenticated: the user's two places (2 here).
    let mut first = authed(app, &token).await;
    let _second = authed(app, &token).await;
    // A third connection authenticating as the same user is refused, and stays the public's.
    let mut third = connect(app, "").await;
    send(&mut third, json!({"type": "auth", "access_token": token})).await;
    let answer = next(&mut third, 10).await.expect("an answer");
    assert_eq!((answer["status"].as_str(), answer["error"]["code"].as_str()), (Some("error"), Some("REQUESTS_EXCEEDED")), "{answer}");
    // The public has two places per client address: `third` holds one.
    let _fourth = connect(app, "").await;
    assert_eq!(refused(app, "").await, 429, "a third public connection from one address");
    // A token on the upgrade request needs one of the user's places too.
    assert_eq!(refused(app, &format!("?access_token={token}")).await, 429);
    // A place given back is free again.
    first.close(None).await.expect("close");
    drop(first);
    let mut again = None;
    for _ in 0..50 {
        send(&mut third, json!({"type": "auth", "access_token": token})).await;
        let answer = next(&mut third, 10).await.expect("an answer");
        if answer["status"] == "ok" {
            again = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(again, Some(json!({"type": "auth", "status": "ok"})));
}

/// How many sign-ins (refresh session families) of `user` are open, as auth-service keeps
/// them in Redis (`access_token::sessions`).
async fn open_sign_ins(app: &TestApp, user: &str) -> i64 {
    let store = access_token::sessions::Redis::new(&app.redis.0, &app.redis.1).expect("redis url");
    redis::cmd("SCARD").arg(store.key("user", &format!("{user}:families"))).query_async(&mut store.conn()).await.expect("SCARD")
}

/// An `auth` by email and password refused a place (the user has all theirs) opened a session
/// nobody held the refresh token of; one by refresh token rotated the client's token away.
#[tokio::test]
async fn an_auth_refused_a_place_leaves_no_session_open_and_keeps_a_refreshed_one() {
    let app = limited();
    let user = e2e_tests::create_user(app, "placeless15@example.com", "placeless-15-password").await;
    let sign_in = json!({"type": "auth", "email": "placeless15@example.com", "password": "placeless-15-password"});
    // The sockets open as another user (not the public, whose places other tests count).
    let (lender, _, _) = role(app, "PlaceLenders15", json!([])).await;
    let mut refresh_tokens = Vec::new();
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut ws = connect(app, &format!("?access_token={lender}")).await;
        send(&mut ws, sign_in.clone()).await;
        let answer = next(&mut ws, 10).await.expect("an answer");
        assert_eq!(answer["status"], "ok", "{answer}");
        refresh_tokens.push(answer["refresh_token"].as_str().expect("refresh token").to_owned());
        held.push(ws);
    }
    assert_eq!(open_sign_ins(app, &user).await, 2);
    let mut third = connect(app, &format!("?access_token={lender}")).await;
    send(&mut third, sign_in).await;
    let answer = next(&mut third, 10).await.expect("an answer");
    assert_eq!(answer["error"]["code"], "REQUESTS_EXCEEDED", "{answer}");
    assert!(answer.get("refresh_token").is_none(), "{answer}");
    assert_eq!(open_sign_ins(app, &user).await, 2, "the refused sign-in's session was ended");

    // A refresh refused a place hands back the token its rotation issued, which refreshes
    // (the presented one stops refreshing after REFRESH_TOKEN_GRACE).
    send(&mut third, json!({"type": "auth", "refresh_token": refresh_tokens[0]})).await;
    let answer = next(&mut third, 10).await.expect("an answer");
    assert_eq!(answer["error"]["code"], "REQUESTS_EXCEEDED", "{answer}");
    let rotated = answer["refresh_token"].as_str().expect("the rotated refresh token").to_owned();
    assert_ne!(rotated, refresh_tokens[0]);
    let r = e2e_tests::post_json(app, "/auth/refresh", json!({"refresh_token": rotated, "mode": "json"}), &[]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(open_sign_ins(app, &user).await, 2);
}

/// Until `uid`'s subscription ends: its error. Panics when an item named `name` arrives first
/// (other tests' events are skipped).
async fn refused_before(ws: &mut Socket, uid: &str, name: &str) -> Value {
    loop {
        let m = event(ws, uid).await;
        if m["status"] == "error" {
            return m;
        }
        assert!(!m["data"].as_array().is_some_and(|items| items.iter().any(|i| i["name"] == name)), "delivered after the revocation: {m}");
    }
}

#[tokio::test]
async fn a_suspended_user_or_a_removed_static_token_is_refused_at_once() {
    let app = env();
    let grant = json!([{"collection": "tags", "action": "read", "fields": ["*"]}]);
    let (suspended, suspended_id, _) = role(app, "SuspendedAtOnce", grant.clone()).await;
    let (untokened, untokened_id, _) = role(app, "TokenRemovedAtOnce", grant).await;
    let mut sockets = Vec::new();
    for token in [&suspended, &untokened] {
        let mut ws = authed(app, token).await;
        send(&mut ws, json!({"type": "subscribe", "collection": "tags", "query": {"fields": ["name"]}, "uid": "r"})).await;
        assert_eq!(event(&mut ws, "r").await["event"], "init");
        // Looked up, so cached (STATIC_TOKEN_CACHE_TTL, 30 s), on both core replicas.
        for _ in 0..4 {
            assert_eq!(app.as_token(Some(token), Method::GET, "/items/tags?limit=1", None).await.status, 200);
        }
        sockets.push(ws);
    }
    app.ok(Method::PATCH, &format!("/users/{suspended_id}"), json!({"status": "suspended"})).await;
    app.ok(Method::PATCH, &format!("/users/{untokened_id}"), json!({"token": null})).await;
    let name = "written after the revocation";
    app.ok(Method::POST, "/items/tags", json!({"name": name})).await;
    for (ws, token) in sockets.iter_mut().zip([&suspended, &untokened]) {
        // The subscription's next event is its end, never the item written after the change.
        let ended = refused_before(ws, "r", name).await;
        assert_eq!(ended["error"]["code"], "INVALID_CREDENTIALS", "{ended}");
        // Refused over REST on every replica as soon as its listener saw the commit, not after
        // the cache time: four refusals in a row within five seconds.
        let mut in_a_row = 0;
        for _ in 0..50 {
            if app.as_token(Some(token), Method::GET, "/items/tags?limit=1", None).await.status == 401 {
                in_a_row += 1;
                if in_a_row == 4 {
                    break;
                }
            } else {
                in_a_row = 0;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        assert_eq!(in_a_row, 4, "still let in after the revocation");
    }
}

#[tokio::test]
async fn one_user_cannot_take_every_subscription_of_a_replica() {
    let app = limited();
    let subscribe = |uid: &str| json!({"type": "subscribe", "collection": "tags", "query": {"fields": ["name"]}, "uid": uid});
    let mut ws = connect(app, &format!("?access_token={ADMIN_TOKEN}")).await;
    for uid in ["a", "b", "c"] {
        send(&mut ws, subscribe(uid)).await;
        assert_eq!(event(&mut ws, uid).await["event"], "init");
    }
    // A fourth of the same user's, past REALTIME_MAX_SUBSCRIPTIONS_PER_USER (3 here).
    send(&mut ws, subscribe("d")).await;
    let refused = event(&mut ws, "d").await;
    assert_eq!((refused["status"].as_str(), refused["error"]["code"].as_str()), (Some("error"), Some("REQUESTS_EXCEEDED")), "{refused}");
    // Another user still subscribes on the same replica.
    let (token, _, _) = role(app, "UnlimitedByOthers", json!([{"collection": "tags", "action": "read", "fields": ["*"]}])).await;
    let mut other = connect(app, &format!("?access_token={token}")).await;
    send(&mut other, subscribe("o")).await;
    assert_eq!(event(&mut other, "o").await["event"], "init");
    // A subscription ended gives its place back.
    send(&mut ws, json!({"type": "unsubscribe", "uid": "a"})).await;
    let mut opened = false;
    for _ in 0..50 {
        send(&mut ws, subscribe("e")).await;
        let m = event(&mut ws, "e").await;
        if m["event"] == "init" {
            opened = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(opened, "the place of the ended subscription came back");
}

#[tokio::test]
async fn events_past_response_max_bytes_come_in_parts_and_an_item_past_it_is_told() {
    let app = narrow();
    let mut ws = connect(app, &format!("?access_token={ADMIN_TOKEN}")).await;
    exec(app, "INSERT INTO articles (title, author, status) SELECT 'Big ' || g, 1, 'draft' FROM generate_series(1, 10) g").await;
    send(&mut ws, json!({"type": "subscribe", "collection": "articles", "query": {"fields": ["id", "body"], "filter": {"title": {"_starts_with": "Big "}}}, "uid": "big"}))
        .await;
    let init = event(&mut ws, "big").await;
    let ids: std::collections::BTreeSet<i64> = init["data"].as_array().expect("init items").iter().filter_map(|i| i["id"].as_i64()).collect();
    assert_eq!(ids.len(), 10, "{init}");
    // One update of ten items of 20,000 bytes each: 200,000 bytes, twice RESPONSE_MAX_BYTES
    // (100,000 here). Every item arrives, in events of at most RESPONSE_MAX_BYTES each.
    exec(app, "UPDATE articles SET body = repeat('x', 20000) WHERE title LIKE 'Big %'").await;
    let (mut seen, mut events) = (std::collections::BTreeSet::new(), 0);
    while seen.len() < ids.len() {
        let m = event(&mut ws, "big").await;
        assert_eq!(m["event"], "update", "{m}");
        assert!(m["data"].to_string().len() <= 100_000, "an event past RESPONSE_MAX_BYTES");
        for item in m["data"].as_array().expect("items") {
            assert_eq!(item["body"].as_str().map(str::len), Some(20_000));
            assert!(seen.insert(item["id"].as_i64().expect("id")), "an item sent twice: {}", item["id"]);
        }
        events += 1;
    }
    assert_eq!(seen, ids);
    assert!(events >= 2, "in parts: {events}");
    // A single item past RESPONSE_MAX_BYTES cannot be sent: its subscription ends, as the same
    // read over REST is refused.
    exec(app, &format!("UPDATE articles SET body = repeat('x', 150000) WHERE id = {}", ids.first().expect("an id"))).await;
    let ended = event(&mut ws, "big").await;
    assert_eq!((ended["status"].as_str(), ended["error"]["code"].as_str()), (Some("error"), Some("INVALID_QUERY")), "{ended}");
    assert!(ended["error"]["message"].as_str().is_some_and(|m| m.contains("RESPONSE_MAX_BYTES")), "{ended}");
}

#[tokio::test]
async fn a_collection_whose_events_were_lost_is_told_and_no_other_loses_any() {
    let app = narrow();
    let mut flooded = connect(app, &format!("?access_token={ADMIN_TOKEN}")).await;
    send(&mut flooded, json!({"type": "subscribe", "collection": "comments", "query": {"fields": ["id"]}, "uid": "c"})).await;
    assert_eq!(event(&mut flooded, "c").await["event"], "init");
    let (token, _, _) = role(app, "QuietCollectionReader", json!([{"collection": "tags", "action": "read", "fields": ["*"]}])).await;
    let mut quiet = connect(app, &format!("?access_token={token}")).await;
    send(&mut quiet, json!({"type": "subscribe", "collection": "tags", "query": {"fields": ["name"]}, "uid": "t"})).await;
    assert_eq!(event(&mut quiet, "t").await["event"], "init");
    // Two hundred statements in one transaction announce two hundred writes of comments at its
    // commit, far past REALTIME_BACKLOG (2 here), then one of tags.
    exec(app, "DO $$ BEGIN FOR i IN 1..200 LOOP INSERT INTO comments (author_name, body) VALUES ('burst', 'b' || i); END LOOP; INSERT INTO tags (name) VALUES ('after the burst'); END $$").await;
    // The comments' subscriber is told that events were lost.
    let mut delivered = 0;
    let ended = loop {
        let m = event(&mut flooded, "c").await;
        if m["status"] == "error" {
            break m;
        }
        assert_eq!(m["event"], "create", "{m}");
        delivered += 1;
    };
    assert_eq!(ended["error"]["code"], "SERVICE_UNAVAILABLE", "{ended}");
    assert!(delivered < 200, "some were lost, and the subscriber knows: {delivered} delivered");
    // The tags' subscriber, on the same replica, loses nothing.
    assert_eq!(event(&mut quiet, "t").await, json!({"type": "subscription", "event": "create", "data": [{"name": "after the burst"}], "uid": "t"}));
}

#[tokio::test]
async fn a_user_receives_their_own_notifications_live_and_no_one_elses() {
    let app = env();
    let (token, me, _) = app_role(app, "NotifiedLive", json!([])).await;
    let (_, other, _) = app_role(app, "NotifiedElsewhere", json!([])).await;
    let mut ws = authed(app, &token).await;
    send(&mut ws, json!({"type": "subscribe", "collection": "directus_notifications", "query": {"fields": ["subject", "recipient"]}, "uid": "n"})).await;
    assert_eq!(event(&mut ws, "n").await["event"], "init");
    // Another user's notification first (outside this user's row rule), then one of theirs:
    // only theirs arrives.
    let r = app.admin(Method::POST, "/notifications", json!({"recipient": other, "subject": "Not yours"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::POST, "/notifications", json!({"recipient": me, "subject": "Yours"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(event(&mut ws, "n").await, json!({"type": "subscription", "event": "create", "data": [{"subject": "Yours", "recipient": me}], "uid": "n"}));
}
