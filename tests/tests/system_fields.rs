//! Custom fields on system collections (docs/data-model.md "Custom fields on system
//! collections"): an admin adds a `department` and an M2O `favorite_article` to
//! `directus_users`, as Directus's Data Model does; they are served on every path (REST,
//! GraphQL's system endpoint), carried by the schema snapshot, and dropped again. From the
//! attacker's side: the fields the migrations made cannot be changed or dropped, by anyone; a
//! custom column may not break the rows the server adds; a role reads a custom field only when
//! its grant names it (REST by id, list, filter and nested; GraphQL; gRPC); only admins change
//! anything.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::{Api, own_app};
use e2e_tests::fixture::{eventually, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, TestApp, assert_error};
use reqwest::Method;
use serde_json::{Value, json};

/// What `ItemsService.Read` of `directus_users` (`fields: id, secret_note`) answers `token`
/// over gRPC: the data, or the error, as text.
async fn grpc_users(app: &TestApp, token: &str) -> String {
    use cdapi_proto::v1::{Query, ReadRequest, items_service_client::ItemsServiceClient};
    let mut client = ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    let query = Query { fields: e2e_tests::paths(&["id", "secret_note"]), ..Default::default() };
    let mut req = tonic::Request::new(ReadRequest { collection: "directus_users".into(), key: None, query: Some(query) });
    req.metadata_mut().insert("authorization", format!("Bearer {token}").parse().expect("header"));
    match client.read(req).await {
        Ok(res) => String::from_utf8_lossy(&res.into_inner().data).into_owned(),
        Err(status) => format!("{status:?}"),
    }
}

/// The columns of `cdapi.users` named in `names`, as a sorted list.
async fn user_columns(app: &TestApp, names: &[&str]) -> Value {
    let list = names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
    app.sql(&format!(
        "SELECT coalesce(json_agg(column_name ORDER BY column_name), '[]')::text FROM information_schema.columns \
             WHERE table_schema = 'cdapi' AND table_name = 'users' AND column_name IN ({list})"
    ))
    .await
}

/// The two parts change `directus_users`' columns, so they run one after the other (a write
/// racing a column's drop is retried by its client: `SERVICE_UNAVAILABLE`, reason
/// `schema_changed`).
#[tokio::test]
async fn custom_fields_of_directus_users() {
    let app = &own_app(Dataset::DemoWrites);
    fields_added_to_directus_users_are_served_moved_and_dropped(app).await;
    the_fields_the_server_relies_on_cannot_be_changed_and_roles_read_only_their_grant(app).await;
}

async fn fields_added_to_directus_users_are_served_moved_and_dropped(app: &TestApp) {
    app.ok(Method::POST, "/fields/directus_users", json!({"field": "department", "type": "string", "meta": {"interface": "input"}})).await;
    app.ok(Method::POST, "/fields/directus_users", json!({"field": "favorite_article", "type": "integer"})).await;
    app.ok(Method::POST, "/relations", json!({"collection": "directus_users", "field": "favorite_article", "related_collection": "articles"})).await;
    let me = app.ok(Method::PATCH, "/users/me", json!({"department": "News", "favorite_article": 1})).await;
    assert_eq!(me["department"], "News", "{me}");

    // Read back over REST (with the M2O followed) and GraphQL's system endpoint.
    let r = app.get("/users/me?fields=department,favorite_article.id,favorite_article.title").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!((r.body["data"]["department"].clone(), r.body["data"]["favorite_article"]["id"].clone()), (json!("News"), json!(1)), "{}", r.body);
    let r = app.get("/users?filter[department][_eq]=News&fields=email").await;
    assert_eq!(r.body["data"].as_array().map(Vec::len), Some(1), "filter on a custom field: {}", r.body);
    eventually("GraphQL's system schema has the new field", || async {
        let r = app.graphql("/graphql/system", Some(ADMIN_TOKEN), "{ users_me { department favorite_article { title } } }", json!({})).await;
        let me = &r.body["data"]["users_me"];
        me["department"] == "News" && me["favorite_article"]["title"].is_string()
    })
    .await;
    let field = app.ok(Method::GET, "/fields/directus_users/department", json!(null)).await;
    assert_eq!((field["type"].clone(), field["meta"]["interface"].clone()), (json!("string"), json!("input")), "{field}");

    // The server still adds users naming only its own columns.
    let r = app.admin(Method::POST, "/users", json!({"email": "after-custom@example.com", "password": "a-password-1"})).await;
    assert_eq!(r.status, 200, "{}", r.body);

    // The snapshot carries the custom fields and their relation (as Directus's does), not the
    // system fields; a snapshot without them diffs as their deletion.
    let mine = [json!("department"), json!("favorite_article")];
    let snapshot = app.ok(Method::GET, "/schema/snapshot", json!(null)).await;
    let system_fields: Vec<&Value> =
        snapshot["fields"].as_array().expect("fields").iter().filter(|f| f["collection"] == "directus_users").map(|f| &f["field"]).collect();
    assert!(mine.iter().all(|f| system_fields.contains(&f)), "{system_fields:?}");
    assert!(system_fields.iter().all(|f| !["id", "email", "role", "password_hash", "status"].contains(&f.as_str().unwrap_or_default())), "{system_fields:?}");
    assert!(
        snapshot["relations"].as_array().expect("relations").iter().any(|r| r["collection"] == "directus_users" && r["field"] == "favorite_article"),
        "{}",
        snapshot["relations"]
    );
    let mut without = snapshot.clone();
    for section in ["fields", "relations"] {
        if let Some(list) = without[section].as_array_mut() {
            list.retain(|e| !(e["collection"] == "directus_users" && mine.contains(&e["field"])));
        }
    }
    let diff = app.ok(Method::POST, "/schema/diff", without.clone()).await;
    let changes = diff["diff"]["fields"].as_array().expect("field changes");
    for f in &mine {
        let change = changes.iter().find(|c| c["collection"] == "directus_users" && c["field"] == *f);
        assert_eq!(change.map(|c| c["diff"][0]["kind"].clone()), Some(json!("D")), "{f}: {diff}");
    }

    // Dropped through the API, and gone from every path.
    app.ok(Method::DELETE, "/fields/directus_users/favorite_article", json!(null)).await;
    app.ok(Method::DELETE, "/fields/directus_users/department", json!(null)).await;
    assert_eq!(user_columns(app, &["department", "favorite_article"]).await, json!([]));
    let r = app.get("/users/me?fields=department").await;
    assert!(r.body["data"].get("department").is_none(), "a dropped custom field: {}", r.body);
    let r = app.get("/users?filter[department][_eq]=News&fields=email").await;
    assert!(r.status == 400 || r.status == 403, "filtering on a dropped custom field: {} {}", r.status, r.body);
    let left = app.sql("SELECT count(*)::text FROM cdapi.custom_system_fields WHERE collection = 'directus_users'").await;
    assert_eq!(left, json!(0));
}

