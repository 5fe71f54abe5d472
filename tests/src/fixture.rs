//! The permissions fixture (docs/permissions.md), built once per test binary through the REST API as the
//! admin (the way an operator sets permissions up): a `notes` table owned by users, three roles
//! each with a policy holding its permissions (Directus 11), the public policy's permissions,
//! and one user per role with a static token.
//!
//! - public: reads published `articles` (fields `id,title,status,author,published_at,rating`)
//!   and `authors` (`id,name`); nothing else.
//! - Reviewers: read published `articles` (`*`) and their `comments`, `authors` (`id,name`);
//!   create `comments` (fields `article,body`, preset `author_name = reviewer`, validation
//!   `body` not null); update published `articles` (`title,comments`); delete their own
//!   comments (`author_name = reviewer`).
//! - Owners: every action on `notes` where `owner = $CURRENT_USER` (preset owner).
//! - Clerks: read `film` (`film_id,title,rating,length`) rated `PG`, and `language` (Pagila).

use crate::api::Api;
use crate::{TestApp, exec};
use reqwest::Method;
use serde_json::{Value, json};

/// Tokens and ids of the fixture.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// Static token of the Reviewers user.
    pub reviewer: String,
    /// Static token of the first Owners user, and their id.
    pub owner: (String, String),
    /// Static token of the second Owners user, and their id.
    pub other_owner: (String, String),
    /// The Reviewers role id.
    pub reviewers_role: String,
}

async fn created(app: &TestApp, path: &str, body: Value) -> Value {
    let r = app.admin(Method::POST, path, body.clone()).await;
    assert_eq!(r.status, 200, "POST {path} {body}: {}", r.body);
    r.body["data"].clone()
}

/// The `id` of an item as text (number or string).
pub fn id_of(v: &Value) -> String {
    match &v["id"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The public's policy (migration 0008; Directus's id): permission rows for requests without
/// a token belong to it.
pub const PUBLIC_POLICY: &str = "abf8a154-5b1c-4a46-ac9c-7300570f4f17";

/// A policy named `name` and a role of the same name holding it, created as the Directus app
/// does (Directus 11). Returns (role id, policy id).
pub async fn role_with_policy(app: &TestApp, name: &str) -> (String, String) {
    role_with_access(app, name, false).await
}

/// [`role_with_policy`] whose policy has app access (`app_access`) or not.
async fn role_with_access(app: &TestApp, name: &str, app_access: bool) -> (String, String) {
    let policy = id_of(&created(app, "/policies", json!({"name": name, "app_access": app_access})).await);
    let role = id_of(&created(app, "/roles", json!({"name": name, "policies": [{"policy": policy}]})).await);
    (role, policy)
}

/// Creates a role with its policy, its user (with a static token) and returns (token, user id,
/// role id, policy id).
async fn role_with_user(app: &TestApp, role: &str, email: &str) -> (String, String, String, String) {
    role_with_user_token(app, role, email, format!("{email}-token"), false).await
}

/// [`role_with_user`] with the user's static token given, its policy with app access or not.
async fn role_with_user_token(app: &TestApp, role: &str, email: &str, token: String, app_access: bool) -> (String, String, String, String) {
    let (role_id, policy_id) = role_with_access(app, role, app_access).await;
    let user = created(app, "/users", json!({"email": email, "password": "a-password-1", "role": role_id, "token": token})).await;
    (token, id_of(&user), role_id, policy_id)
}

/// A role whose policy has these permission rows (`policy` filled in) and a user in it with a
/// static token; waits until the core has the rules. Returns (token, user id, role id).
pub async fn role(app: &TestApp, name: &str, rows: Value) -> (String, String, String) {
    role_for(app, name, rows, false).await
}

/// [`role`] whose policy has app access: its user also has Directus's app minimum (the
/// settings, translations, presets, comments, notifications; docs/permissions.md).
pub async fn app_role(app: &TestApp, name: &str, rows: Value) -> (String, String, String) {
    role_for(app, name, rows, true).await
}

async fn role_for(app: &TestApp, name: &str, rows: Value, app_access: bool) -> (String, String, String) {
    let email = format!("{}@example.com", name.to_lowercase());
    let (token, user_id, role_id, policy_id) = role_with_user_token(app, name, &email, format!("{name}-token"), app_access).await;
    let rows: Vec<Value> = rows
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|row| {
            let mut row = row.clone();
            row["policy"] = json!(policy_id);
            row
        })
        .collect();
    let n = rows.len();
    let check_rows = rows.clone();
    if n > 0 {
        let r = app.admin(Method::POST, "/permissions", Value::Array(rows)).await;
        assert_eq!(r.status, 200, "permissions of {name}: {}", r.body);
    }
    // The core reloads its rules on NOTIFY: wait until `/permissions/me` shows every CRUD row
    // of the role, as often in a row as it takes to have asked each core replica (round robin).
    let check = format!("SELECT count(*)::text FROM cdapi.permissions WHERE policy = '{policy_id}'");
    assert_eq!(app.sql(&check).await, json!(n));
    let mut wanted: Vec<(String, String)> = check_rows
        .iter()
        .filter(|r| matches!(r["action"].as_str(), Some("create" | "read" | "update" | "delete")))
        .map(|r| (r["collection"].as_str().unwrap_or_default().to_owned(), r["action"].as_str().unwrap_or_default().to_owned()))
        .collect();
    if app_access {
        wanted.push(("directus_settings".into(), "read".into()));
    }
    let in_a_row = 2 * app.core_urls.len().max(1);
    let seen = std::cell::Cell::new(0);
    let seen = &seen;
    eventually(&format!("the rules of {name} reach every core replica"), || {
        let token = token.clone();
        let wanted = wanted.clone();
        async move {
            let me = app.as_token(Some(&token), Method::GET, "/permissions/me", None).await;
            let loaded = me.status == 200 && wanted.iter().all(|(c, a)| me.body["data"][c][a]["access"].as_str().is_some_and(|x| x != "none"));
            seen.set(if loaded { seen.get() + 1 } else { 0 });
            seen.get() >= in_a_row
        }
    })
    .await;
    (token, user_id, role_id)
}

