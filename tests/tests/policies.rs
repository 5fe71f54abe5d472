//! The Directus 11 access model (docs/permissions.md): permissions belong to policies; policies reach a
//! user through their role, the roles above it and their own access rows; admin access, app
//! access and IP allow-lists are the policies'. `GET /permissions/me` and
//! `GET /policies/me/globals` say what the caller has. From the attacker's side: a role that may
//! edit its own user, role, policies or access rows still cannot give itself a policy, a parent
//! role or admin access.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::CreateItemRequest;
use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use e2e_tests::api::Api;
use e2e_tests::fixture::{PUBLIC_POLICY, eventually, role, role_with_policy};
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, assert_error, repo_root, send};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// The demo schema; the edge trusts 127.0.0.1 as a proxy, so tests can say where a request
/// comes from with `X-Forwarded-For`.
fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("policies".into()),
            edge_env: vec![("IP_TRUSTED_PROXIES".into(), "127.0.0.1".into())],
            ..Spec::default()
        })
        .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

async fn ok(app: &TestApp, method: Method, path: &str, body: Value) -> Value {
    let r = app.admin(method.clone(), path, body.clone()).await;
    assert_eq!(r.status, 200, "{method} {path} {body}: {}", r.body);
    r.body["data"].clone()
}

fn id(v: &Value) -> String {
    v["id"].as_str().map(str::to_owned).unwrap_or_else(|| panic!("no id in {v}"))
}

/// The policy of the fixture role `role_id` (one per role).
async fn policy_of(app: &TestApp, role_id: &str) -> String {
    let v = app.sql(&format!("SELECT to_json(policy::text)::text FROM cdapi.access WHERE role = '{role_id}'")).await;
    v.as_str().map(str::to_owned).unwrap_or_else(|| panic!("no policy for role {role_id}"))
}

async fn admin_policy(app: &TestApp) -> String {
    let v = app
        .sql(
            "SELECT to_json(p.id::text)::text FROM cdapi.policies p JOIN cdapi.access a ON a.policy = p.id \
         JOIN cdapi.roles r ON r.id = a.role WHERE r.name = 'Administrator' AND p.admin_access",
        )
        .await;
    v.as_str().map(str::to_owned).expect("the Administrator role's policy")
}

async fn status(app: &TestApp, token: &str, path: &str) -> u16 {
    app.as_token(Some(token), Method::GET, path, None).await.status
}

