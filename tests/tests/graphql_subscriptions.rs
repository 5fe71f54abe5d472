//! GraphQL subscriptions (docs/realtime.md): `<collection>_mutated` over the `graphql-transport-ws`
//! protocol on `/graphql` (edge-rest tunnels it to edge-graphql), fed by the database's item
//! events, with two core replicas and two edge-rest processes. A real WebSocket client speaking the protocol, and the
//! graphql-ws library's client (`tests/js`). From the attacker's side: a restricted role never
//! receives an item or a field it may not read, cannot subscribe to a collection it may not
//! read, and connections that do not authenticate as configured are closed.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::role;
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, exec, repo_root};
use futures_util::{SinkExt as _, StreamExt as _};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("graphql_subscriptions".into()),
            replicas: 2,
            edges: 2,
            graphql_env: vec![("WEBSOCKETS_GRAPHQL_AUTH_TIMEOUT".into(), "1".into())],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// One replica and one edge, with WEBSOCKETS_CONN_LIMIT_PER_USER 2 at edge-graphql.
fn limited() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("graphql_subscription_limits".into()),
            graphql_env: vec![("WEBSOCKETS_CONN_LIMIT_PER_USER".into(), "2".into())],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A WebSocket to `base`'s `/graphql` offering `protocol` (none when empty).
async fn connect_to(base: &str, protocol: &str) -> Socket {
    let mut req = format!("{}/graphql", base.replacen("http://", "ws://", 1)).into_client_request().expect("request");
    if !protocol.is_empty() {
        req.headers_mut().insert("sec-websocket-protocol", protocol.parse().expect("header"));
    }
    let (ws, answer) = tokio_tungstenite::connect_async(req).await.expect("websocket handshake");
    if !protocol.is_empty() {
        assert_eq!(answer.headers().get("sec-websocket-protocol").and_then(|v| v.to_str().ok()), Some("graphql-transport-ws"));
    }
    ws
}

async fn send(ws: &mut Socket, v: Value) {
    ws.send(Message::text(v.to_string())).await.expect("send");
}

/// What comes next: a JSON message, or the close code (`Err`); `None` if nothing within `secs`.
async fn next(ws: &mut Socket, secs: u64) -> Option<Result<Value, u16>> {
    loop {
        let m = match tokio::time::timeout(Duration::from_secs(secs), ws.next()).await.ok()? {
            Some(Ok(m)) => m,
            _ => return Some(Err(0)),
        };
        match m {
            Message::Text(t) => return Some(Ok(serde_json::from_str(t.as_str()).expect("JSON"))),
            Message::Close(frame) => return Some(Err(frame.map_or(0, |f| u16::from(f.code)))),
            _ => {}
        }
    }
}

/// A connection to the first edge acknowledged for `token`.
async fn acked(app: &TestApp, token: &str) -> Socket {
    acked_at(&app.rest_url, token).await
}

/// A connection to the edge at `base` acknowledged for `token`.
async fn acked_at(base: &str, token: &str) -> Socket {
    let mut ws = connect_to(base, "graphql-transport-ws").await;
    send(&mut ws, json!({"type": "connection_init", "payload": {"access_token": token}})).await;
    assert_eq!(next(&mut ws, 10).await, Some(Ok(json!({"type": "connection_ack"}))));
    ws
}

/// The next message for operation `id`.
async fn message(ws: &mut Socket, id: &str) -> Value {
    loop {
        match next(ws, 10).await {
            Some(Ok(m)) if m["id"] == id => return m,
            Some(Ok(_)) => {}
            other => panic!("no message for {id}: {other:?}"),
        }
    }
}

/// The next event of subscription `id` whose item key is `key` (other tests write too).
async fn event_of(ws: &mut Socket, id: &str, field: &str, key: &Value) -> Value {
    loop {
        let m = message(ws, id).await;
        assert_eq!(m["type"], "next", "{m}");
        let e = &m["payload"]["data"][field];
        if e["key"] == json!(key.to_string().trim_matches('"')) {
            return e.clone();
        }
    }
}

/// Nothing for operation `id` about `key` within `ms`.
async fn nothing_about(ws: &mut Socket, id: &str, field: &str, key: &str, ms: u64) {
    let until = tokio::time::Instant::now() + Duration::from_millis(ms);
    while let Ok(Some(m)) = tokio::time::timeout_at(until, next(ws, 10)).await {
        let m = m.expect("open");
        assert!(!(m["id"] == id && m["payload"]["data"][field]["key"] == key), "unexpected: {m}");
    }
}

fn id_of(v: &Value) -> Value {
    v["data"]["id"].clone()
}