/// The activity rows of `collection` item `item`, oldest first, with their revisions
/// (`data`, `delta`, `collection`, `item`), as the admin reads them (docs/history.md).
pub async fn item_history(app: &TestApp, collection: &str, item: &str) -> Vec<Value> {
    let path = format!(
        "/activity?filter[collection][_eq]={collection}&filter[item][_eq]={item}&sort=id&fields=*,revisions.data,revisions.delta,revisions.collection,revisions.item&limit=-1"
    );
    let r = app.admin(Method::GET, &path, Value::Null).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"].as_array().cloned().unwrap_or_default()
}

/// Waits until `check` holds (permissions reach the core through NOTIFY), at most 15 s.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..150 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for: {what}");
}

static DEMO: tokio::sync::OnceCell<Fixture> = tokio::sync::OnceCell::const_new();

/// The demo-schema fixture (see the module docs), built on first use.
pub async fn demo(app: &'static TestApp) -> &'static Fixture {
    DEMO.get_or_init(|| build_demo(app)).await
}

async fn build_demo(app: &TestApp) -> Fixture {
    exec(app, "CREATE TABLE notes (id serial PRIMARY KEY, owner uuid REFERENCES cdapi.users (id), title text NOT NULL, status text NOT NULL DEFAULT 'draft')")
        .await;
    let (reviewer, _, reviewers_role, reviewers) = role_with_user(app, "Reviewers", "reviewer@example.com").await;
    let (owner_token, owner_id, owners_role, owners) = role_with_user(app, "Owners", "owner1@example.com").await;
    let other_token = "owner2@example.com-token".to_owned();
    let other = created(app, "/users", json!({"email": "owner2@example.com", "password": "a-password-1", "role": owners_role, "token": other_token})).await;
    let published = json!({"status": {"_eq": "published"}});
    let own = json!({"owner": {"_eq": "$CURRENT_USER"}});
    let rules = [
        json!({"policy": PUBLIC_POLICY, "collection": "articles", "action": "read", "permissions": published, "fields": ["id", "title", "status", "author", "published_at", "rating"]}),
        json!({"policy": PUBLIC_POLICY, "collection": "authors", "action": "read", "fields": "id,name"}),
        json!({"policy": reviewers, "collection": "articles", "action": "read", "permissions": published, "fields": ["*"]}),
        json!({"policy": reviewers, "collection": "comments", "action": "read", "fields": ["*"]}),
        json!({"policy": reviewers, "collection": "authors", "action": "read", "fields": ["id", "name"]}),
        json!({"policy": reviewers, "collection": "comments", "action": "create", "fields": ["article", "body"],
               "presets": {"author_name": "reviewer"}, "validation": {"body": {"_nnull": true}}}),
        json!({"policy": reviewers, "collection": "articles", "action": "update", "permissions": published, "fields": ["title", "comments"]}),
        json!({"policy": reviewers, "collection": "comments", "action": "delete", "permissions": {"author_name": {"_eq": "reviewer"}}}),
        json!({"policy": owners, "collection": "notes", "action": "create", "permissions": own, "presets": {"owner": "$CURRENT_USER"}, "fields": ["title", "status", "owner"]}),
        json!({"policy": owners, "collection": "notes", "action": "read", "permissions": own, "fields": ["*"]}),
        json!({"policy": owners, "collection": "notes", "action": "update", "permissions": own, "fields": ["title", "status"]}),
        json!({"policy": owners, "collection": "notes", "action": "delete", "permissions": own}),
    ];
    let r = app.admin(Method::POST, "/permissions", Value::Array(rules.to_vec())).await;
    assert_eq!(r.status, 200, "permissions: {}", r.body);
    // The last rule's effect shows once the core has reloaded.
    eventually("permissions reach the core", || async {
        app.as_token(Some(&owner_token), Method::GET, "/items/notes", None).await.status == 200
            && app.as_token(None, Method::GET, "/items/articles?limit=1", None).await.status == 200
    })
    .await;
    Fixture { reviewer, owner: (owner_token, owner_id), other_owner: (other_token, id_of(&other)), reviewers_role }
}

static PAGILA: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();

/// The Pagila fixture: the Clerks role (see the module docs); returns their static token.
pub async fn pagila(app: &'static TestApp) -> &'static String {
    PAGILA
        .get_or_init(|| async {
            let (token, _, _, policy) = role_with_user(app, "Clerks", "clerk@example.com").await;
            let rules = json!([
                {"policy": policy, "collection": "film", "action": "read", "permissions": {"rating": {"_eq": "PG"}}, "fields": ["film_id", "title", "rating", "length", "language_id"]},
                {"policy": policy, "collection": "language", "action": "read", "fields": ["*"]},
            ]);
            let r = app.admin(Method::POST, "/permissions", rules).await;
            assert_eq!(r.status, 200, "permissions: {}", r.body);
            eventually("Clerks can read films", || async { app.as_token(Some(&token), Method::GET, "/items/film?limit=1", None).await.status == 200 }).await;
            token
        })
        .await
}
