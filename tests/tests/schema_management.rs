//! Schema management through the API (docs/data-model.md "Modeling content through the API"): `/collections`, `/fields`, `/relations` with
//! Directus's shapes; each change is DDL plus metadata in one transaction, serves at once on
//! every path (REST, GraphQL, every core replica), and a failed change leaves nothing. From the
//! attacker's side: a role and the public may read only what they may read, and change nothing.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::GetSchemaRequest;
use cdapi_proto::v1::schema_service_client::SchemaServiceClient;
use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, assert_error, gql_data};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// One environment for this file: the demo schema, two core replicas (the edges balance over
/// them), so a change made through one must reach the other.
fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        e2e_tests::start(Spec { dataset: Dataset::DemoWrites, name: Some("schema_model".into()), replicas: 2, ..Spec::default() })
            .unwrap_or_else(|e| panic!("environment: {e:#}"))
    })
}

async fn ok(app: &TestApp, method: Method, path: &str, body: Value) -> Value {
    let r = app.admin(method.clone(), path, body.clone()).await;
    assert_eq!(r.status, 200, "{method} {path} {body}: {}", r.body);
    r.body["data"].clone()
}

async fn read(app: &TestApp, path: &str) -> Value {
    let r = app.get(path).await;
    assert_eq!(r.status, 200, "GET {path}: {}", r.body);
    r.body["data"].clone()
}

async fn table_exists(app: &TestApp, name: &str) -> bool {
    app.sql(&format!("SELECT to_json(to_regclass('public.{name}') IS NOT NULL)::text")).await == json!(true)
}

/// Waits until every core replica serves `collection`.
async fn ready(app: &TestApp, collection: &str) {
    on_every_replica(app, collection, true).await;
}

/// Waits until the alias `articles.reviews` is served (or not) by four requests in a row
/// (reaching each replica).
async fn reviews_alias(app: &TestApp, present: bool) {
    eventually(&format!("the reviews alias present={present} on every replica"), || async {
        let mut all = true;
        for _ in 0..4 {
            all &= (app.get("/items/articles/1?fields=reviews").await.status == 200) == present;
        }
        all
    })
    .await;
}

/// Whether every core replica's snapshot has (or lacks) `collection`.
async fn on_every_replica(app: &TestApp, collection: &str, present: bool) {
    for url in &app.core_urls {
        let url = url.clone();
        eventually(&format!("{collection} present={present} on {url}"), || {
            let url = url.clone();
            async move {
                let mut client = SchemaServiceClient::connect(url).await.expect("connect");
                let mut req = tonic::Request::new(GetSchemaRequest {});
                req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
                let snapshot = client.get_schema(req).await.expect("GetSchema").into_inner();
                snapshot.collections.iter().any(|c| c.name == collection) == present
            }
        })
        .await;
    }
}