async fn the_fields_the_server_relies_on_cannot_be_changed_and_roles_read_only_their_grant(app: &TestApp) {
    // Refused to the admin too: the migrations' fields, hidden secrets, names the server gives
    // a meaning, a built-in alias taken over through a relation, other system collections,
    // columns the server could not fill.
    app.ok(Method::POST, "/fields/tags", json!({"field": "curator", "type": "uuid"})).await;
    let take_over = |alias: &str| json!({"collection": "tags", "field": "curator", "related_collection": "directus_users", "meta": {"one_field": alias}});
    let refused = [
        (Method::POST, "/fields/directus_users", json!({"field": "password", "type": "string"})),
        (Method::POST, "/fields/directus_users", json!({"field": "token", "type": "string"})),
        (Method::POST, "/fields/directus_roles", json!({"field": "parent", "type": "string"})),
        (Method::POST, "/relations", take_over("policies")),
        (Method::POST, "/relations", take_over("email")),
        (Method::PATCH, "/fields/directus_users/email", json!({"type": "integer"})),
        (Method::PATCH, "/fields/directus_users/status", json!({"schema": {"default_value": null}})),
        (Method::DELETE, "/fields/directus_users/role", json!(null)),
        (Method::DELETE, "/fields/directus_users/password_hash", json!(null)),
        (Method::POST, "/fields/directus_users", json!({"field": "password_hash", "type": "string"})),
        (Method::POST, "/fields/directus_users", json!({"field": "email", "type": "string"})),
        (Method::POST, "/fields/directus_users", json!({"field": "badge", "type": "string", "schema": {"is_nullable": false}})),
        (Method::POST, "/fields/directus_activity", json!({"field": "note", "type": "string"})),
        (Method::POST, "/fields/directus_permissions", json!({"field": "note", "type": "string"})),
        (Method::POST, "/relations", json!({"collection": "directus_users", "field": "role", "related_collection": "articles"})),
        (Method::DELETE, "/relations/directus_users/role", json!(null)),
    ];
    for (method, path, body) in &refused {
        let r = app.admin(method.clone(), path, body.clone()).await;
        assert_error(&r, 400, "INVALID_PAYLOAD", &format!("{method} {path} {body}"));
    }
    assert_eq!(user_columns(app, &["email", "password_hash", "role", "badge", "password", "token"]).await, json!(["email", "password_hash", "role"]));
    let r = app.get("/relations/directus_access/user").await;
    assert_eq!(r.body["data"]["meta"]["one_field"], "policies", "the built-in alias is as it was: {}", r.body);
    // A new alias of a relation into directus_users is a custom field: dropped like one.
    app.ok(Method::POST, "/relations", take_over("curated_tags")).await;
    app.ok(Method::DELETE, "/fields/directus_users/curated_tags", json!(null)).await;
    let email_type = app
        .sql("SELECT to_json(data_type)::text FROM information_schema.columns WHERE table_schema = 'cdapi' AND table_name = 'users' AND column_name = 'email'")
        .await;
    assert_ne!(email_type, json!("integer"));

    // A NOT NULL custom column needs a default, and keeps it.
    app.ok(Method::POST, "/fields/directus_users", json!({"field": "tier", "type": "string", "schema": {"is_nullable": false, "default_value": "basic"}}))
        .await;
    let r = app.admin(Method::PATCH, "/fields/directus_users/tier", json!({"schema": {"default_value": null}})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "dropping the default of a NOT NULL custom column");
    app.ok(Method::POST, "/fields/directus_users", json!({"field": "secret_note", "type": "string"})).await;

    // A role that reads users' id and email does not read another user's custom field, by any
    // path, nor changes the schema.
    let rows = json!([
        {"collection": "directus_users", "action": "read", "fields": ["id", "email"]},
        {"collection": "tags", "action": "read", "fields": ["*"]},
    ]);
    let (token, _, _) = role(app, "UserPeekers", rows).await;
    let target = app.ok(Method::POST, "/users", json!({"email": "target@example.com", "secret_note": "not for them"})).await;
    let target = target["id"].as_str().expect("user id").to_owned();
    // Related through tags.curator (an M2O into directus_users), for the nested path.
    app.ok(Method::PATCH, "/items/tags/1", json!({"curator": target})).await;
    for path in [format!("/users/{target}?fields=id,secret_note"), "/users?fields=id,secret_note&limit=-1".to_owned()] {
        let r = app.as_token(Some(&token), Method::GET, &path, None).await;
        assert!(!r.body.to_string().contains("not for them"), "{path}: {} {}", r.status, r.body);
    }
    // Filtering by it tells nothing either: no row matches, or the filter is refused.
    let r = app.as_token(Some(&token), Method::GET, "/users?fields=id&filter[secret_note][_eq]=not%20for%20them", None).await;
    assert!(r.status == 403 || r.body["data"].as_array().is_some_and(Vec::is_empty), "{} {}", r.status, r.body);
    let r = app.graphql("/graphql/system", Some(&token), "{ users { id secret_note } }", json!({})).await;
    assert!(!r.body.to_string().contains("not for them"), "{}", r.body);
    let nested = "/items/tags/1?fields=name,curator.email,curator.secret_note";
    let r = app.as_token(Some(&token), Method::GET, nested, None).await;
    assert!(!r.body.to_string().contains("not for them"), "nested: {}", r.body);
    assert!(!grpc_users(app, &token).await.contains("not for them"), "over gRPC");
    // The same two reads as the admin do see it (the paths work).
    assert_eq!(app.get(nested).await.body["data"]["curator"]["secret_note"], "not for them");
    assert!(grpc_users(app, ADMIN_TOKEN).await.contains("not for them"), "over gRPC as the admin");

    // What every user reads of their own user is the fields this API defines, all of them,
    // and none a project added (as Directus's app minimum).
    let (plain, plain_id, _) = role(app, "PlainUsers", json!([])).await;
    app.ok(Method::PATCH, &format!("/users/{plain_id}"), json!({"secret_note": "about them"})).await;
    let me = app.as_token(Some(&plain), Method::GET, "/users/me?fields=*", None).await;
    assert_eq!(me.status, 200, "{}", me.body);
    let defined = app
        .sql(
            "SELECT json_agg(column_name)::text FROM information_schema.columns WHERE table_schema = 'cdapi' AND table_name = 'users' \
         AND column_name NOT IN ('password_hash', 'token_hash', 'tfa_secret') \
         AND column_name NOT IN (SELECT field FROM cdapi.custom_system_fields WHERE collection = 'directus_users')",
        )
        .await;
    for column in defined.as_array().expect("columns") {
        let column = column.as_str().expect("name");
        assert!(me.body["data"].get(column).is_some(), "{column} of their own user: {}", me.body);
    }
    for custom in ["secret_note", "tier"] {
        assert!(me.body["data"].get(custom).is_none(), "{custom}: {}", me.body);
    }
    let r = app.as_token(Some(&plain), Method::GET, "/users/me?fields=secret_note", None).await;
    assert!(!r.body.to_string().contains("about them"), "{}", r.body);
    // `/permissions/me` lists those fields, not `*` (the app would offer the custom ones).
    let mine = app.as_token(Some(&plain), Method::GET, "/permissions/me", None).await;
    let listed = &mine.body["data"]["directus_users"]["read"]["fields"];
    let listed: Vec<&str> = listed.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    assert!(listed.contains(&"email") && listed.contains(&"id"), "{}", mine.body);
    for left_out in ["*", "secret_note", "tier"] {
        assert!(!listed.contains(&left_out), "{left_out}: {}", mine.body);
    }
    for (method, path, body) in [
        (Method::POST, "/fields/directus_users", json!({"field": "mine", "type": "string"})),
        (Method::PATCH, "/fields/directus_users/secret_note", json!({"meta": {"hidden": true}})),
        (Method::DELETE, "/fields/directus_users/secret_note", json!(null)),
    ] {
        for who in [Some(token.as_str()), None] {
            let r = app.as_token(who, method.clone(), path, Some(body.clone())).await;
            assert_error(&r, 403, "FORBIDDEN", &format!("{method} {path} as {who:?}"));
        }
    }
    assert_eq!(user_columns(app, &["mine", "secret_note", "tier"]).await, json!(["secret_note", "tier"]));
}