/// The SDK's flow (createPolicy, a role holding it, a user in the role): the user reads exactly
/// what the policy's rows allow; the summaries say so; deleting the policy takes it away.
#[tokio::test]
async fn a_policy_governs_the_users_of_its_role() {
    let app = env();
    let policy = ok(
        app,
        Method::POST,
        "/policies",
        json!({"name": "Readers", "icon": "menu_book", "admin_access": false, "app_access": true,
               "permissions": [{"collection": "articles", "action": "read", "permissions": {"status": {"_eq": "published"}}, "fields": ["id", "title", "status"]}]}),
    )
    .await;
    let policy_id = id(&policy);
    assert_eq!((policy["name"].clone(), policy["icon"].clone(), policy["app_access"].clone()), (json!("Readers"), json!("menu_book"), json!(true)));
    let rows = ok(app, Method::GET, &format!("/policies/{policy_id}?fields=permissions.collection,permissions.action,permissions.fields"), json!(null)).await;
    assert_eq!(rows["permissions"], json!([{"collection": "articles", "action": "read", "fields": ["id", "title", "status"]}]));
    let role_id = id(&ok(app, Method::POST, "/roles", json!({"name": "Readers", "policies": [{"policy": policy_id}]})).await);
    ok(app, Method::POST, "/users", json!({"email": "policy-reader@example.com", "password": "a-password-1", "role": role_id, "token": "policy-reader-token"}))
        .await;
    let token = "policy-reader-token";
    eventually("the policy reaches the core", || async { status(app, token, "/items/articles?limit=1").await == 200 }).await;

    let r = app.as_token(Some(token), Method::GET, "/items/articles?fields=status&limit=-1", None).await;
    let published = app.sql("SELECT count(*)::text FROM articles WHERE status = 'published'").await;
    assert_eq!(json!(r.body["data"].as_array().map(Vec::len).unwrap_or(0)), published);
    assert!(r.body["data"].as_array().is_some_and(|a| a.iter().all(|i| i["status"] == "published")), "{}", r.body);
    assert_error(&app.as_token(Some(token), Method::GET, "/items/articles?fields=body", None).await, 403, "FORBIDDEN", "a field outside the policy");
    assert_error(&app.as_token(Some(token), Method::GET, "/items/authors", None).await, 403, "FORBIDDEN", "a collection outside the policy");
    let role = ok(app, Method::GET, &format!("/roles/{role_id}?fields=name,policies.policy.name"), json!(null)).await;
    assert_eq!(role, json!({"name": "Readers", "policies": [{"policy": {"name": "Readers"}}]}));

    // What the caller has, as the Directus app asks it.
    let me = app.as_token(Some(token), Method::GET, "/permissions/me", None).await;
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.body["data"]["articles"]["read"], json!({"access": "partial", "fields": ["id", "status", "title"]}));
    assert_eq!(me.body["data"]["articles"]["create"], json!({"access": "none"}));
    assert_eq!(me.body["data"]["articles"]["share"], json!({"access": "none"}));
    assert!(me.body["data"].get("authors").is_none(), "{}", me.body);
    let g = app.as_token(Some(token), Method::GET, "/policies/me/globals", None).await;
    assert_eq!(g.body, json!({"data": {"app_access": true, "admin_access": false, "enforce_tfa": false}}));
    // The user reads their own policies and no other.
    let mine = app.as_token(Some(token), Method::GET, "/policies?fields=name", None).await;
    assert_eq!(mine.body["data"], json!([{"name": "Readers"}]), "{}", mine.body);
    let admin_me = ok(app, Method::GET, "/permissions/me", json!(null)).await;
    assert_eq!(admin_me["articles"]["delete"], json!({"access": "full", "fields": ["*"]}));
    assert_eq!(ok(app, Method::GET, "/policies/me/globals", json!(null)).await["admin_access"], json!(true));
    let public = app.as_token(None, Method::GET, "/policies/me/globals", None).await;
    assert_eq!(public.body, json!({"data": {"app_access": false}}), "as Directus answers the public");

    // Deleting the policy deletes its rows and its place in the role: the access is gone.
    let r = app.admin(Method::DELETE, &format!("/policies/{policy_id}"), json!(null)).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(app.sql(&format!("SELECT count(*)::text FROM cdapi.access WHERE policy = '{policy_id}'")).await, json!(0));
    eventually("the deleted policy stops applying", || async { status(app, token, "/items/articles?limit=1").await == 403 }).await;
}

