//! Automatic field values (docs/history.md "Automatic field values"): `date-created`, `user-created`,
//! `role-created` on creates, `date-updated`, `user-updated`, `role-updated` on updates, set by
//! the server on every write path; from the attacker's side, a value the client sends for such
//! a field (another user as `user_created`, an old `date_created`) is replaced.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, id_of, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, app, assert_error};
use reqwest::Method;
use serde_json::{Value, json};

/// Whether `at` (an ISO timestamp) is within a minute of the database's clock.
async fn recent(app: &e2e_tests::TestApp, at: &Value) -> bool {
    let Some(at) = at.as_str() else { return false };
    let sql = format!("SELECT (abs(extract(epoch FROM now() - '{at}'::timestamptz)) < 60)::text");
    app.sql(&sql).await == json!(true)
}

/// Creates `collection` with an auto-increment `id` and these fields, each `(name, type,
/// special)`, and waits until it is served.
async fn collection(app: &e2e_tests::TestApp, collection: &str, fields: &[(&str, &str, Option<&str>)]) {
    let mut list = vec![json!({"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}})];
    for (name, kind, special) in fields {
        let meta = special.map_or(Value::Null, |s| json!({"special": [s]}));
        list.push(json!({"field": name, "type": kind, "meta": meta}));
    }
    let r = app.admin(Method::POST, "/collections", json!({"collection": collection, "schema": {}, "meta": {}, "fields": list})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let path = format!("/items/{collection}");
    eventually(&format!("{collection} is served"), || async { app.admin(Method::GET, &path, Value::Null).await.status == 200 }).await;
}

#[tokio::test]
async fn created_and_updated_fields_are_set_by_the_server_and_cannot_be_forged() {
    let app = app(Dataset::DemoWrites);
    let fields = [
        ("title", "string", None),
        ("date_created", "timestamp", Some("date-created")),
        ("user_created", "uuid", Some("user-created")),
        ("role_created", "uuid", Some("role-created")),
        ("date_updated", "timestamp", Some("date-updated")),
        ("user_updated", "uuid", Some("user-updated")),
    ];
    collection(app, "notes32", &fields).await;
    let all = |action: &str| json!({"collection": "notes32", "action": action, "fields": ["*"]});
    let (token, user, role_id) = role(app, "NoteWriters32", json!([all("create"), all("read"), all("update")])).await;
    let admin_id = app.admin(Method::GET, "/users/me?fields=id", Value::Null).await.body["data"]["id"].clone();

    // Forged values on create are replaced.
    let forged = json!({"title": "mine", "user_created": admin_id, "date_created": "2000-01-01T00:00:00Z", "role_created": null, "user_updated": admin_id});
    let r = app.as_token(Some(&token), Method::POST, "/items/notes32", Some(forged)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let note = &r.body["data"];
    assert_eq!((note["user_created"].clone(), note["role_created"].clone()), (json!(user), json!(role_id)), "{note}");
    assert!(recent(app, &note["date_created"]).await, "date_created forged: {note}");
    assert_eq!((note["user_updated"].clone(), note["date_updated"].clone()), (Value::Null, Value::Null), "an update field forged on create: {note}");
    let id = id_of(note);

    // An update sets the update fields, never the create ones.
    let r = app
        .as_token(
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
    let r = app.admin(Method::POST, "/items/notes32", json!([{"title": "a"}, {"title": "b", "user_created": user}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    for n in r.body["data"].as_array().expect("items") {
        assert_eq!(n["user_created"], admin_id, "{n}");
    }
    let g = app
        .graphql(
            "/graphql",
            Some(&token),
            "mutation { create_notes32_item(data: {title: \"gql\", user_created: \"00000000-0000-4000-8000-000000000001\"}) { user_created } }",
            json!({}),
        )
        .await;
    assert_eq!(g.body["data"]["create_notes32_item"]["user_created"], json!(user), "{}", g.body);
    let g = app
        .graphql(
            "/graphql",
            Some(ADMIN_TOKEN),
            &format!("mutation {{ update_notes32_item(id: {id}, data: {{title: \"by admin\"}}) {{ user_updated }} }}"),
            json!({}),
        )
        .await;
    assert_eq!(g.body["data"]["update_notes32_item"]["user_updated"], admin_id, "{}", g.body);
}

/// An update that changes only an item's to-many list still sets its update fields, as
/// Directus writes the item for them whatever else the update holds.
#[tokio::test]
async fn a_list_change_alone_sets_the_update_fields() {
    let app = app(Dataset::DemoWrites);
    collection(
        app,
        "shelves32",
        &[("title", "string", None), ("date_updated", "timestamp", Some("date-updated")), ("user_updated", "uuid", Some("user-updated"))],
    )
    .await;
    collection(app, "books32", &[("title", "string", None), ("shelf", "integer", None)]).await;
    let relation = json!({"collection": "books32", "field": "shelf", "related_collection": "shelves32", "meta": {"one_field": "books"}});
    assert_eq!(app.admin(Method::POST, "/relations", relation).await.status, 200);
    eventually("the books alias", || async { app.admin(Method::GET, "/items/shelves32?fields=books", Value::Null).await.status == 200 }).await;
    let all = |collection: &str, action: &str| json!({"collection": collection, "action": action, "fields": ["*"]});
    let rows = json!([all("shelves32", "read"), all("shelves32", "update"), all("books32", "read"), all("books32", "create"), all("books32", "update")]);
    let (token, user, _) = role(app, "Shelvers32", rows).await;
    let r = app.admin(Method::POST, "/items/shelves32", json!({"title": "Top"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let shelf = id_of(&r.body["data"]);
    assert_eq!(r.body["data"]["date_updated"], Value::Null);
    let path = format!("/items/shelves32/{shelf}?fields=date_updated,user_updated,books.title");
    let r = app.as_token(Some(&token), Method::PATCH, &path, Some(json!({"books": [{"title": "First"}]}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let item = &r.body["data"];
    assert_eq!((item["user_updated"].clone(), item["books"].clone()), (json!(user), json!([{"title": "First"}])), "{item}");
    assert!(recent(app, &item["date_updated"]).await, "{item}");
}

/// `uuid`, `cast-csv`, `cast-json`, `cast-boolean` and `conceal` (Directus's read and write
/// shapes); from the attacker's side, a concealed value never comes back: not read, not
/// filtered or searched for, not in a revision.
#[tokio::test]
async fn specials_shape_values_and_concealed_ones_never_come_back() {
    let app = app(Dataset::DemoWrites);
    let fields = [
        ("code", "uuid", Some("uuid")),
        ("flags", "text", Some("cast-csv")),
        ("settings", "text", Some("cast-json")),
        ("active", "integer", Some("cast-boolean")),
        ("secret", "string", Some("conceal")),
    ];
    collection(app, "shapes32", &fields).await;
    let all = |action: &str| json!({"collection": "shapes32", "action": action, "fields": ["*"]});
    let (token, _, _) = role(app, "Shapers32", json!([all("create"), all("read"), all("update")])).await;
    let body = json!({"flags": ["a", "b"], "settings": {"x": 1}, "active": 1, "secret": "s3cr3t-value"});
    let r = app.as_token(Some(&token), Method::POST, "/items/shapes32", Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let item = r.body["data"].clone();
    let id = id_of(&item);
    let code = item["code"].as_str().expect("a generated uuid").to_owned();
    assert!(code.len() == 36 && &code[14..15] == "4", "{item}");
    assert_eq!(item["flags"], json!(["a", "b"]));
    assert_eq!(item["settings"], json!({"x": 1}));
    assert_eq!(item["active"], json!(true));
    assert_eq!(item["secret"], "**********");
    let stored = app.sql(&format!("SELECT row_to_json(s)::text FROM shapes32 s WHERE id = {id}")).await;
    assert_eq!((stored["flags"].clone(), stored["settings"].clone(), stored["secret"].clone()), (json!("a,b"), json!("{\"x\":1}"), json!("s3cr3t-value")));
    // A given uuid is kept; empty and odd values read as Directus reads them.
    let given = "0b0e5c4e-8f1a-4b8e-9a55-3f2d1c0b9a87";
    let r = app.as_token(Some(&token), Method::POST, "/items/shapes32", Some(json!({"code": given, "flags": "", "active": 0}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let second = &r.body["data"];
    assert_eq!(
        (second["code"].clone(), second["flags"].clone(), second["active"].clone(), second["secret"].clone()),
        (json!(given), json!([]), json!(false), Value::Null)
    );
    let r = app.admin(Method::PATCH, &format!("/items/shapes32/{}", id_of(second)), json!({"settings": "not json", "active": 7})).await;
    assert_eq!((r.body["data"]["settings"].clone(), r.body["data"]["active"].clone()), (json!("not json"), json!(7)), "{}", r.body);
    // The concealed value: not by filter, not by search, not through a revision or GraphQL.
    for path in [
        "/items/shapes32?filter[secret][_eq]=s3cr3t-value",
        "/items/shapes32?filter[secret][_gt]=s",
        "/items/shapes32?sort=secret",
        "/items/shapes32?groupBy=secret&aggregate[count]=*",
        "/items/shapes32?aggregate[max]=secret",
    ] {
        let r = app.as_token(Some(&token), Method::GET, path, None).await;
        assert_error(&r, 400, "INVALID_QUERY", path);
    }
    let r = app.as_token(Some(&token), Method::GET, "/items/shapes32?aggregate[count]=secret", None).await;
    assert_eq!(r.body["data"][0]["count"]["secret"], "1", "counting is allowed: {}", r.body);
    let r = app.as_token(Some(&token), Method::GET, "/items/shapes32?filter[secret][_nnull]=true&fields=id", None).await;
    assert_eq!(r.body["data"].as_array().map(Vec::len), Some(1), "{}", r.body);
    let r = app.as_token(Some(&token), Method::GET, "/items/shapes32?search=s3cr3t", None).await;
    assert_eq!(r.body["data"], json!([]), "search found a concealed value: {}", r.body);
    let r = app.admin(Method::GET, &format!("/revisions?filter[collection][_eq]=shapes32&filter[item][_eq]={id}&fields=data,delta"), Value::Null).await;
    assert!(r.body["data"].as_array().is_some_and(|a| !a.is_empty()), "{}", r.body);
    assert!(!r.body.to_string().contains("s3cr3t"), "a revision holds the concealed value: {}", r.body);
    let g = app.graphql("/graphql", Some(ADMIN_TOKEN), &format!("{{ shapes32_by_id(id: {id}) {{ secret flags settings active }} }}"), json!({})).await;
    assert!(!g.body.to_string().contains("s3cr3t"), "{}", g.body);
    assert_eq!(g.body["data"]["shapes32_by_id"]["secret"], "**********", "{}", g.body);
}
