//! Schema management through `/graphql/system` (docs/data-model.md; Directus's `create_collections_item`,
//! `fields_in_collection`, `create_relations_item`...), and translations made through
//! `/relations` as the Directus app makes them. From the attacker's side: a role and the public
//! change nothing through GraphQL either.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, role};
use e2e_tests::{Dataset, Spec, TestApp, gql_data};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// The demo schema, two core replicas (a change made through one must reach the other).
fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec { dataset: Dataset::DemoWrites, name: Some("schema_graphql".into()), replicas: 2, ..Spec::default() })
            .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

/// A `/graphql/system` operation as the admin: its data.
async fn system(app: &TestApp, query: &str) -> Value {
    gql_data(&app.graphql("/graphql/system", Some(e2e_tests::ADMIN_TOKEN), query, json!({})).await).clone()
}

async fn table_exists(app: &TestApp, name: &str) -> bool {
    app.sql(&format!("SELECT to_json(to_regclass('public.{name}') IS NOT NULL)::text")).await == json!(true)
}

/// Waits until four REST reads in a row (both replicas, round robin) answer `path` with `want`.
async fn everywhere(app: &TestApp, path: &str, want: Value) {
    eventually(&format!("{path} on every replica"), || {
        let want = want.clone();
        async move {
            let mut ok = true;
            for _ in 0..4 {
                ok &= app.get(path).await.body["data"] == want;
            }
            ok
        }
    })
    .await;
}

