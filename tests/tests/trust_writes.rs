//! Trust, round two, from the attacker's side: writes that went around the rules the single
//! write paths keep. Server-owned fields (a file's blob name, storage, size, uploader; a user's
//! last access) written by a client on any path, and user rules (password hashing and policy,
//! session ends, token hashing) skipped by batch, by-query and nested writes. Each test failed on the
//! code before its fix (docs/security.md "Server-owned fields", "Sessions").

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::role;
use e2e_tests::{ADMIN_TOKEN, Dataset, Reply, TestApp, app, assert_error, blobs, get_raw, noise, upload_file};
use reqwest::Method;
use serde_json::{Value, json};

/// Uploads `data` as `token`; returns the new file's id (the upload must succeed).
async fn upload(app: &TestApp, token: &str, name: &str, data: Vec<u8>) -> String {
    let (status, body) = upload_file(app, Some(token), &[("title", name)], name, "application/octet-stream", data).await;
    assert_eq!(status, 200, "upload {name}: {body}");
    body["data"]["id"].as_str().expect("file id").to_owned()
}

/// A file row's server-owned columns as they are stored.
async fn file_row(app: &TestApp, id: &str) -> Value {
    app.sql(&format!(
        "SELECT to_json(x)::text FROM (SELECT storage, filename_disk, filesize, uploaded_by, uploaded_on, created_on, modified_by, \
             modified_on, width, height, duration, charset FROM cdapi.files WHERE id = '{id}') x"
    ))
    .await
}

/// A user row's server-owned columns as they are stored.
async fn user_row(app: &TestApp, id: &str) -> Value {
    app.sql(&format!("SELECT to_json(x)::text FROM (SELECT last_access, created_at FROM cdapi.users WHERE id = '{id}') x")).await
}

/// How many rows of `table` `condition` matches (other tests write meanwhile: count only this
/// test's rows).
async fn count(app: &TestApp, table: &str, condition: &str) -> Value {
    app.sql(&format!("SELECT count(*)::text FROM cdapi.{table} WHERE {condition}")).await
}

/// The code of a GraphQL reply's first error (`Value::Null` when there is none).
fn gql_code(r: &Reply) -> Value {
    r.body["errors"][0]["extensions"]["code"].clone()
}

/// A direct gRPC caller (an internal service) writing `{field: value}` on the file `target`
/// as the admin: UpdateItem, UpdateItems by keys, UpdateBatch and CreateItem must each answer
/// INVALID_PAYLOAD.
async fn grpc_refuses(app: &TestApp, target: &str, field: &str, value: &Value) {
    use cdapi_proto::v1::items_service_client::ItemsServiceClient;
    use cdapi_proto::v1::{CreateItemRequest, KeyList, UpdateBatchRequest, UpdateItemRequest, UpdateItemsRequest, update_items_request};
    fn authorized<T>(body: T) -> tonic::Request<T> {
        let mut req = tonic::Request::new(body);
        req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
        req
    }
    let mut items = ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    let patch = json!({ field: value.clone() });
    let mut item = patch.clone();
    item["id"] = json!(target);
    let mut created = patch.clone();
    created["title"] = json!("forged");
    let c = "directus_files".to_owned();
    let keys = update_items_request::Selector::Keys(KeyList { keys: vec![target.to_owned()] });
    let calls = [
        (
            "UpdateItem",
            items
                .update_item(authorized(UpdateItemRequest { collection: c.clone(), key: target.to_owned(), data: patch.to_string().into(), query: None }))
                .await
                .map(|_| ()),
        ),
        (
            "UpdateItems",
            items
                .update_items(authorized(UpdateItemsRequest { collection: c.clone(), selector: Some(keys), data: patch.to_string().into(), query: None }))
                .await
                .map(|_| ()),
        ),
        (
            "UpdateBatch",
            items.update_batch(authorized(UpdateBatchRequest { collection: c.clone(), data: json!([item]).to_string().into(), query: None })).await.map(|_| ()),
        ),
        ("CreateItem", items.create_item(authorized(CreateItemRequest { collection: c, data: created.to_string().into(), query: None })).await.map(|_| ())),
    ];
    for (rpc, answer) in calls {
        let code = answer.err().map(|s| cdapi_proto::ApiError::from_status(&s).code);
        assert_eq!(code, Some(cdapi_proto::ErrorCode::InvalidPayload), "gRPC {rpc} writing {field}");
    }
}

