//! GraphQL mutations (docs/graphql.md) on their own demo database, the
//! `auth_*` mutations of `/graphql/system`, and the schema following a DDL change.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{Dataset, app, cookie_value, exec, gql_data};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[tokio::test]
async fn create_update_and_delete_items() {
    let app = app(Dataset::DemoWrites);
    // One item with a new related author (M2O object without key: created, then linked).
    let q = "mutation($d: create_articles_input!) { create_articles_item(data: $d) { id title author { name } } }";
    let g =
        app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), q, json!({"d": {"title": "GQL one", "status": "draft", "author": {"name": "GQL Writer"}}})).await;
    let one = gql_data(&g)["create_articles_item"].clone();
    assert_eq!(one["title"], "GQL one");
    assert_eq!(one["author"]["name"], "GQL Writer");
    let id = one["id"].as_str().expect("id is a string").to_owned();
    let truth = app
        .sql(&format!(
            "SELECT json_build_object('title', a.title, 'author', au.name)::text FROM articles a JOIN authors au ON au.id = a.author WHERE a.id = {id}"
        ))
        .await;
    assert_eq!(truth, json!({"title": "GQL one", "author": "GQL Writer"}));

    let g = app
        .graphql(
            "/graphql",
            Some(e2e_tests::ADMIN_TOKEN),
            "mutation { create_tags_items(data: [{name: \"gql-a\"}, {name: \"gql-b\"}]) { id name } }",
            json!({}),
        )
        .await;
    let tags = gql_data(&g)["create_tags_items"].as_array().cloned().unwrap_or_default();
    assert_eq!(tags.iter().map(|t| t["name"].clone()).collect::<Vec<_>>(), [json!("gql-a"), json!("gql-b")]);
    let tag_ids: Vec<String> = tags.iter().filter_map(|t| t["id"].as_str().map(str::to_owned)).collect();

    let g = app
        .graphql(
            "/graphql",
            Some(e2e_tests::ADMIN_TOKEN),
            &format!("mutation {{ update_articles_item(id: {id}, data: {{title: \"GQL one, edited\"}}) {{ title }} }}"),
            json!({}),
        )
        .await;
    assert_eq!(gql_data(&g)["update_articles_item"]["title"], "GQL one, edited");

    // update_<c>_items: ids and one data object (a list, as Directus; a plain object is coerced).
    let q = format!("mutation {{ update_tags_items(ids: [{}], data: [{{name: \"same\"}}], sort: [\"id\"]) {{ id name }} }}", tag_ids[0]);
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), &q, json!({})).await;
    assert_eq!(gql_data(&g)["update_tags_items"], json!([{"id": tag_ids[0], "name": "same"}]));
    let q = format!("mutation {{ update_tags_batch(data: [{{id: {}, name: \"gql-x\"}}, {{id: {}, name: \"gql-y\"}}]) {{ name }} }}", tag_ids[0], tag_ids[1]);
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), &q, json!({})).await;
    assert_eq!(gql_data(&g)["update_tags_batch"], json!([{"name": "gql-x"}, {"name": "gql-y"}]));
    let names = app.sql(&format!("SELECT json_agg(name ORDER BY id)::text FROM tags WHERE id IN ({})", tag_ids.join(","))).await;
    assert_eq!(names, json!(["gql-x", "gql-y"]));

    // The singleton.
    let g = app
        .graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "mutation { update_settings_items(data: {tagline: \"From GraphQL\"}) { tagline } }", json!({}))
        .await;
    assert_eq!(gql_data(&g)["update_settings_items"]["tagline"], "From GraphQL");
    assert_eq!(app.sql("SELECT to_json(tagline)::text FROM settings").await, "From GraphQL");

    // Deletes answer delete_one { id } / delete_many { ids }.
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), &format!("mutation {{ delete_articles_item(id: {id}) {{ id }} }}"), json!({})).await;
    assert_eq!(gql_data(&g)["delete_articles_item"], json!({"id": id}));
    let q = format!("mutation {{ delete_tags_items(ids: [{}]) {{ ids }} }}", tag_ids.join(","));
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), &q, json!({})).await;
    assert_eq!(gql_data(&g)["delete_tags_items"]["ids"], json!(tag_ids));
    let left = app.sql(&format!("SELECT count(*)::text FROM tags WHERE id IN ({}) OR name LIKE 'gql-%'", tag_ids.join(","))).await;
    assert_eq!(left, json!(0));
}

