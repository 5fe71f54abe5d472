//! Automatic field values (README "Automatic field values"): `date-created`, `user-created`,
//! `role-created` on creates, `date-updated`, `user-updated`, `role-updated` on updates, set by
//! the server on every write path; from the attacker's side, a value the client sends for such
//! a field (another user as `user_created`, an old `date_created`) is replaced.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::fixture::{admin, call, eventually, id_of, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, app, graphql_as, sql_json};
use reqwest::Method;
use serde_json::{Value, json};

/// Whether `at` (an ISO timestamp) is within a minute of the database's clock.
async fn recent(app: &e2e_tests::TestApp, at: &Value) -> bool {
    let Some(at) = at.as_str() else { return false };
    let sql = format!("SELECT (abs(extract(epoch FROM now() - '{at}'::timestamptz)) < 60)::text");
    sql_json(app, &sql).await == json!(true)
}

#[tokio::test]
async fn created_and_updated_fields_are_set_by_the_server_and_cannot_be_forged() {
    let app = app(Dataset::DemoWrites);
    let special = |s: &str| json!({"special": [s]});
    let r = admin(
        app,
        Method::POST,
        "/collections",
        json!({"collection": "notes32", "schema": {}, "meta": {}, "fields": [
            {"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}},
            {"field": "title", "type": "string"},
            {"field": "date_created", "type": "timestamp", "meta": special("date-created")},
            {"field": "user_created", "type": "uuid", "meta": special("user-created")},
            {"field": "role_created", "type": "uuid", "meta": special("role-created")},
            {"field": "date_updated", "type": "timestamp", "meta": special("date-updated")},
            {"field": "user_updated", "type": "uuid", "meta": special("user-updated")}
        ]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    eventually("notes32 is served", || async { admin(app, Method::GET, "/items/notes32", Value::Null).await.status == 200 }).await;
    let all = |action: &str| json!({"collection": "notes32", "action": action, "fields": ["*"]});
    let (token, user, role_id) = role(app, "NoteWriters32", json!([all("create"), all("read"), all("update")])).await;
    let admin_id = admin(app, Method::GET, "/users/me?fields=id", Value::Null).await.body["data"]["id"].clone();

    // Forged values on create are replaced.
    let forged = json!({"title": "mine", "user_created": admin_id, "date_created": "2000-01-01T00:00:00Z", "role_created": null, "user_updated": admin_id});
    let r = call(app, Some(&token), Method::POST, "/items/notes32", Some(forged)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let note = &r.body["data"];
    assert_eq!((note["user_created"].clone(), note["role_created"].clone()), (json!(user), json!(role_id)), "{note}");
    assert!(recent(app, &note["date_created"]).await, "date_created forged: {note}");
    assert_eq!((note["user_updated"].clone(), note["date_updated"].clone()), (Value::Null, Value::Null), "an update field forged on create: {note}");
    let id = id_of(note);

    // An update sets the update fields, never the create ones.
    let r = call(
        app,
        Some(&token),
        Method::PATCH,
        &format!("/items/notes32/{id}"),
        Some(json!({"title": "edited", "user_updated": admin_id, "user_created": admin_id})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let note = &r.body["data"];
    assert_eq!((note["user_updated"].clone(), note["user_created"].clone()), (json!(user), json!(user)), "{note}");
    assert!(recent(app, &note["date_updated"]).await, "{note}");

    // A batch, GraphQL, and the admin: each item its own writer.
    let r = admin(app, Method::POST, "/items/notes32", json!([{"title": "a"}, {"title": "b", "user_created": user}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    for n in r.body["data"].as_array().expect("items") {
        assert_eq!(n["user_created"], admin_id, "{n}");
    }
    let g = graphql_as(
        app,
        "/graphql",
        Some(&token),
        "mutation { create_notes32_item(data: {title: \"gql\", user_created: \"00000000-0000-4000-8000-000000000001\"}) { user_created } }",
        json!({}),
    )
    .await;
    assert_eq!(g.body["data"]["create_notes32_item"]["user_created"], json!(user), "{}", g.body);
    let g = graphql_as(
        app,
        "/graphql",
        Some(ADMIN_TOKEN),
        &format!("mutation {{ update_notes32_item(id: {id}, data: {{title: \"by admin\"}}) {{ user_updated }} }}"),
        json!({}),
    )
    .await;
    assert_eq!(g.body["data"]["update_notes32_item"]["user_updated"], admin_id, "{}", g.body);
}