#[tokio::test]
async fn a_collection_is_made_related_changed_and_deleted_through_the_api() {
    let app = env();
    let created = ok(app, Method::POST, "/collections", json!({
        "collection": "reviews",
        "meta": {"icon": "star", "note": "Reader reviews"},
        "schema": {},
        "fields": [
            {"field": "id", "type": "integer", "meta": {"hidden": true, "interface": "numeric", "readonly": true}, "schema": {"is_primary_key": true, "has_auto_increment": true}},
            {"field": "title", "type": "string", "meta": {"interface": "input", "required": true}, "schema": {"is_nullable": false, "max_length": 120}},
            {"field": "score", "type": "integer", "schema": {"default_value": 3, "is_indexed": true}},
            {"field": "tags", "type": "csv"},
            {"field": "code", "type": "uuid", "schema": {"is_unique": true}},
        ],
    })).await;
    assert_eq!(created["collection"], "reviews");
    assert_eq!(created["meta"]["icon"], "star");
    assert_eq!(created["meta"]["note"], "Reader reviews");
    assert_eq!(created["meta"]["singleton"], false);
    assert_eq!(created["schema"], json!({"name": "reviews", "schema": "public", "comment": null}));
    assert!(table_exists(app, "reviews").await);

    // The snapshot of the replica that made it was rebuilt before the answer; the other one
    // follows by NOTIFY within one rebuild.
    ready(app, "reviews").await;
    let item = ok(app, Method::POST, "/items/reviews", json!({"title": "Great", "tags": ["a", "b"]})).await;
    assert_eq!(item["score"], 3, "the default applies: {item}");
    assert_eq!(item["tags"], json!(["a", "b"]));
    on_every_replica(app, "reviews", true).await;

    // Fields in Directus's shape.
    let fields = read(app, "/fields/reviews").await;
    let names: Vec<&str> = fields.as_array().expect("fields").iter().filter_map(|f| f["field"].as_str()).collect();
    assert_eq!(names, ["id", "title", "score", "tags", "code"]);
    let title = read(app, "/fields/reviews/title").await;
    assert_eq!(title["type"], "string");
    assert_eq!(title["schema"]["data_type"], "character varying");
    assert_eq!(title["schema"]["max_length"], 120);
    assert_eq!(title["schema"]["is_nullable"], false);
    assert_eq!(title["meta"]["interface"], "input");
    assert_eq!(title["meta"]["required"], true);
    assert_eq!(title["meta"]["sort"], 2);
    let score = read(app, "/fields/reviews/score").await;
    assert_eq!(score["schema"]["default_value"], 3);
    assert_eq!(score["schema"]["is_indexed"], true);
    assert_eq!(score["meta"], Value::Null, "no meta was sent for score");
    let id = read(app, "/fields/reviews/id").await;
    assert_eq!(id["schema"]["is_primary_key"], true);
    assert_eq!(id["schema"]["has_auto_increment"], true);
    assert_eq!(read(app, "/fields/reviews/code").await["schema"]["is_unique"], true);

    // A new field, then an M2O to articles with its O2M alias.
    let article = ok(
        app,
        Method::POST,
        "/fields/reviews",
        json!({"field": "article", "type": "integer", "meta": {"interface": "select-dropdown-m2o", "special": ["m2o"]}}),
    )
    .await;
    assert_eq!(article["meta"]["special"], json!(["m2o"]));
    // Numbered after the collection's other fields, as Directus numbers a new field.
    let highest = fields.as_array().expect("fields").iter().filter_map(|f| f["meta"]["sort"].as_i64()).max().unwrap_or(0);
    assert_eq!(article["meta"]["sort"], highest + 1, "{article}");
    let relation = ok(
        app,
        Method::POST,
        "/relations",
        json!({
            "collection": "reviews", "field": "article", "related_collection": "articles",
            "schema": {"on_delete": "SET NULL"}, "meta": {"one_field": "reviews"},
        }),
    )
    .await;
    assert_eq!(relation["related_collection"], "articles");
    assert_eq!(relation["schema"]["on_delete"], "SET NULL");
    assert_eq!(relation["schema"]["constraint_name"], "reviews_article_foreign");
    assert_eq!(relation["meta"]["one_field"], "reviews");
    reviews_alias(app, true).await;
    ok(app, Method::PATCH, "/items/reviews/1", json!({"article": 1})).await;
    let r = app.get("/items/reviews/1?fields=title,article.id").await;
    assert_eq!(r.body["data"], json!({"title": "Great", "article": {"id": 1}}), "{}", r.body);
    let r = app.get("/items/articles/1?fields=reviews.title").await;
    assert_eq!(r.body["data"]["reviews"], json!([{"title": "Great"}]), "{}", r.body);
    let alias = read(app, "/fields/articles/reviews").await;
    assert_eq!(alias["type"], "alias");
    assert_eq!(alias["schema"], Value::Null);

    // GraphQL rebuilt its schema from the new snapshot.
    eventually("reviews in GraphQL", || async {
        let r = app.graphql("/graphql", Some(ADMIN_TOKEN), "{ reviews { title article { id } } }", json!({})).await;
        r.status == 200 && gql_data(&r)["reviews"] == json!([{"title": "Great", "article": {"id": "1"}}])
    })
    .await;

    // Changes: a meta update, a type change that converts the values, NOT NULL, a default.
    let patched =
        ok(app, Method::PATCH, "/fields/reviews/score", json!({"type": "bigInteger", "schema": {"default_value": 5}, "meta": {"note": "1 to 5"}})).await;
    assert_eq!(patched["type"], "bigInteger");
    assert_eq!(patched["schema"]["data_type"], "bigint");
    assert_eq!(patched["schema"]["default_value"], 5);
    assert_eq!(patched["meta"]["note"], "1 to 5");
    assert_eq!(app.sql("SELECT to_json(score)::text FROM reviews WHERE id = 1").await, json!(3), "values kept");
    let patched = ok(app, Method::PATCH, "/fields/reviews/score", json!({"schema": {"is_indexed": false, "is_unique": true}})).await;
    assert_eq!((patched["schema"]["is_indexed"].clone(), patched["schema"]["is_unique"].clone()), (json!(false), json!(true)));
    let patched = ok(app, Method::PATCH, "/collections/reviews", json!({"meta": {"singleton": false, "note": "Renamed note"}})).await;
    assert_eq!(patched["meta"]["note"], "Renamed note");
    assert_eq!(patched["meta"]["icon"], "star", "meta is merged");

    // Deleting the O2M alias field forgets it in the relation row too (Directus nulls
    // `one_field`), so the alias does not come back when the schema reloads; naming it again
    // in the relation brings it back.
    let r = app.admin(Method::DELETE, "/fields/articles/reviews", json!(null)).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(read(app, "/relations/reviews/article").await["meta"]["one_field"], Value::Null);
    reviews_alias(app, false).await;
    let relation = ok(app, Method::PATCH, "/relations/reviews/article", json!({"meta": {"one_field": "reviews"}})).await;
    assert_eq!(relation["meta"]["one_field"], "reviews");
    reviews_alias(app, true).await;

    // The relation's actions change; then it and the field go.
    let relation = ok(app, Method::PATCH, "/relations/reviews/article", json!({"schema": {"on_delete": "CASCADE"}})).await;
    assert_eq!(relation["schema"]["on_delete"], "CASCADE");
    assert_eq!(relation["meta"]["one_field"], "reviews", "meta kept");
    let r = app.admin(Method::DELETE, "/relations/reviews/article", json!(null)).await;
    assert_eq!(r.status, 204, "{}", r.body);
    // The replica that answered has rebuilt; the others rebuild on the NOTIFY, a moment later.
    reviews_alias(app, false).await;
    let r = app.admin(Method::DELETE, "/fields/reviews/article", json!(null)).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(app.sql("SELECT count(*)::text FROM information_schema.columns WHERE table_name = 'reviews' AND column_name = 'article'").await, json!(0));

    // Deleting the collection drops the table and every metadata row about it.
    let r = app.admin(Method::DELETE, "/collections/reviews", json!(null)).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert!(!table_exists(app, "reviews").await);
    on_every_replica(app, "reviews", false).await;
    assert_eq!(app.get("/items/reviews").await.status, 403);
    for t in ["collections WHERE collection", "fields WHERE collection", "relations WHERE many_collection"] {
        assert_eq!(app.sql(&format!("SELECT count(*)::text FROM cdapi.{t} = 'reviews'")).await, json!(0), "{t}");
    }
}

