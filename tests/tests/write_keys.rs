//! Write keys (docs/security.md "Timeouts and retries"), as an internal gRPC caller uses them (the edges stamp one on every item
//! write): the same write sent twice with one key, one after the other or at once to two core
//! replicas, is applied once and both answers are the first one's. From the attacker's side: a
//! key presented by another caller, or for another RPC, answers INVALID_PAYLOAD, never the
//! recorded answer, and changes nothing; a malformed key is refused.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::{CreateItemsRequest, DeleteItemRequest, KeyList, UpdateItemsRequest, update_items_request};
use cdapi_proto::{ApiError, ErrorCode};
use e2e_tests::api::Api;
use e2e_tests::fixture::role;
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp};
use serde_json::{Value, json};
use std::sync::OnceLock;

fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec { dataset: Dataset::DemoWrites, name: Some("write_keys".into()), replicas: 2, ..Spec::default() })
            .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

async fn client(url: &str) -> ItemsServiceClient<tonic::transport::Channel> {
    ItemsServiceClient::connect(url.to_owned()).await.unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

/// `msg` as `token`'s, with write key `key`.
fn keyed<T>(msg: T, token: &str, key: &str) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.metadata_mut().insert("authorization", format!("Bearer {token}").parse().expect("token"));
    req.metadata_mut().insert("x-write-key", key.parse().expect("key"));
    req
}

fn create_tag(name: &str) -> CreateItemsRequest {
    CreateItemsRequest { collection: "tags".into(), data: json!([{"name": name}]).to_string().into_bytes().into(), query: None }
}

/// How many tags are named `name`.
async fn tags_named(app: &TestApp, name: &str) -> i64 {
    app.sql(&format!("SELECT count(*)::text FROM tags WHERE name = '{name}'")).await.as_i64().expect("a count")
}

/// A fresh key for one test (16 to 64 of A-Z a-z 0-9 - _).
fn key(test: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
    format!("{test}-{nanos}")
}

#[tokio::test]
async fn a_write_sent_twice_with_one_key_is_applied_once() {
    let app = env();
    let mut core = client(&app.core_urls[0]).await;
    let k = key("twice");
    let first = core.create_items(keyed(create_tag("keyed once"), ADMIN_TOKEN, &k)).await.expect("first").into_inner();
    let again = core.create_items(keyed(create_tag("keyed once"), ADMIN_TOKEN, &k)).await.expect("again").into_inner();
    assert_eq!(again.data, first.data, "the second attempt answers what the first committed");
    assert_eq!(tags_named(app, "keyed once").await, 1);
    // On the other replica too; and a delete sent twice deletes once and answers twice.
    let mut other = client(&app.core_urls[1]).await;
    let elsewhere = other.create_items(keyed(create_tag("keyed once"), ADMIN_TOKEN, &k)).await.expect("elsewhere").into_inner();
    assert_eq!(elsewhere.data, first.data);
    assert_eq!(tags_named(app, "keyed once").await, 1);
    let id = serde_json::from_slice::<Value>(&first.data).expect("JSON")[0]["id"].to_string();
    let d = key("delete");
    for c in [&mut core, &mut other] {
        c.delete_item(keyed(DeleteItemRequest { collection: "tags".into(), key: id.clone() }, ADMIN_TOKEN, &d)).await.expect("delete, answered twice");
    }
    assert_eq!(tags_named(app, "keyed once").await, 0);
}

#[tokio::test]
async fn one_write_sent_to_two_replicas_at_once_is_applied_once() {
    let app = env();
    let (mut a, mut b) = (client(&app.core_urls[0]).await, client(&app.core_urls[1]).await);
    for round in 0..20 {
        let (k, name) = (key(&format!("race{round}")), format!("raced {round}"));
        let (x, y) = tokio::join!(a.create_items(keyed(create_tag(&name), ADMIN_TOKEN, &k)), b.create_items(keyed(create_tag(&name), ADMIN_TOKEN, &k)));
        let (x, y) = (x.expect("replica 1").into_inner(), y.expect("replica 2").into_inner());
        assert_eq!(x.data, y.data, "round {round}: both answer the one write");
        assert_eq!(tags_named(app, &name).await, 1, "round {round}");
    }
}

/// From the attacker's side.
#[tokio::test]
async fn a_key_answers_no_one_but_its_own_caller_and_rpc() {
    let app = env();
    let grant = json!([{"collection": "tags", "action": "create", "fields": ["*"]}, {"collection": "tags", "action": "read", "fields": ["*"]}, {"collection": "tags", "action": "update", "fields": ["*"]}]);
    let (token, _, _) = role(app, "KeyThieves", grant).await;
    let mut core = client(&app.core_urls[0]).await;
    let k = key("victim");
    let victim = core.create_items(keyed(create_tag("victim tag"), ADMIN_TOKEN, &k)).await.expect("the victim write").into_inner();
    // Another caller presenting the victim's key: refused, its own write rolled back.
    let stolen = core.create_items(keyed(create_tag("thief tag"), &token, &k)).await.expect_err("another caller's key");
    let e = ApiError::from(stolen);
    assert_eq!(e.code, ErrorCode::InvalidPayload, "{e:?}");
    assert!(!e.message.contains("victim"), "nothing of the recorded answer: {}", e.message);
    assert_eq!(tags_named(app, "thief tag").await, 0, "the thief's write is rolled back");
    // The victim's key for another RPC: refused, nothing changed.
    let id = serde_json::from_slice::<Value>(&victim.data).expect("JSON")[0]["id"].to_string();
    let update = UpdateItemsRequest {
        collection: "tags".into(),
        selector: Some(update_items_request::Selector::Keys(KeyList { keys: vec![id] })),
        data: json!({"name": "renamed"}).to_string().into_bytes().into(),
        query: None,
    };
    let other_rpc = core.update_items(keyed(update, ADMIN_TOKEN, &k)).await.expect_err("the key of another RPC");
    assert_eq!(ApiError::from(other_rpc).code, ErrorCode::InvalidPayload);
    assert_eq!(tags_named(app, "victim tag").await, 1, "not renamed");
    // Malformed keys never reach the database.
    for bad in ["short", "0123456789abcdef'--", &"k".repeat(65)] {
        let e = core.create_items(keyed(create_tag("malformed"), ADMIN_TOKEN, bad)).await.expect_err(bad);
        assert_eq!(ApiError::from(e).code, ErrorCode::InvalidPayload, "{bad}");
    }
    assert_eq!(tags_named(app, "malformed").await, 0);
}

#[tokio::test]
async fn a_failed_write_leaves_its_key_free() {
    let app = env();
    let mut core = client(&app.core_urls[0]).await;
    let k = key("failed");
    let bad = CreateItemsRequest { collection: "tags".into(), data: json!([{"no_such_field": 1}]).to_string().into_bytes().into(), query: None };
    core.create_items(keyed(bad, ADMIN_TOKEN, &k)).await.expect_err("an unknown field");
    core.create_items(keyed(create_tag("after a failure"), ADMIN_TOKEN, &k)).await.expect("the key is free again");
    assert_eq!(tags_named(app, "after a failure").await, 1);
}