/// Finding 5: a user who may update and delete her own files pointed her file's
/// `filename_disk` at the admin's private blob; `/assets/<her file>` then served the admin's
/// bytes, and deleting her file removed the admin's blob. Server-owned fields are not the
/// client's to write, on update as on upload.
#[tokio::test]
async fn a_user_cannot_point_her_file_at_the_admins_blob() {
    let app = app(Dataset::DemoWrites);
    let own = json!({"uploaded_by": {"_eq": "$CURRENT_USER"}});
    let (mallory, _, _) = role(
        app,
        "FileKeepers",
        json!([
            {"collection": "directus_files", "action": "create", "fields": ["*"]},
            {"collection": "directus_files", "action": "read", "permissions": own, "fields": ["*"]},
            {"collection": "directus_files", "action": "update", "permissions": own, "fields": ["*"]},
            {"collection": "directus_files", "action": "delete", "permissions": own},
        ]),
    )
    .await;
    let secret = noise(4000, 501);
    let payroll = upload(app, ADMIN_TOKEN, "payroll.bin", secret.clone()).await;
    let disk = app.sql(&format!("SELECT to_json(filename_disk)::text FROM cdapi.files WHERE id = '{payroll}'")).await;
    let disk = disk.as_str().expect("disk name").to_owned();
    let hers = noise(1000, 502);
    let mine = upload(app, &mallory, "mine.bin", hers.clone()).await;

    let attack = app.as_token(Some(&mallory), Method::PATCH, &format!("/files/{mine}"), Some(json!({"filename_disk": disk, "storage": "local"}))).await;
    let (status, _, body) = get_raw(app, &format!("/assets/{mine}"), Some(&mallory), &[]).await;
    assert_eq!(status, 200);
    assert!(body != secret, "her file serves the admin's private bytes");
    assert_eq!(body, hers, "her file serves her own bytes");
    let r = app.as_token(Some(&mallory), Method::DELETE, &format!("/files/{mine}"), None).await;
    assert_eq!(r.status, 204, "she deletes her own file: {}", r.body);
    assert!(blobs(app).contains(&disk), "the admin's blob survives her delete");
    let (status, _, body) = get_raw(app, &format!("/assets/{payroll}"), Some(ADMIN_TOKEN), &[]).await;
    assert_eq!((status, body == secret), (200, true), "the admin still downloads the file");
    assert_error(&attack, 400, "INVALID_PAYLOAD", "writing filename_disk and storage");
}

/// Values of every server-owned field of `directus_files` (valid for its type, so only the
/// server-owned rule can refuse them); `admin` is a user id.
fn file_values(admin: &str, disk: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("storage", json!("elsewhere")),
        ("filename_disk", json!(disk)),
        ("filesize", json!(1)),
        ("uploaded_by", json!(admin)),
        ("uploaded_on", json!("2020-01-01T00:00:00Z")),
        ("created_on", json!("2020-01-01T00:00:00Z")),
        ("modified_by", json!(admin)),
        ("modified_on", json!("2020-01-01T00:00:00Z")),
        ("width", json!(1)),
        ("height", json!(1)),
        ("duration", json!(1)),
        ("charset", json!("utf-16")),
    ]
}