#[tokio::test]
async fn many_to_many_and_many_to_any_are_made_as_directus_makes_them() {
    let app = env();
    let pk = json!({"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}});
    ok(app, Method::POST, "/collections", json!({"collection": "labels", "schema": {}, "meta": {}, "fields": [pk, {"field": "name", "type": "string"}]})).await;
    ready(app, "labels").await;
    ok(app, Method::POST, "/items/labels", json!([{"name": "new"}, {"name": "hot"}])).await;
    // The junction and the alias, as the Directus app sends them.
    ok(
        app,
        Method::POST,
        "/collections",
        json!({"collection": "articles_labels", "schema": {}, "meta": {"hidden": true}, "fields": [
            pk, {"field": "articles_id", "type": "integer"}, {"field": "labels_id", "type": "integer"},
        ]}),
    )
    .await;
    ok(app, Method::POST, "/fields/articles", json!({"field": "labels", "type": "alias", "meta": {"special": ["m2m"], "interface": "list-m2m"}})).await;
    ok(app, Method::POST, "/relations", json!({"collection": "articles_labels", "field": "labels_id", "related_collection": "labels", "meta": {"one_field": null, "junction_field": "articles_id"}, "schema": {"on_delete": "SET NULL"}})).await;
    ok(app, Method::POST, "/relations", json!({"collection": "articles_labels", "field": "articles_id", "related_collection": "articles", "meta": {"one_field": "labels", "junction_field": "labels_id"}, "schema": {"on_delete": "SET NULL"}})).await;
    on_every_replica(app, "articles_labels", true).await;
    eventually("the labels alias on every replica", || async {
        let mut ok = true;
        for _ in 0..4 {
            ok &= app.get("/items/articles/2?fields=labels").await.status == 200;
        }
        ok
    })
    .await;
    let written =
        ok(app, Method::PATCH, "/items/articles/2?fields=labels.labels_id.name", json!({"labels": [{"labels_id": 1}, {"labels_id": {"name": "fresh"}}]})).await;
    let mut names: Vec<String> =
        written["labels"].as_array().expect("labels").iter().filter_map(|l| l["labels_id"]["name"].as_str().map(str::to_owned)).collect();
    names.sort();
    assert_eq!(names, ["fresh", "new"], "{written}");
    let alias = read(app, "/fields/articles/labels").await;
    assert_eq!((alias["type"].clone(), alias["meta"]["special"].clone()), (json!("alias"), json!(["m2m"])));

    // Many-to-Any: no foreign key, a collection field and the allowed collections.
    ok(
        app,
        Method::POST,
        "/collections",
        json!({"collection": "pins", "schema": {}, "meta": {}, "fields": [
            pk, {"field": "collection", "type": "string"}, {"field": "item", "type": "string"},
        ]}),
    )
    .await;
    let m2a = ok(app, Method::POST, "/relations", json!({"collection": "pins", "field": "item", "related_collection": null, "meta": {"one_allowed_collections": ["labels", "tags"], "one_collection_field": "collection"}})).await;
    assert_eq!(m2a["schema"], Value::Null);
    assert_eq!(m2a["meta"]["one_allowed_collections"], json!(["labels", "tags"]));
    ready(app, "pins").await;
    ok(app, Method::POST, "/items/pins", json!({"collection": "labels", "item": "2"})).await;
    // The relation came after the collection: wait until every replica nests through it.
    eventually("the pins M2A relation on every replica", || async {
        let mut ok = true;
        for _ in 0..4 {
            let r = app.get("/items/pins?fields=item:labels.name").await;
            ok &= r.body["data"] == json!([{"item": {"name": "hot"}}]);
        }
        ok
    })
    .await;

    // Deleting a collection others relate to is refused and changes nothing.
    let r = app.admin(Method::DELETE, "/collections/labels", json!(null)).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "labels is related to by articles_labels");
    assert!(table_exists(app, "labels").await);
    // A field another relation uses (the junction field of the other half) stays.
    let r = app.admin(Method::DELETE, "/fields/articles_labels/labels_id", json!(null)).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "labels_id is the junction field of articles_id's relation");
    assert_eq!(app.get("/items/articles/2?fields=labels.labels_id.name").await.status, 200);
    // Pins names labels only in an allowed list: deleting labels later takes it off that list.
    for path in ["/collections/articles_labels", "/fields/articles/labels", "/collections/labels"] {
        let r = app.admin(Method::DELETE, path, json!(null)).await;
        assert!(r.status == 204 || r.status == 403, "DELETE {path}: {} {}", r.status, r.body);
    }
    assert!(!table_exists(app, "labels").await);
    assert_eq!(app.sql("SELECT to_json(one_allowed_collections)::text FROM cdapi.relations WHERE many_collection = 'pins'").await, json!(["tags"]));
    assert_eq!(app.get("/items/articles/2?fields=title").await.status, 200);
}