#[tokio::test]
async fn collections_fields_and_relations_are_managed_through_graphql() {
    let app = env();
    let made = system(
        app,
        r#"mutation { create_collections_item(data: {
            collection: "gql_notes", schema: {}, meta: {icon: "note", note: "made in GraphQL"},
            fields: [{field: "id", type: "integer", schema: {is_primary_key: true, has_auto_increment: true}}, {field: "body", type: "text"}]
        }) { collection meta { icon note hidden singleton } schema { name } } }"#,
    )
    .await;
    assert_eq!(
        made["create_collections_item"],
        json!({"collection": "gql_notes", "meta": {"icon": "note", "note": "made in GraphQL", "hidden": false, "singleton": false}, "schema": {"name": "gql_notes"}})
    );
    assert!(table_exists(app, "gql_notes").await);
    let field = system(
        app,
        r#"mutation { create_fields_item(collection: "gql_notes", data: {field: "rating", type: "integer", schema: {default_value: 3}, meta: {interface: "input", note: "stars", special: ["cast-integer"]}}) {
            collection field type schema { data_type is_nullable default_value } meta { interface note special } } }"#,
    )
    .await;
    assert_eq!(
        field["create_fields_item"],
        json!({"collection": "gql_notes", "field": "rating", "type": "integer", "schema": {"data_type": "integer", "is_nullable": true, "default_value": 3}, "meta": {"interface": "input", "note": "stars", "special": ["cast-integer"]}})
    );
    system(app, r#"mutation { create_fields_item(collection: "gql_notes", data: {field: "author", type: "integer"}) { field } }"#).await;
    let relation = system(
        app,
        r#"mutation { create_relations_item(data: {collection: "gql_notes", field: "author", related_collection: "authors", schema: {on_delete: "SET NULL"}}) {
            collection field related_collection schema { foreign_key_table on_delete } meta { many_collection one_collection } } }"#,
    )
    .await;
    assert_eq!(
        relation["create_relations_item"],
        json!({"collection": "gql_notes", "field": "author", "related_collection": "authors", "schema": {"foreign_key_table": "authors", "on_delete": "SET NULL"}, "meta": {"many_collection": "gql_notes", "one_collection": "authors"}})
    );

    // Reads, as Directus names them.
    let read = system(
        app,
        r#"{ collections_by_name(name: "gql_notes") { collection meta { note } }
             fields_in_collection(collection: "gql_notes") { field }
             fields_by_name(collection: "gql_notes", field: "rating") { type meta { note } }
             relations_in_collection(collection: "gql_notes") { field related_collection }
             relations_by_name(collection: "gql_notes", field: "author") { related_collection }
             collections { collection } fields { collection field } relations { collection field } }"#,
    )
    .await;
    assert_eq!(read["collections_by_name"], json!({"collection": "gql_notes", "meta": {"note": "made in GraphQL"}}));
    assert_eq!(read["fields_in_collection"], json!([{"field": "id"}, {"field": "body"}, {"field": "rating"}, {"field": "author"}]));
    assert_eq!(read["fields_by_name"], json!({"type": "integer", "meta": {"note": "stars"}}));
    assert_eq!(read["relations_in_collection"], json!([{"field": "author", "related_collection": "authors"}]));
    assert_eq!(read["relations_by_name"], json!({"related_collection": "authors"}));
    assert!(read["collections"].as_array().expect("collections").contains(&json!({"collection": "gql_notes"})));
    assert!(read["fields"].as_array().expect("fields").contains(&json!({"collection": "gql_notes", "field": "rating"})));
    assert!(read["relations"].as_array().expect("relations").contains(&json!({"collection": "gql_notes", "field": "author"})));

    // The new collection serves items, nesting through the new relation, on every replica.
    everywhere(app, "/items/gql_notes?fields=id", json!([])).await;
    let r = app.admin(Method::POST, "/items/gql_notes?fields=rating,author.name", json!({"body": "hi", "author": 1})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["rating"], 3, "the default: {}", r.body);
    assert!(r.body["data"]["author"]["name"].is_string(), "{}", r.body);

    // Changes.
    let changed = system(
        app,
        r#"mutation { update_fields_item(collection: "gql_notes", field: "rating", data: {meta: {note: "five stars"}}) { meta { note } }
                      update_collections_item(collection: "gql_notes", data: {meta: {hidden: true}}) { meta { hidden } }
                      update_relations_item(collection: "gql_notes", field: "author", data: {schema: {on_delete: "CASCADE"}}) { schema { on_delete } } }"#,
    )
    .await;
    assert_eq!(
        changed,
        json!({"update_fields_item": {"meta": {"note": "five stars"}}, "update_collections_item": {"meta": {"hidden": true}}, "update_relations_item": {"schema": {"on_delete": "CASCADE"}}})
    );

    // From the attacker's side: a role that may read gql_notes, and the public, change nothing.
    let (token, _, _) = role(app, "GqlSchemaPeekers", json!([{"collection": "gql_notes", "action": "read", "fields": ["*"]}])).await;
    let attempts = [
        r#"mutation { create_collections_item(data: {collection: "mine", schema: {}, fields: [{field: "id", type: "integer", schema: {is_primary_key: true}}]}) { collection } }"#,
        r#"mutation { update_collections_item(collection: "gql_notes", data: {meta: {hidden: false}}) { collection } }"#,
        r#"mutation { delete_collections_item(collection: "gql_notes") { collection } }"#,
        r#"mutation { create_fields_item(collection: "gql_notes", data: {field: "owned", type: "string"}) { field } }"#,
        r#"mutation { update_fields_item(collection: "gql_notes", field: "body", data: {type: "integer"}) { field } }"#,
        r#"mutation { delete_fields_item(collection: "gql_notes", field: "body") { field } }"#,
        r#"mutation { create_relations_item(data: {collection: "gql_notes", field: "rating", related_collection: "authors"}) { field } }"#,
        r#"mutation { delete_relations_item(collection: "gql_notes", field: "author") { field } }"#,
    ];
    for who in [Some(token.as_str()), None] {
        for query in attempts {
            let r = app.graphql("/graphql/system", who, query, json!({})).await;
            assert_eq!(r.body["errors"][0]["extensions"]["code"], "FORBIDDEN", "{query} as {who:?}: {}", r.body);
        }
    }
    assert!(!table_exists(app, "mine").await);
    let columns = "SELECT to_json(string_agg(column_name || ':' || data_type, ',' ORDER BY column_name))::text FROM information_schema.columns WHERE table_name = 'gql_notes'";
    assert_eq!(app.sql(columns).await, json!("author:integer,body:text,id:integer,rating:integer"));
    assert_eq!(app.sql("SELECT count(*)::text FROM cdapi.relations WHERE many_collection = 'gql_notes'").await, json!(1));

    // Deletions answer the names deleted.
    let gone = system(app, r#"mutation { delete_relations_item(collection: "gql_notes", field: "author") { collection field } }"#).await;
    assert_eq!(gone["delete_relations_item"], json!({"collection": "gql_notes", "field": "author"}));
    let gone = system(app, r#"mutation { delete_fields_item(collection: "gql_notes", field: "rating") { collection field } }"#).await;
    assert_eq!(gone["delete_fields_item"], json!({"collection": "gql_notes", "field": "rating"}));
    let gone = system(app, r#"mutation { delete_collections_item(collection: "gql_notes") { collection } }"#).await;
    assert_eq!(gone["delete_collections_item"], json!({"collection": "gql_notes"}));
    assert!(!table_exists(app, "gql_notes").await);
    // The replica that did not make the change follows on the NOTIFY (within one rebuild).
    eventually("gql_notes gone from every replica", || async {
        let mut gone = 0;
        for _ in 0..4 {
            let r =
                app.graphql("/graphql/system", Some(e2e_tests::ADMIN_TOKEN), r#"{ collections_by_name(name: "gql_notes") { collection } }"#, json!({})).await;
            gone += usize::from(r.body["errors"][0]["extensions"]["code"] == "FORBIDDEN");
        }
        gone == 4
    })
    .await;
}

#[tokio::test]
async fn translations_are_made_through_relations_as_directus_makes_them() {
    let app = env();
    let ok = |method: Method, path: &'static str, body: Value| async move {
        let r = app.admin(method.clone(), path, body.clone()).await;
        assert_eq!(r.status, 200, "{method} {path} {body}: {}", r.body);
        r.body["data"].clone()
    };
    // What the Directus app sends for a "translations" field: a languages collection keyed by
    // code, a junction holding the translated fields, the alias, two relations.
    ok(
        Method::POST,
        "/collections",
        json!({"collection": "languages", "schema": {}, "meta": {}, "fields": [
            {"field": "code", "type": "string", "schema": {"is_primary_key": true}}, {"field": "name", "type": "string"},
        ]}),
    )
    .await;
    ok(
        Method::POST,
        "/collections",
        json!({"collection": "articles_translations", "schema": {}, "meta": {"hidden": true}, "fields": [
            {"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}},
            {"field": "articles_id", "type": "integer"}, {"field": "languages_code", "type": "string"}, {"field": "headline", "type": "string"},
        ]}),
    )
    .await;
    ok(Method::POST, "/fields/articles", json!({"field": "translations", "type": "alias", "meta": {"special": ["translations"], "interface": "translations"}}))
        .await;
    ok(
        Method::POST,
        "/relations",
        json!({"collection": "articles_translations", "field": "languages_code", "related_collection": "languages",
        "meta": {"one_field": null, "junction_field": "articles_id"}, "schema": {"on_delete": "SET NULL"}}),
    )
    .await;
    ok(
        Method::POST,
        "/relations",
        json!({"collection": "articles_translations", "field": "articles_id", "related_collection": "articles",
        "meta": {"one_field": "translations", "junction_field": "languages_code"}, "schema": {"on_delete": "SET NULL"}}),
    )
    .await;
    everywhere(app, "/items/languages", json!([])).await;
    ok(Method::POST, "/items/languages", json!([{"code": "en", "name": "English"}, {"code": "fr", "name": "Français"}])).await;
    everywhere(app, "/items/articles/3?fields=translations", json!({"translations": []})).await;

    // Written and read through the alias like any many-to-many, in REST and GraphQL.
    let written = ok(
        Method::PATCH,
        "/items/articles/3?fields=translations.languages_code.code,translations.headline",
        json!({"translations": [{"languages_code": "en", "headline": "Hello"}, {"languages_code": {"code": "de", "name": "Deutsch"}, "headline": "Hallo"}]}),
    )
    .await;
    let mut got: Vec<(String, String)> = written["translations"]
        .as_array()
        .expect("translations")
        .iter()
        .map(|t| (t["languages_code"]["code"].as_str().unwrap_or_default().to_owned(), t["headline"].as_str().unwrap_or_default().to_owned()))
        .collect();
    got.sort();
    assert_eq!(got, [("de".to_owned(), "Hallo".to_owned()), ("en".to_owned(), "Hello".to_owned())], "{written}");
    let field = app.get("/fields/articles/translations").await;
    assert_eq!(field.body["data"]["meta"]["special"], json!(["translations"]), "{}", field.body);
    let relations = app.get("/relations/articles_translations").await;
    let junctions: Vec<Value> = relations.body["data"].as_array().expect("relations").iter().map(|r| r["meta"]["junction_field"].clone()).collect();
    assert_eq!(junctions.len(), 2, "{}", relations.body);
    eventually("GraphQL serves the translations alias", || async {
        let r = app
            .graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), r#"{ articles_by_id(id: 3) { translations { headline languages_code { name } } } }"#, json!({}))
            .await;
        let mut got: Vec<String> = r.body["data"]["articles_by_id"]["translations"]
            .as_array()
            .map(|list| list.iter().map(|t| format!("{}/{}", t["headline"], t["languages_code"]["name"])).collect())
            .unwrap_or_default();
        got.sort();
        got == ["\"Hallo\"/\"Deutsch\"", "\"Hello\"/\"English\""]
    })
    .await;
}

#[tokio::test]
async fn hash_fields_store_argon2_hashes_of_what_is_written() {
    let app = env();
    let r = app.admin(Method::POST, "/fields/authors", json!({"field": "pin", "type": "hash", "meta": {"interface": "input-hash"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!((r.body["data"]["type"].clone(), r.body["data"]["meta"]["special"].clone()), (json!("hash"), json!(["hash"])), "{}", r.body);
    // The column and its `hash` mark arrive in one rebuild: once a replica serves the field, it
    // hashes it.
    everywhere(app, "/items/authors/2?fields=pin", json!({"pin": null})).await;
    let hasher = access_token::passwords::Hasher::new(1, std::time::Duration::from_secs(30));
    let stored = || async { app.sql("SELECT to_json(pin)::text FROM authors WHERE id = 2").await.as_str().unwrap_or_default().to_owned() };

    let r = app.admin(Method::PATCH, "/items/authors/2?fields=pin", json!({"pin": "4711"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let first = stored().await;
    assert!(first.starts_with("$argon2id$"), "stored as an argon2id hash: {first}");
    assert_eq!(r.body["data"]["pin"], json!(first), "read back as stored, as Directus answers hash fields");
    assert!(hasher.verify("4711".into(), first.clone()).await.expect("verify"), "the hash is of what was written");
    assert!(!hasher.verify("4712".into(), first.clone()).await.expect("verify"));
    // Every write hashes anew (salted), through GraphQL too.
    let r = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), r#"mutation { update_authors_item(id: 2, data: {pin: "4711"}) { id } }"#, json!({})).await;
    gql_data(&r);
    let second = stored().await;
    assert!(second.starts_with("$argon2id$") && second != first, "{second}");
    assert!(hasher.verify("4711".into(), second).await.expect("verify"));
    let r = app.admin(Method::PATCH, "/items/authors/2", json!({"pin": null})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql("SELECT to_json(pin IS NULL)::text FROM authors WHERE id = 2").await, json!(true), "null stays null");

    // The type is fixed: existing values are not hashes (or would become plain text).
    for (field, to) in [("pin", "string"), ("name", "hash")] {
        let r = app.admin(Method::PATCH, &format!("/fields/authors/{field}"), json!({"type": to})).await;
        assert_eq!((r.status, r.body["errors"][0]["extensions"]["code"].clone()), (400, json!("INVALID_PAYLOAD")), "{field} → {to}: {}", r.body);
    }
    let r = app.admin(Method::DELETE, "/fields/authors/pin", json!(null)).await;
    assert_eq!(r.status, 204, "{}", r.body);
}