/// Finding 5, the class: every server-owned field of files and users on every write path —
/// REST single update, batch update, update by keys, update by query, create; GraphQL update
/// of one item, of several, batch, create, and through a nested relation — is refused with
/// INVALID_PAYLOAD, for the administrator too, and nothing is written.
#[tokio::test]
async fn no_write_path_sets_a_server_owned_field() {
    let app = app(Dataset::DemoWrites);
    let me = app.as_token(Some(ADMIN_TOKEN), Method::GET, "/users/me?fields=id", None).await;
    let admin_id = me.body["data"]["id"].as_str().expect("admin id").to_owned();
    let target = upload(app, ADMIN_TOKEN, "target.bin", noise(500, 503)).await;
    let other = upload(app, ADMIN_TOKEN, "other.bin", noise(500, 504)).await;
    let other_disk = app.sql(&format!("SELECT to_json(filename_disk)::text FROM cdapi.files WHERE id = '{other}'")).await;
    let other_disk = other_disk.as_str().expect("disk").to_owned();
    let before = file_row(app, &target).await;
    let by_query = json!({"filter": {"id": {"_eq": target}}});
    for (field, value) in file_values(&admin_id, &other_disk) {
        grpc_refuses(app, &target, field, &value).await;
        let patch = json!({ field: value.clone() });
        let mut item = patch.clone();
        item["id"] = json!(target);
        let rest = [
            ("PATCH /files/:id", Method::PATCH, format!("/files/{target}"), patch.clone()),
            ("PATCH /files [batch]", Method::PATCH, "/files".to_owned(), json!([item])),
            ("PATCH /files {keys}", Method::PATCH, "/files".to_owned(), json!({"keys": [target], "data": patch})),
            ("PATCH /files {query}", Method::PATCH, "/files".to_owned(), json!({"query": by_query, "data": patch})),
            ("POST /files (JSON)", Method::POST, "/files".to_owned(), json!({"title": "forged", field: value})),
        ];
        for (path, method, url, body) in rest {
            let r = app.admin(method, &url, body).await;
            assert_error(&r, 400, "INVALID_PAYLOAD", &format!("{path} writing {field}"));
        }
        // GraphQL: an M2O takes the related item's input.
        let gql_value = if matches!(field, "uploaded_by") { json!({"id": admin_id}) } else { value.clone() };
        let d = json!({ field: gql_value });
        let mut batch_item = d.clone();
        batch_item["id"] = json!(target);
        let mut create = d.clone();
        create["title"] = json!("forged");
        let gql = [
            (
                "update_files_item",
                "mutation($d: update_directus_files_input!, $id: ID!) { update_files_item(id: $id, data: $d) { id } }",
                json!({"d": d, "id": target}),
            ),
            (
                "update_files_items",
                "mutation($d: update_directus_files_input!, $id: ID!) { update_files_items(ids: [$id], data: $d) { id } }",
                json!({"d": d, "id": target}),
            ),
            ("update_files_batch", "mutation($d: [update_directus_files_input!]) { update_files_batch(data: $d) { id } }", json!({"d": [batch_item]})),
            ("create_files_item", "mutation($d: create_directus_files_input!) { create_files_item(data: $d) { id } }", json!({"d": create})),
        ];
        for (name, query, variables) in gql {
            let r = app.graphql("/graphql/system", Some(ADMIN_TOKEN), query, variables).await;
            assert_eq!(gql_code(&r), json!("INVALID_PAYLOAD"), "GraphQL {name} writing {field}: {}", r.body);
        }
        assert_eq!(file_row(app, &target).await, before, "nothing written through {field}");
        assert_eq!(count(app, "files", "title = 'forged'").await, json!(0), "no file created with {field}");
    }

    // Through a relation: an uploader created inline (an M2O object) is still `uploaded_by`
    // written, and the whole request rolls back.
    let r = app.admin(Method::PATCH, &format!("/files/{target}"), json!({"uploaded_by": {"email": "inline@example.com"}})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a nested uploader");
    assert_eq!(count(app, "users", "email = 'inline@example.com'").await, json!(0));

    // Users: last_access (set at sign-in) and created_at.
    let user = app.admin(Method::POST, "/users", json!({"email": "owned@example.com", "password": "a-password-1"})).await;
    assert_eq!(user.status, 200, "{}", user.body);
    let user = user.body["data"]["id"].as_str().expect("user id").to_owned();
    let before = user_row(app, &user).await;
    for (field, value) in [("last_access", json!("2020-01-01T00:00:00Z")), ("created_at", json!("2020-01-01T00:00:00Z"))] {
        let patch = json!({ field: value.clone() });
        let mut item = patch.clone();
        item["id"] = json!(user);
        let rest = [
            ("PATCH /users/:id", Method::PATCH, format!("/users/{user}"), patch.clone()),
            ("PATCH /users/me", Method::PATCH, "/users/me".to_owned(), patch.clone()),
            ("PATCH /users [batch]", Method::PATCH, "/users".to_owned(), json!([item])),
            ("PATCH /users {keys}", Method::PATCH, "/users".to_owned(), json!({"keys": [user], "data": patch})),
            ("PATCH /users {query}", Method::PATCH, "/users".to_owned(), json!({"query": {"filter": {"id": {"_eq": user}}}, "data": patch})),
            ("POST /users", Method::POST, "/users".to_owned(), json!({"email": "forged@example.com", field: value})),
        ];
        for (path, method, url, body) in rest {
            let r = app.admin(method, &url, body).await;
            assert_error(&r, 400, "INVALID_PAYLOAD", &format!("{path} writing {field}"));
        }
        let d = json!({ field: value });
        let mut batch_item = d.clone();
        batch_item["id"] = json!(user);
        let mut create = d.clone();
        create["email"] = json!("forged@example.com");
        let gql = [
            (
                "update_users_item",
                "mutation($d: update_directus_users_input!, $id: ID!) { update_users_item(id: $id, data: $d) { id } }",
                json!({"d": d, "id": user}),
            ),
            ("update_users_batch", "mutation($d: [update_directus_users_input!]) { update_users_batch(data: $d) { id } }", json!({"d": [batch_item]})),
            ("create_users_item", "mutation($d: create_directus_users_input!) { create_users_item(data: $d) { id } }", json!({"d": create})),
        ];
        for (name, query, variables) in gql {
            let r = app.graphql("/graphql/system", Some(ADMIN_TOKEN), query, variables).await;
            assert_eq!(gql_code(&r), json!("INVALID_PAYLOAD"), "GraphQL {name} writing {field}: {}", r.body);
        }
        assert_eq!(user_row(app, &user).await, before, "nothing written through {field}");
        assert_eq!(count(app, "users", "email = 'forged@example.com'").await, json!(0), "no user created with {field}");
    }

    // What clients may write still is: a file's title, download name and focal point.
    let r = app.admin(Method::PATCH, &format!("/files/{target}"), json!({"title": "Renamed", "filename_download": "renamed.bin", "focal_point_x": 3})).await;
    assert_eq!(r.status, 200, "{}", r.body);
}
/// `POST /auth/login` with `email` and `password` (JSON mode).
async fn login(app: &TestApp, email: &str, password: &str) -> Reply {
    app.as_token(None, Method::POST, "/auth/login", Some(json!({"email": email, "password": password}))).await
}

/// The refresh token of a successful sign-in.
async fn refresh_token(app: &TestApp, email: &str, password: &str) -> String {
    let r = login(app, email, password).await;
    assert_eq!(r.status, 200, "sign-in of {email}: {}", r.body);
    r.body["data"]["refresh_token"].as_str().expect("refresh token").to_owned()
}

async fn refresh(app: &TestApp, token: &str) -> Reply {
    app.as_token(None, Method::POST, "/auth/refresh", Some(json!({"refresh_token": token, "mode": "json"}))).await
}

/// A new user with a password and a static token nobody has used yet; returns its id.
async fn victim(app: &TestApp, email: &str, token: &str) -> String {
    let r = app.admin(Method::POST, "/users", json!({"email": email, "password": "first-password-1", "token": token})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"]["id"].as_str().expect("user id").to_owned()
}

/// Finding 6: batch user updates (`PATCH /users` with an array, GraphQL `update_users_batch`)
/// answered 200 for password, email and token changes yet skipped the user rules: the old
/// password still signed in and the new one did not, a thief's refresh token still refreshed,
/// and a nulled static token kept working. Batches now keep every rule of a single update.
#[tokio::test]
async fn a_stolen_session_does_not_outlive_a_batch_password_or_email_change() {
    let app = app(Dataset::DemoWrites);
    // REST batch: a new password and the static token removed.
    let id = victim(app, "batch-victim@example.com", "batch-victim-token").await;
    let stolen = refresh_token(app, "batch-victim@example.com", "first-password-1").await;
    let r = app.admin(Method::PATCH, "/users", json!([{"id": id, "password": "second-password-2", "token": null}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&login(app, "batch-victim@example.com", "first-password-1").await, 401, "INVALID_CREDENTIALS", "the old password after a batch change");
    assert_eq!(login(app, "batch-victim@example.com", "second-password-2").await.status, 200, "the new password signs in");
    assert_error(&refresh(app, &stolen).await, 401, "INVALID_CREDENTIALS", "the thief's refresh token after a batch password change");
    let r = app.as_token(Some("batch-victim-token"), Method::GET, "/users/me", None).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "a static token nulled by a batch");
    // A token set by a batch is stored hashed and works.
    let r = app.admin(Method::PATCH, "/users", json!([{"id": id, "token": "batch-new-token"}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.as_token(Some("batch-new-token"), Method::GET, "/users/me", None).await.status, 200, "the token set by a batch");
    let stored = app.sql(&format!("SELECT to_json(token_hash <> 'batch-new-token')::text FROM cdapi.users WHERE id = '{id}'")).await;
    assert_eq!(stored, json!(true), "the token is stored hashed");
    // The password policy holds in a batch.
    let r = app.admin(Method::PATCH, "/users", json!([{"id": id, "password": "short"}])).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "a too short password in a batch");

    // GraphQL batch: an email change ends the sessions too.
    let id = victim(app, "gql-victim@example.com", "gql-victim-token").await;
    let stolen = refresh_token(app, "gql-victim@example.com", "first-password-1").await;
    let q = "mutation($d: [update_directus_users_input!]) { update_users_batch(data: $d) { id } }";
    let r = app
        .graphql("/graphql/system", Some(ADMIN_TOKEN), q, json!({"d": [{"id": id, "email": "gql-victim-moved@example.com", "password": "third-password-3"}]}))
        .await;
    assert!(r.body.get("errors").is_none(), "{}", r.body);
    assert_error(&refresh(app, &stolen).await, 401, "INVALID_CREDENTIALS", "the thief's refresh token after a GraphQL batch");
    assert_eq!(login(app, "gql-victim-moved@example.com", "third-password-3").await.status, 200, "the new email and password sign in");

    // By query: the same rules.
    let stolen = refresh_token(app, "gql-victim-moved@example.com", "third-password-3").await;
    let by_query = json!({"query": {"filter": {"id": {"_eq": id}}}, "data": {"password": "fourth-password-4"}});
    assert_eq!(app.admin(Method::PATCH, "/users", by_query).await.status, 200);
    assert_error(&refresh(app, &stolen).await, 401, "INVALID_CREDENTIALS", "the thief's refresh token after an update by query");
    assert_eq!(login(app, "gql-victim-moved@example.com", "fourth-password-4").await.status, 200);

    // A role that may edit users' names only cannot set a password through a batch.
    let (editor, _, _) = role(app, "BatchNameEditors", json!([{"collection": "directus_users", "action": "update", "fields": ["first_name"]}])).await;
    let r = app.as_token(Some(&editor), Method::PATCH, "/users", Some(json!([{"id": id, "first_name": "X", "password": "taken-over-5"}]))).await;
    assert_error(&r, 403, "FORBIDDEN", "a password through a name grant in a batch");
    assert_eq!(login(app, "gql-victim-moved@example.com", "fourth-password-4").await.status, 200, "the password is unchanged");
}

/// Finding 6, nested: a user written inside another item's payload (a role's `users`) skipped
/// the user rules the same way (the password dropped unstored, sessions left alive). Nested
/// users now keep every rule of a single update.
#[tokio::test]
async fn a_stolen_session_does_not_outlive_a_nested_user_change() {
    let app = app(Dataset::DemoWrites);
    let r = app.admin(Method::POST, "/roles", json!({"name": "NestedUsers"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let role_id = r.body["data"]["id"].as_str().expect("role id").to_owned();
    let id = victim(app, "nested-victim@example.com", "nested-victim-token").await;
    let r = app.admin(Method::PATCH, &format!("/users/{id}"), json!({"role": role_id})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let stolen = refresh_token(app, "nested-victim@example.com", "first-password-1").await;
    let change = json!({"users": {"update": [{"id": id, "password": "nested-password-2", "token": null}]}});
    let r = app.admin(Method::PATCH, &format!("/roles/{role_id}"), change).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_error(&login(app, "nested-victim@example.com", "first-password-1").await, 401, "INVALID_CREDENTIALS", "the old password after a nested change");
    assert_eq!(login(app, "nested-victim@example.com", "nested-password-2").await.status, 200, "the new password signs in");
    assert_error(&refresh(app, &stolen).await, 401, "INVALID_CREDENTIALS", "the thief's refresh token after a nested change");
    let r = app.as_token(Some("nested-victim-token"), Method::GET, "/users/me", None).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "a static token nulled in a nested change");
    // A user created nested in a role gets a hashed password that signs in.
    let create = json!({"users": {"create": [{"email": "nested-new@example.com", "password": "nested-password-3"}]}});
    let r = app.admin(Method::PATCH, &format!("/roles/{role_id}"), create).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(login(app, "nested-new@example.com", "nested-password-3").await.status, 200, "a nested new user signs in");
    let short = json!({"users": {"create": [{"email": "nested-short@example.com", "password": "short"}]}});
    assert_error(&app.admin(Method::PATCH, &format!("/roles/{role_id}"), short).await, 400, "FAILED_VALIDATION", "the password policy when nested");
}