#[tokio::test]
async fn subscriptions_receive_creates_updates_and_deletes_as_directus_sends_them() {
    let app = env();
    let name = app.admin(Method::GET, "/items/authors/1?fields=name", json!(null)).await.body["data"]["name"].clone();
    // Subscribed through the second edge-rest; the writes go through the first (and either core).
    let mut ws = acked_at(&app.rest_urls[1], ADMIN_TOKEN).await;
    let query = "subscription { articles_mutated { key event data { title author { name } } } }";
    send(&mut ws, json!({"id": "all", "type": "subscribe", "payload": {"query": query}})).await;
    send(&mut ws, json!({"id": "upd", "type": "subscribe", "payload": {"query": "subscription($e: EventEnum) { articles_mutated(event: $e) { key event } }", "variables": {"e": "update"}}})).await;
    // No `init` over GraphQL (as Directus): the first message is the first write's.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let created = app.admin(Method::POST, "/items/articles", json!({"title": "Gql live", "author": 1, "status": "draft"})).await;
    let key = id_of(&created.body);
    let e = event_of(&mut ws, "all", "articles_mutated", &key).await;
    assert_eq!(e, json!({"key": key.to_string(), "event": "create", "data": {"title": "Gql live", "author": {"name": name}}}));
    // A write by plain SQL is an event too.
    exec(app, &format!("UPDATE articles SET title = 'Gql live 2' WHERE id = {key}")).await;
    // Both subscriptions hear it, in either order.
    let (mut all, mut upd) = (None, None);
    while all.is_none() || upd.is_none() {
        let m = next(&mut ws, 10).await.expect("an update event").expect("open");
        let e = m["payload"]["data"]["articles_mutated"].clone();
        if e["key"] != json!(key.to_string()) {
            continue;
        }
        match m["id"].as_str() {
            Some("all") => all = Some(e),
            Some("upd") => upd = Some(e),
            _ => {}
        }
    }
    let e = all.expect("all");
    assert_eq!((e["event"].clone(), e["data"]["title"].clone()), (json!("update"), json!("Gql live 2")));
    assert_eq!(upd, Some(json!({"key": key.to_string(), "event": "update"})), "the event argument keeps updates only");
    // The client stops one subscription: it ends, the other goes on.
    send(&mut ws, json!({"id": "upd", "type": "complete"})).await;
    assert_eq!(app.admin(Method::DELETE, &format!("/items/articles/{key}"), json!(null)).await.status, 204);
    let e = event_of(&mut ws, "all", "articles_mutated", &key).await;
    assert_eq!(e, json!({"key": key.to_string(), "event": "delete", "data": null}));
    nothing_about(&mut ws, "upd", "articles_mutated", &key.to_string(), 500).await;
    // Queries run over the socket too: one `next`, then `complete`.
    send(&mut ws, json!({"id": "q", "type": "subscribe", "payload": {"query": "{ authors(filter: {id: {_eq: 1}}) { name } }"}})).await;
    assert_eq!(message(&mut ws, "q").await["payload"], json!({"data": {"authors": [{"name": name}]}}));
    assert_eq!(message(&mut ws, "q").await, json!({"id": "q", "type": "complete"}));
    send(&mut ws, json!({"type": "ping"})).await;
    // Events of other tests' writes may still come on `all` before the answer.
    loop {
        match next(&mut ws, 5).await {
            Some(Ok(m)) if m["id"] == "all" && m["type"] == "next" => {}
            other => {
                assert_eq!(other, Some(Ok(json!({"type": "pong"}))));
                break;
            }
        }
    }
}