#[tokio::test]
async fn a_failed_change_leaves_nothing_behind() {
    let app = env();
    let pk = json!({"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}});
    let cases = [
        (json!({"collection": "articles", "schema": {}}), "an existing collection"),
        (json!({"collection": "directus_things", "schema": {}}), "the system prefix"),
        (json!({"collection": "bad name", "schema": {}}), "a name that is no identifier"),
        (json!({"collection": "a".repeat(64), "schema": {}}), "a name Postgres would truncate"),
        (
            json!({"collection": "broken", "schema": {}, "fields": [pk, {"field": "n", "type": "integer", "schema": {"default_value": "many"}}]}),
            "a default that is no integer",
        ),
        (json!({"collection": "broken", "schema": {}, "fields": [pk, {"field": "x", "type": "varchar(10)); DROP TABLE articles; --"}]}), "an unknown type"),
        (json!({"collection": "broken", "schema": {}, "fields": [{"field": "x", "type": "string"}]}), "no primary key"),
        (json!({"collection": "broken", "schema": {}, "fields": [pk, pk]}), "a field twice"),
    ];
    for (body, why) in cases {
        let r = app.admin(Method::POST, "/collections", body).await;
        assert_error(&r, 400, "INVALID_PAYLOAD", why);
    }
    assert!(!table_exists(app, "broken").await);
    assert_eq!(app.sql("SELECT count(*)::text FROM cdapi.collections WHERE collection = 'broken'").await, json!(0));
    assert_eq!(app.sql("SELECT count(*)::text FROM cdapi.fields WHERE collection = 'broken'").await, json!(0));
    assert!(table_exists(app, "articles").await);

    // A type change the values do not fit: refused, the column and its data unchanged.
    let r = app.admin(Method::PATCH, "/fields/articles/title", json!({"type": "integer"})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "titles are no integers");
    assert_eq!(
        app.sql("SELECT to_json(data_type)::text FROM information_schema.columns WHERE table_name = 'articles' AND column_name = 'title'").await,
        json!("text")
    );
    // A NOT NULL column without a default on a table with rows; a duplicate field.
    let r =
        app.admin(Method::POST, "/fields/articles", json!({"field": "must", "type": "string", "schema": {"is_nullable": false}, "meta": {"note": "x"}})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "NOT NULL without default on rows");
    assert_eq!(
        app.sql("SELECT count(*)::text FROM cdapi.fields WHERE collection = 'articles' AND field = 'must'").await,
        json!(0),
        "its meta row rolled back too"
    );
    let r = app.admin(Method::POST, "/fields/articles", json!({"field": "title", "type": "string"})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "an existing field");
    // The primary key, a field others' foreign keys reference, a relation to nowhere.
    assert_error(&app.admin(Method::DELETE, "/fields/articles/id", json!(null)).await, 400, "INVALID_PAYLOAD", "the primary key");
    let r = app.admin(Method::POST, "/relations", json!({"collection": "comments", "field": "author_name", "related_collection": "nowhere"})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "an unknown related collection");
    let r = app.admin(Method::POST, "/relations", json!({"collection": "comments", "field": "article", "related_collection": "articles"})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a field that already has a relation");
    let r = app.admin(Method::POST, "/relations", json!({"collection": "comments", "field": "author_name", "related_collection": "authors"})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "text values cannot reference an integer key");
    assert_eq!(app.sql("SELECT count(*)::text FROM cdapi.relations WHERE many_field = 'author_name'").await, json!(0));
    // Unknown things are FORBIDDEN, as items are.
    assert_error(&app.get("/collections/nothing_here").await, 403, "FORBIDDEN", "unknown collection");
    assert_error(&app.admin(Method::PATCH, "/fields/articles/nothing_here", json!({"meta": {}})).await, 403, "FORBIDDEN", "unknown field");
    assert_error(&app.admin(Method::DELETE, "/collections/nothing_here", json!(null)).await, 403, "FORBIDDEN", "unknown collection");
    assert_error(&app.admin(Method::PUT, "/collections", json!({})).await, 405, "METHOD_NOT_ALLOWED", "PUT");
}

#[tokio::test]
async fn only_admins_change_the_schema_and_roles_read_only_what_they_may() {
    let app = env();
    let (token, _, _) = role(app, "SchemaPeekers", json!([{"collection": "articles", "action": "read", "fields": ["id", "title"]}])).await;
    let pk = json!({"field": "id", "type": "integer", "schema": {"is_primary_key": true}});
    let attempts = [
        (Method::POST, "/collections", json!({"collection": "mine", "schema": {}, "fields": [pk]})),
        (Method::PATCH, "/collections/articles", json!({"meta": {"hidden": true}})),
        (Method::DELETE, "/collections/articles", json!(null)),
        (Method::POST, "/fields/articles", json!({"field": "owned", "type": "string"})),
        (Method::PATCH, "/fields/articles/title", json!({"type": "integer"})),
        (Method::DELETE, "/fields/articles/body", json!(null)),
        (Method::POST, "/relations", json!({"collection": "comments", "field": "author_name", "related_collection": "authors"})),
        (Method::DELETE, "/relations/comments/article", json!(null)),
    ];
    for who in [Some(token.as_str()), None] {
        for (method, path, body) in &attempts {
            let r = app.as_token(who, method.clone(), path, Some(body.clone())).await;
            assert_error(&r, 403, "FORBIDDEN", &format!("{method} {path} as {who:?}"));
        }
    }
    assert!(table_exists(app, "articles").await);
    assert!(!table_exists(app, "mine").await);
    assert_eq!(
        app.sql("SELECT count(*)::text FROM information_schema.columns WHERE table_name = 'articles' AND column_name IN ('body', 'owned')").await,
        json!(1)
    );
    assert_eq!(
        app.sql("SELECT to_json(data_type)::text FROM information_schema.columns WHERE table_name = 'articles' AND column_name = 'title'").await,
        json!("text")
    );

    // Reads: only the collections, fields and relations the role may read.
    let r = app.as_token(Some(&token), Method::GET, "/collections", None).await;
    let names: Vec<&str> =
        r.body["data"].as_array().expect("collections").iter().filter_map(|c| c["collection"].as_str()).filter(|c| !c.starts_with("directus_")).collect();
    assert_eq!(names, ["articles"], "{}", r.body);
    let r = app.as_token(Some(&token), Method::GET, "/fields/articles", None).await;
    let names: Vec<&str> = r.body["data"].as_array().expect("fields").iter().filter_map(|f| f["field"].as_str()).collect();
    assert_eq!(names, ["id", "title"], "{}", r.body);
    for path in ["/fields/authors", "/fields/articles/body", "/collections/authors", "/relations/comments/article"] {
        assert_error(&app.as_token(Some(&token), Method::GET, path, None).await, 403, "FORBIDDEN", path);
    }
    let r = app.as_token(Some(&token), Method::GET, "/relations", None).await;
    let user_relations: Vec<&Value> =
        r.body["data"].as_array().expect("relations").iter().filter(|f| !f["collection"].as_str().unwrap_or_default().starts_with("directus_")).collect();
    assert!(user_relations.is_empty(), "articles' readable fields take part in no relation: {}", r.body);
    // A relation into a collection the role may not read stays hidden, and so do alias fields
    // known only by their metadata (no grant names them).
    let (comment_reader, _, _) = role(app, "CommentReaders", json!([{"collection": "comments", "action": "read", "fields": ["id", "article"]}])).await;
    assert_eq!(app.as_token(Some(&comment_reader), Method::GET, "/fields/comments/article", None).await.status, 200);
    let r = app.as_token(Some(&comment_reader), Method::GET, "/relations/comments/article", None).await;
    assert_error(&r, 403, "FORBIDDEN", "a relation into articles, which the role may not read");
    ok(app, Method::POST, "/fields/articles", json!({"field": "peek_alias", "type": "alias", "meta": {"special": ["o2m"]}})).await;
    assert_eq!(read(app, "/fields/articles/peek_alias").await["type"], "alias");
    assert_error(&app.as_token(Some(&token), Method::GET, "/fields/articles/peek_alias", None).await, 403, "FORBIDDEN", "a metadata-only alias");
    let r = app.admin(Method::DELETE, "/fields/articles/peek_alias", json!(null)).await;
    assert_eq!(r.status, 204, "{}", r.body);

    let r = app.as_token(Some(&token), Method::GET, "/fields", None).await;
    let user_fields: Vec<&Value> =
        r.body["data"].as_array().expect("fields").iter().filter(|f| !f["collection"].as_str().unwrap_or_default().starts_with("directus_")).collect();
    assert_eq!(user_fields.len(), 2, "{}", r.body);
    assert!(user_fields.iter().all(|f| f["collection"] == "articles"), "{}", r.body);
}