/// A role gets the policies of the roles above it; a user also gets the policies attached to
/// them alone; the rows add up. A role cannot sit below itself.
#[tokio::test]
async fn nested_roles_and_user_policies_add_up() {
    let app = env();
    let (parent, parent_policy) = role_with_policy(app, "Parent").await;
    ok(app, Method::POST, "/permissions", json!({"policy": parent_policy, "collection": "authors", "action": "read", "fields": ["id", "name"]})).await;
    let child = id(&ok(app, Method::POST, "/roles", json!({"name": "Child", "parent": parent})).await);
    let extra =
        id(&ok(app, Method::POST, "/policies", json!({"name": "Extra", "permissions": [{"collection": "articles", "action": "read", "fields": ["id"]}]}))
            .await);
    let user =
        id(&ok(app, Method::POST, "/users", json!({"email": "child@example.com", "password": "a-password-1", "role": child, "token": "child-token"})).await);
    ok(app, Method::POST, "/users", json!({"email": "sibling@example.com", "password": "a-password-1", "role": child, "token": "sibling-token"})).await;
    eventually("the parent's policy reaches the child's users", || async { status(app, "child-token", "/items/authors?limit=1").await == 200 }).await;
    assert_eq!(status(app, "child-token", "/items/articles?limit=1").await, 403);

    // A policy of the user's own (Directus's `policies` on users).
    ok(app, Method::PATCH, &format!("/users/{user}"), json!({"policies": [{"policy": extra}]})).await;
    eventually("the user's own policy applies", || async { status(app, "child-token", "/items/articles?limit=1").await == 200 }).await;
    assert_eq!(status(app, "sibling-token", "/items/articles?limit=1").await, 403, "only that user has it");
    assert_eq!(status(app, "sibling-token", "/items/authors?limit=1").await, 200);
    // `$CURRENT_ROLES` holds the role and those above it: a rule on it reaches users of both.
    ok(app, Method::POST, "/users", json!({"email": "parent@example.com", "password": "a-password-1", "role": parent})).await;
    ok(
        app,
        Method::POST,
        "/permissions",
        json!({"policy": parent_policy, "collection": "directus_users", "action": "read",
        "permissions": {"role": {"_in": "$CURRENT_ROLES"}}, "fields": ["email"]}),
    )
    .await;
    let emails = || async {
        let r = app.as_token(Some("child-token"), Method::GET, "/users?fields=email&sort=email", None).await;
        r.body["data"].clone()
    };
    let expected = json!([{"email": "child@example.com"}, {"email": "parent@example.com"}, {"email": "sibling@example.com"}]);
    eventually("the rule on $CURRENT_ROLES applies", || async { emails().await == expected }).await;

    // A cycle is refused and changes nothing.
    let r = app.admin(Method::PATCH, &format!("/roles/{parent}"), json!({"parent": child})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "a role below its own child");
    assert_eq!(app.sql(&format!("SELECT to_json(parent IS NULL)::text FROM cdapi.roles WHERE id = '{parent}'")).await, json!(true));
    let r = app.admin(Method::PATCH, &format!("/roles/{child}"), json!({"parent": child})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "a role its own parent");
}

/// Admin access is a policy's: granted, the user is admin at once on every path; revoked, they
/// are not.
#[tokio::test]
async fn admin_access_comes_and_goes_with_a_policy() {
    let app = env();
    let (token, _, role_id) = role(app, "Operators", json!([{"collection": "articles", "action": "read", "fields": ["id"]}])).await;
    let policy = policy_of(app, &role_id).await;
    assert_error(&app.as_token(Some(&token), Method::GET, "/permissions", None).await, 403, "FORBIDDEN", "not admin yet");
    ok(app, Method::PATCH, &format!("/policies/{policy}"), json!({"admin_access": true})).await;
    eventually("admin access applies", || async { status(app, &token, "/permissions?limit=1").await == 200 }).await;
    let g = app.as_token(Some(&token), Method::GET, "/policies/me/globals", None).await;
    assert_eq!(g.body["data"]["admin_access"], json!(true));
    ok(app, Method::PATCH, &format!("/policies/{policy}"), json!({"admin_access": false})).await;
    eventually("admin access is revoked", || async { status(app, &token, "/permissions?limit=1").await == 403 }).await;
}