#[tokio::test]
async fn failed_writes_have_codes_and_change_nothing() {
    let app = app(Dataset::DemoWrites);
    // Duplicate names in one batch: the unique constraint fails the whole batch. (Counted by
    // name: another test of this file creates and deletes tags at the same time.)
    let g = app
        .graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "mutation { create_tags_items(data: [{name: \"dup-gql\"}, {name: \"dup-gql\"}]) { id } }", json!({}))
        .await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "RECORD_NOT_UNIQUE", "{}", g.body);
    assert_eq!(app.sql("SELECT count(*)::text FROM tags WHERE name = 'dup-gql'").await, json!(0));
    // A required field missing.
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "mutation { create_articles_item(data: {status: \"draft\"}) { id } }", json!({})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "FAILED_VALIDATION", "{}", g.body);
    assert_eq!(g.body["data"]["create_articles_item"], Value::Null);
    // Several data objects for one update of many ids.
    let g = app
        .graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "mutation { update_tags_items(ids: [1], data: [{name: \"a\"}, {name: \"b\"}]) { id } }", json!({}))
        .await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "INVALID_PAYLOAD", "{}", g.body);
    // Missing item.
    let g =
        app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "mutation { update_articles_item(id: 99999999, data: {title: \"x\"}) { id } }", json!({})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "FORBIDDEN", "{}", g.body);
}