#[tokio::test]
async fn a_restricted_role_receives_only_what_it_may_read() {
    let app = env();
    let rules = json!([{"collection": "articles", "action": "read", "fields": ["id", "title"], "permissions": {"status": {"_eq": "published"}}}]);
    let (token, _, _) = role(app, "GqlSubscriber", rules).await;
    let mut ws = acked(app, &token).await;
    send(&mut ws, json!({"id": "s", "type": "subscribe", "payload": {"query": "subscription { articles_mutated { key event data { id title } } }"}})).await;
    // A field outside its grants, and a collection it may not read, do not validate.
    send(&mut ws, json!({"id": "body", "type": "subscribe", "payload": {"query": "subscription { articles_mutated { data { body } } }"}})).await;
    let m = message(&mut ws, "body").await;
    assert_eq!(m["type"], "error", "{m}");
    send(&mut ws, json!({"id": "tags", "type": "subscribe", "payload": {"query": "subscription { tags_mutated { key } }"}})).await;
    let m = message(&mut ws, "tags").await;
    assert_eq!(m["type"], "error", "{m}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A draft is outside its view: nothing; a published one arrives with its granted fields.
    let draft =
        id_of(&app.admin(Method::POST, "/items/articles", json!({"title": "Gql secret draft", "author": 1, "status": "draft", "body": "secret"})).await.body);
    let public =
        id_of(&app.admin(Method::POST, "/items/articles", json!({"title": "Gql public", "author": 1, "status": "published", "body": "secret"})).await.body);
    let e = event_of(&mut ws, "s", "articles_mutated", &public).await;
    assert_eq!(e, json!({"key": public.to_string(), "event": "create", "data": {"id": public.to_string(), "title": "Gql public"}}));
    // Taken out of its view: the update sends nothing.
    exec(app, &format!("UPDATE articles SET status = 'draft' WHERE id = {public}")).await;
    exec(app, &format!("UPDATE articles SET title = 'Gql secret 2' WHERE id = {draft}")).await;
    nothing_about(&mut ws, "s", "articles_mutated", &draft.to_string(), 800).await;
    nothing_about(&mut ws, "s", "articles_mutated", &public.to_string(), 200).await;
    exec(app, &format!("DELETE FROM articles WHERE id IN ({draft}, {public})")).await;
}

#[tokio::test]
async fn connections_must_authenticate_and_follow_the_protocol() {
    let app = env();
    // Handshake mode: a connection_init without a token, or with a bad one, is closed 4403.
    for payload in [json!({}), json!({"access_token": "not-a-token"})] {
        let mut ws = connect_to(&app.rest_url, "graphql-transport-ws").await;
        send(&mut ws, json!({"type": "connection_init", "payload": payload})).await;
        assert_eq!(next(&mut ws, 5).await, Some(Err(4403)), "{payload}");
    }
    // Subscribing before connection_ack: 4401; no connection_init in time (1 s here): 4408.
    let mut ws = connect_to(&app.rest_url, "graphql-transport-ws").await;
    send(&mut ws, json!({"id": "x", "type": "subscribe", "payload": {"query": "subscription { articles_mutated { key } }"}})).await;
    assert_eq!(next(&mut ws, 5).await, Some(Err(4401)));
    let mut ws = connect_to(&app.graphql_url, "graphql-transport-ws").await;
    assert_eq!(next(&mut ws, 5).await, Some(Err(4408)));
    // Without the subprotocol: 4406. A second init: 4429. Garbage: 4400. A running id again: 4409.
    let mut ws = connect_to(&app.rest_url, "").await;
    assert_eq!(next(&mut ws, 5).await, Some(Err(4406)));
    let mut ws = acked(app, ADMIN_TOKEN).await;
    send(&mut ws, json!({"type": "connection_init", "payload": {"access_token": ADMIN_TOKEN}})).await;
    assert_eq!(next(&mut ws, 5).await, Some(Err(4429)));
    let mut ws = acked(app, ADMIN_TOKEN).await;
    ws.send(Message::text("{not json")).await.expect("send");
    assert_eq!(next(&mut ws, 5).await, Some(Err(4400)));
    let mut ws = acked(app, ADMIN_TOKEN).await;
    for _ in 0..2 {
        send(&mut ws, json!({"id": "same", "type": "subscribe", "payload": {"query": "subscription { tags_mutated { key } }"}})).await;
    }
    assert_eq!(next(&mut ws, 5).await, Some(Err(4409)));
    // A token in the upgrade request is enough (the handshake is done before the socket).
    let url = format!("{}/graphql?access_token={ADMIN_TOKEN}", app.rest_url.replacen("http://", "ws://", 1));
    let mut req = url.into_client_request().expect("request");
    req.headers_mut().insert("sec-websocket-protocol", "graphql-transport-ws".parse().expect("header"));
    let mut ws = tokio_tungstenite::connect_async(req).await.expect("handshake").0;
    send(&mut ws, json!({"type": "connection_init"})).await;
    assert_eq!(next(&mut ws, 5).await, Some(Ok(json!({"type": "connection_ack"}))));
    // A bad token in the upgrade request is refused before any socket.
    let url = format!("{}/graphql?access_token=bad", app.rest_url.replacen("http://", "ws://", 1));
    let refused = tokio_tungstenite::connect_async(url).await;
    assert!(matches!(refused, Err(tokio_tungstenite::tungstenite::Error::Http(ref r)) if r.status() == 401), "{refused:?}");
}

#[tokio::test]
async fn the_graphql_ws_client_works_unchanged() {
    let app = env();
    let js = repo_root().join("tests/js");
    assert!(js.join("node_modules/graphql-ws").exists(), "run `npm ci` in tests/js (deploy/local/test does)");
    let out = std::process::Command::new("node").arg("graphql-subscriptions.mjs").arg(&app.rest_url).arg(ADMIN_TOKEN).current_dir(&js).output().expect("node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert!(report.get("error").is_none(), "{report}");
    let id = report["created_id"].clone();
    assert_eq!(report["create"], json!({"key": id.to_string(), "event": "create", "data": {"id": id.to_string(), "title": "Gql client one"}}));
    assert_eq!(report["update"], json!({"key": id.to_string(), "event": "update", "data": {"id": id.to_string(), "title": "Gql client two"}}));
    assert_eq!(report["delete"], json!({"key": id.to_string(), "event": "delete", "data": null}));
}

/// An environment whose edge-graphql pings every second (WEBSOCKETS_HEARTBEAT_PERIOD=1).
fn keepalive_env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        let graphql_env = vec![("WEBSOCKETS_HEARTBEAT_PERIOD".into(), "1".into())];
        e2e_tests::start(Spec { dataset: Dataset::Demo, name: Some("graphql_keepalive".into()), graphql_env, ..Spec::default() })
            .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

#[tokio::test]
async fn the_server_pings_and_closes_a_client_that_stopped_answering() {
    let app = tokio::task::spawn_blocking(keepalive_env).await.expect("environment");
    // Through edge-rest's tunnel: the pings are protocol messages, so they reach the client.
    let mut alive = acked(app, ADMIN_TOKEN).await;
    let mut silent = acked(app, ADMIN_TOKEN).await;
    // A client that answers each ping stays connected.
    let mut pings = 0;
    let until = tokio::time::Instant::now() + Duration::from_millis(3500);
    while let Ok(m) = tokio::time::timeout_at(until, next(&mut alive, 5)).await {
        match m {
            Some(Ok(m)) if m == json!({"type": "ping"}) => {
                pings += 1;
                send(&mut alive, json!({"type": "pong"})).await;
            }
            other => panic!("unexpected: {other:?}"),
        }
    }
    assert!(pings >= 2, "pings in 3.5 s: {pings}");
    send(&mut alive, json!({"type": "ping"})).await;
    assert_eq!(next(&mut alive, 5).await, Some(Ok(json!({"type": "pong"}))), "still served");
    // One that read nothing meanwhile (so answered nothing) was closed: 1001 after its pings.
    let mut seen = Vec::new();
    let closed = loop {
        match next(&mut silent, 5).await {
            Some(Ok(m)) => seen.push(m),
            Some(Err(code)) => break code,
            None => panic!("still open after {seen:?}"),
        }
    };
    assert_eq!(closed, 1001, "closed for not answering: {seen:?}");
    assert!(seen.iter().all(|m| m["type"] == "ping"), "{seen:?}");
}

#[tokio::test]
async fn a_subscription_operation_selects_exactly_one_root_field() {
    let app = env();
    let mut ws = acked(app, ADMIN_TOKEN).await;
    // Each root field would be a stream of its own, all counted as one operation.
    let query = "subscription { a: tags_mutated { key } b: tags_mutated { key } c: articles_mutated { key } }";
    send(&mut ws, json!({"id": "many", "type": "subscribe", "payload": {"query": query}})).await;
    let m = message(&mut ws, "many").await;
    assert_eq!(m["type"], "error", "{m}");
    assert_eq!(m["payload"][0]["message"], "Anonymous Subscription must select only one top level field.", "{m}");
    // Through a fragment too.
    let query = "subscription Both { ...F } fragment F on Subscription { tags_mutated { key } articles_mutated { key } }";
    send(&mut ws, json!({"id": "fragment", "type": "subscribe", "payload": {"query": query}})).await;
    let m = message(&mut ws, "fragment").await;
    assert_eq!(m["payload"][0]["message"], "Subscription \"Both\" must select only one top level field.", "{m}");
}

#[tokio::test]
async fn a_connection_init_takes_one_of_the_users_own_places() {
    let app = limited();
    let (token, _, _) = role(app, "PlacedSubscribers", json!([{"collection": "tags", "action": "read", "fields": ["*"]}])).await;
    // Opened without a token, then initialised with it: the user's two places (2 here).
    let _first = acked(app, &token).await;
    let _second = acked(app, &token).await;
    // A third `connection_init` as the same user is refused: closed, 1013 (try again later).
    let mut third = connect_to(&app.rest_url, "graphql-transport-ws").await;
    send(&mut third, json!({"type": "connection_init", "payload": {"access_token": token}})).await;
    assert_eq!(next(&mut third, 10).await, Some(Err(1013)));
    // Another user is served.
    let _admin = acked(app, ADMIN_TOKEN).await;
}