/// An IP-limited policy applies only from its addresses; a user whose IP-limited policies all
/// refuse the address is refused.
#[tokio::test]
async fn ip_limited_policies_apply_only_from_their_addresses() {
    let app = env();
    let (token, _, role_id) = role(app, "Travellers", json!([{"collection": "articles", "action": "read", "fields": ["id"]}])).await;
    let office = policy_of(app, &role_id).await;
    ok(app, Method::PATCH, &format!("/policies/{office}"), json!({"ip_access": ["10.1.0.0/16"]})).await;
    let lab = id(&ok(
        app,
        Method::POST,
        "/policies",
        json!({"name": "Lab", "ip_access": ["10.2.0.0/16"],
        "permissions": [{"collection": "authors", "action": "read", "fields": ["id"]}]}),
    )
    .await);
    ok(app, Method::PATCH, &format!("/roles/{role_id}"), json!({"policies": {"create": [{"policy": lab}]}})).await;
    let from = |ip: &'static str, path: &'static str| {
        let token = token.clone();
        async move { send(app, Method::GET, path, Some(&token), &[("x-forwarded-for", ip)], None).await }
    };
    eventually("the lab policy applies from the lab", || async { from("10.2.0.9", "/items/authors?limit=1").await.status == 200 }).await;
    assert_eq!(from("10.2.0.9", "/items/articles?limit=1").await.status, 403, "the office policy does not apply from the lab");
    assert_eq!(from("10.1.0.9", "/items/articles?limit=1").await.status, 200);
    assert_eq!(from("10.1.0.9", "/items/authors?limit=1").await.status, 403, "the lab policy does not apply from the office");
    // From elsewhere no policy applies at once; a user whose IP-limited policies all refuse the
    // address is refused outright (their identity is read afresh: a new user of the role).
    assert_error(&from("192.0.2.1", "/items/articles?limit=1").await, 403, "FORBIDDEN", "no policy applies from elsewhere");
    ok(app, Method::POST, "/users", json!({"email": "newcomer@example.com", "password": "a-password-1", "role": role_id, "token": "newcomer-token"})).await;
    let r = send(app, Method::GET, "/items/articles?limit=1", Some("newcomer-token"), &[("x-forwarded-for", "192.0.2.1")], None).await;
    assert_error(&r, 401, "INVALID_IP", "no policy admits the address");
    let r = send(app, Method::GET, "/items/articles?limit=1", Some("newcomer-token"), &[("x-forwarded-for", "10.1.3.3")], None).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// From the attacker's side: a role allowed to edit its own user, its role, its policies and
/// access rows (with `*`) still cannot attach a policy, move its role under another, or give a
/// policy admin access; it reads only its own policies and no permission rows.
#[tokio::test]
async fn a_role_cannot_grant_itself_more() {
    let app = env();
    let (token, user, role_id) = role(
        app,
        "Climbers",
        json!([
            {"collection": "articles", "action": "read", "fields": ["id"]},
            {"collection": "directus_users", "action": "update", "permissions": {"id": {"_eq": "$CURRENT_USER"}}, "fields": ["*"]},
            {"collection": "directus_roles", "action": "update", "permissions": {"id": {"_eq": "$CURRENT_ROLE"}}, "fields": ["*"]},
            {"collection": "directus_policies", "action": "update", "permissions": {"id": {"_in": "$CURRENT_POLICIES"}}, "fields": ["*"]},
            {"collection": "directus_access", "action": "create", "fields": ["*"]},
        ]),
    )
    .await;
    let own = policy_of(app, &role_id).await;
    let root = admin_policy(app).await;
    let admin_role = app.sql("SELECT to_json(id::text)::text FROM cdapi.roles WHERE name = 'Administrator'").await;
    let count_sql = format!("SELECT count(*)::text FROM cdapi.access WHERE \"user\" = '{user}' OR role = '{role_id}'");
    let before = app.sql(&count_sql).await;

    let r = app.as_token(Some(&token), Method::PATCH, "/users/me", Some(json!({"policies": [{"policy": root}]}))).await;
    assert_error(&r, 403, "FORBIDDEN", "attaching the admin policy to oneself");
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/roles/{role_id}"), Some(json!({"policies": {"create": [{"policy": root}]}}))).await;
    assert_error(&r, 403, "FORBIDDEN", "attaching the admin policy to one's role");
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/roles/{role_id}"), Some(json!({"parent": admin_role}))).await;
    assert_error(&r, 403, "FORBIDDEN", "moving one's role under the Administrator role");
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/policies/{own}"), Some(json!({"admin_access": true}))).await;
    assert_error(&r, 403, "FORBIDDEN", "giving one's policy admin access");
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/policies/{own}"), Some(json!({"ip_access": null}))).await;
    assert_error(&r, 403, "FORBIDDEN", "lifting one's IP list");
    // Access rows have no REST path (as in Directus); internal callers reach them over gRPC.
    let mut items = ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    let mut req = tonic::Request::new(CreateItemRequest {
        collection: "directus_access".into(),
        data: json!({"user": user, "policy": root}).to_string().into(),
        query: None,
    });
    req.metadata_mut().insert("authorization", format!("Bearer {token}").parse().expect("header"));
    let status = items.create_item(req).await.expect_err("creating an access row to the admin policy");
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    assert_eq!(app.sql(&count_sql).await, before, "no access row was added");
    assert_eq!(app.sql(&format!("SELECT to_json(admin_access)::text FROM cdapi.policies WHERE id = '{own}'")).await, json!(false));
    assert_eq!(app.sql(&format!("SELECT to_json(parent IS NULL)::text FROM cdapi.roles WHERE id = '{role_id}'")).await, json!(true));
    // What it may do stays what it may: its own fields, not the policies of others.
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/policies/{own}"), Some(json!({"description": "mine"}))).await;
    assert_eq!(r.status, 200, "an allowed field of its own policy: {}", r.body);
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/policies/{root}"), Some(json!({"description": "pwned"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "another policy");
    let r = app.as_token(Some(&token), Method::GET, "/policies?fields=id", None).await;
    assert_eq!(r.body["data"], json!([{"id": own}]), "{}", r.body);
    assert_error(&app.as_token(Some(&token), Method::GET, "/permissions", None).await, 403, "FORBIDDEN", "permission rows");
    assert_error(&app.as_token(Some(&token), Method::GET, &format!("/policies/{PUBLIC_POLICY}"), None).await, 403, "FORBIDDEN", "the public policy");
    assert_error(&app.as_token(None, Method::GET, "/policies", None).await, 403, "FORBIDDEN", "the public");
    let g = app.as_token(Some(ADMIN_TOKEN), Method::GET, "/policies?filter[name][_eq]=$t:public_label&fields=id", None).await;
    assert_eq!(g.body["data"], json!([{"id": PUBLIC_POLICY}]), "{}", g.body);
}

/// The official Directus SDK (18.x, `tests/js/sdk-policies.mjs`) sets access up unchanged:
/// createPolicy, createRole, createUser; the user's readItems is what the policy allows.
#[tokio::test]
async fn the_directus_sdk_sets_up_access_with_policies() {
    let app = env();
    let js = repo_root().join("tests/js");
    assert!(js.join("node_modules/@directus/sdk").exists(), "run `npm ci` in tests/js (deploy/local/test does)");
    let out = std::process::Command::new("node").arg("sdk-policies.mjs").arg(&app.rest_url).arg(ADMIN_TOKEN).current_dir(&js).output().expect("node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert!(report.get("error").is_none(), "{report}");
    assert_eq!(report["policy"], json!({"name": "SDK readers", "app_access": true, "admin_access": false}));
    assert_eq!(report["statuses"], json!(["published"]));
    assert_eq!(report["count"], app.sql("SELECT count(*)::text FROM articles WHERE status = 'published'").await);
    assert_eq!(report["authors"], json!("FORBIDDEN"));
    assert_eq!(report["me"], json!({"access": "partial", "fields": ["id", "status", "title"]}));
    assert_eq!(report["globals"], json!({"app_access": true, "admin_access": false, "enforce_tfa": false}));
    assert_eq!(report["policies"], json!(["SDK readers"]));
}