#[tokio::test]
async fn auth_mutations_on_the_system_endpoint() {
    let app = app(Dataset::DemoWrites);
    let q = "mutation { auth_login(email: \"admin@example.com\", password: \"test-password\") { access_token refresh_token expires } }";
    let g = app.graphql("/graphql/system", None, q, json!({})).await;
    let tokens = gql_data(&g)["auth_login"].clone();
    let access = tokens["access_token"].as_str().expect("access token").to_owned();
    let refresh = tokens["refresh_token"].as_str().expect("refresh token").to_owned();
    assert!(tokens["expires"].as_str().and_then(|e| e.parse::<i64>().ok()).is_some_and(|ms| ms > 0), "{tokens}");
    // The access token reads items on /graphql.
    let g = app.graphql("/graphql", Some(&access), "{ tags(limit: 1) { id } }", json!({})).await;
    assert_eq!(gql_data(&g)["tags"].as_array().map(Vec::len), Some(1));
    // users_me: the caller as they may see themselves (no hashes, no TOTP secret), through the
    // core like REST's /users/me.
    let g = app.graphql("/graphql/system", Some(&access), "{ users_me { id email status role { name } } }", json!({})).await;
    let me = gql_data(&g)["users_me"].clone();
    let truth = app.sql("SELECT json_build_object('id', u.id::text, 'email', u.email, 'status', u.status, 'role', json_build_object('name', r.name))::text FROM cdapi.users u JOIN cdapi.roles r ON r.id = u.role WHERE u.email = 'admin@example.com'").await;
    assert_eq!(me["role"]["name"], "Administrator", "the bootstrap admin's role");
    assert_eq!(me, truth);
    let g = app.graphql("/graphql/system", Some(&access), "{ users_me { tfa_secret } }", json!({})).await;
    assert_eq!(g.status, 400, "TOTP secrets are no field at all: {}", g.body);
    // The public role may not read users: no users_me in its schema (as Directus).
    let g = app.graphql("/graphql/system", None, "{ users_me { id } }", json!({})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION", "{}", g.body);
    let g = app.graphql("/graphql/system", None, "{ server_ping }", json!({})).await;
    assert_eq!(g.body["data"], json!({"server_ping": "pong"}));
    // Refresh rotates; the rotated token refreshes no more after logout.
    let q = "mutation($t: String) { auth_refresh(refresh_token: $t, mode: json) { access_token refresh_token } }";
    let g = app.graphql("/graphql/system", None, q, json!({"t": refresh})).await;
    let rotated = gql_data(&g)["auth_refresh"]["refresh_token"].as_str().expect("rotated").to_owned();
    assert_ne!(rotated, refresh);
    let g = app.graphql("/graphql/system", None, "mutation($t: String) { auth_logout(refresh_token: $t) }", json!({"t": rotated})).await;
    assert_eq!(gql_data(&g)["auth_logout"], true);
    let g = app.graphql("/graphql/system", None, q, json!({"t": rotated})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "INVALID_CREDENTIALS", "{}", g.body);
    // Mode cookie: the refresh token travels in the cookie, not in the data.
    let q = "mutation { auth_login(email: \"admin@example.com\", password: \"test-password\", mode: cookie) { access_token refresh_token } }";
    let g = app.graphql("/graphql/system", None, q, json!({})).await;
    assert_eq!(gql_data(&g)["auth_login"]["refresh_token"], Value::Null);
    assert!(cookie_value(&g, "directus_refresh_token").is_some_and(|c| c.len() > 20), "{:?}", g.headers);
    // Mode session: one cookie, which then authenticates /graphql as it does REST.
    let q = "mutation { auth_login(email: \"admin@example.com\", password: \"test-password\", mode: session) { access_token expires } }";
    let g = app.graphql("/graphql/system", None, q, json!({})).await;
    assert_eq!(gql_data(&g)["auth_login"]["access_token"], Value::Null, "no token in the body in mode session");
    let session = cookie_value(&g, "directus_session_token").expect("session cookie");
    let cookie = format!("directus_session_token={session}");
    let body = json!({"query": "{ tags(limit: 1) { id } }"}).to_string();
    let r = e2e_tests::send(app, reqwest::Method::POST, "/graphql", None, &[("cookie", &cookie)], Some(("application/json", body))).await;
    assert_eq!(gql_data(&r)["tags"].as_array().map(Vec::len), Some(1));
    // Wrong password, and the reset mutations.
    let q = "mutation { auth_login(email: \"admin@example.com\", password: \"nope\") { access_token } }";
    let g = app.graphql("/graphql/system", None, q, json!({})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "INVALID_CREDENTIALS", "{}", g.body);
    let g = app.graphql("/graphql/system", None, "mutation { auth_password_request(email: \"nobody@example.com\") }", json!({})).await;
    assert_eq!(gql_data(&g)["auth_password_request"], true);
    let g = app.graphql("/graphql/system", None, "mutation { auth_password_reset(token: \"forged\", password: \"whatever-123\") }", json!({})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "FORBIDDEN", "{}", g.body);
    // User collections are not root fields of the system endpoint, and auth is not on /graphql.
    let g = app.graphql("/graphql/system", Some(e2e_tests::ADMIN_TOKEN), "{ tags { id } }", json!({})).await;
    assert_eq!(g.status, 400, "{}", g.body);
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "mutation { auth_logout }", json!({})).await;
    assert_eq!(g.status, 400, "{}", g.body);
}

#[tokio::test]
async fn a_new_table_appears_in_the_schema_without_restart() {
    let app = app(Dataset::DemoWrites);
    // Names that are not GraphQL names are left out, never a failure to build the schema.
    exec(app, "CREATE TABLE \"gql-bad name\" (id serial PRIMARY KEY); CREATE TABLE gql_fresh (id serial PRIMARY KEY, label text, \"2fa\" text); INSERT INTO gql_fresh (label) VALUES ('hello')").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "{ gql_fresh { id label } }", json!({})).await;
        if g.status == 200 && g.body.get("errors").is_none() {
            assert_eq!(g.body["data"]["gql_fresh"], json!([{"id": "1", "label": "hello"}]));
            let r = app.get("/items/gql-bad%20name").await;
            assert_eq!(r.status, 200, "REST still serves it: {}", r.body);
            break;
        }
        assert!(Instant::now() < deadline, "the GraphQL schema never showed the new table: {}", g.body);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
