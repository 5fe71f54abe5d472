//! The schema snapshot follows the database without a restart: DDL and changes to the system
//! tables are announced with NOTIFY and picked up by the running core.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{Dataset, app};
use reqwest::Method;
use serde_json::json;
use std::time::{Duration, Instant};

async fn exec(app: &e2e_tests::TestApp, sql: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&app.database_url).await.expect("connect");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.expect("sql");
}

async fn eventually(app: &e2e_tests::TestApp, path: &str, ok: impl Fn(&e2e_tests::Reply) -> bool) -> e2e_tests::Reply {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let r = app.get(path).await;
        if ok(&r) || Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn new_tables_and_relation_settings_appear_without_restart() {
    let app = app(Dataset::DemoWrites);
    assert_eq!(app.get("/items/news").await.status, 403);
    exec(
        app,
        "CREATE TABLE news (id serial PRIMARY KEY, headline text, author int REFERENCES authors(id)); INSERT INTO news (headline, author) VALUES ('Fresh', 2)",
    )
    .await;
    let r = eventually(app, "/items/news?fields=headline,author.name", |r| r.status == 200).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"][0]["headline"], "Fresh");
    // the reverse O2M appeared on authors under its default name; rename it in the system table
    let r = app.get("/items/authors/2?fields=news").await;
    assert_eq!(r.status, 200, "{}", r.body);
    exec(app, "INSERT INTO cdapi.relations (many_collection, many_field, one_collection, one_field) VALUES ('news', 'author', 'authors', 'stories')").await;
    let r = eventually(app, "/items/authors/2?fields=stories", |r| r.status == 200).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["stories"].as_array().map(|a| a.len()), Some(1));
    exec(app, "DROP TABLE news").await;
    let r = eventually(app, "/items/news", |r| r.status == 403).await;
    assert_eq!(r.status, 403);
}

/// A relation row without a foreign key is a Many-to-One with the reverse alias its row names,
/// as Directus reads relations from its relation rows: items nest through it both ways, nested
/// writes go through it, and `/relations` shows it without a `schema`. A row whose column has
/// another type than the related key is left out: that column reads as a plain value. A table
/// keyed by two foreign keys stays a junction when such a row names another of its columns.
#[tokio::test]
async fn a_relation_row_without_a_foreign_key_is_a_relation() {
    let app = app(Dataset::DemoWrites);
    exec(
        app,
        "CREATE TABLE loose_owners (id serial PRIMARY KEY, name text); \
         CREATE TABLE loose_pets (id serial PRIMARY KEY, name text, owner integer, keeper text); \
         INSERT INTO loose_owners (id, name) VALUES (1, 'Ada'), (2, 'Bob'); \
         INSERT INTO loose_pets (name, owner, keeper) VALUES ('Rex', 1, '2'), ('Tom', 1, NULL), ('Stray', NULL, NULL); \
         SELECT setval(pg_get_serial_sequence('loose_owners', 'id'), 2); \
         CREATE TABLE loose_walks (owner int REFERENCES loose_owners, pet int REFERENCES loose_pets, guide int, PRIMARY KEY (owner, pet)); \
         INSERT INTO cdapi.relations (many_collection, many_field, one_collection, one_field) \
           VALUES ('loose_pets', 'owner', 'loose_owners', 'pets'), ('loose_pets', 'keeper', 'loose_owners', NULL), \
                  ('loose_walks', 'guide', 'loose_owners', NULL)",
    )
    .await;
    let r = eventually(app, "/items/loose_pets?fields=name,owner.name,keeper&sort=id", |r| r.status == 200).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let expected = json!([
        {"name": "Rex", "owner": {"name": "Ada"}, "keeper": "2"},
        {"name": "Tom", "owner": {"name": "Ada"}, "keeper": null},
        {"name": "Stray", "owner": null, "keeper": null}
    ]);
    assert_eq!(r.body["data"], expected);
    let r = app.get("/items/loose_owners/1?fields=name,pets.name").await;
    assert_eq!(r.body["data"], json!({"name": "Ada", "pets": [{"name": "Rex"}, {"name": "Tom"}]}), "{}", r.body);
    let r = app.get("/relations/loose_pets/owner").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let relation = &r.body["data"];
    assert_eq!((relation["related_collection"].clone(), relation["schema"].clone()), (json!("loose_owners"), json!(null)), "{relation}");
    assert_eq!(relation["meta"]["one_field"], "pets", "{relation}");
    // A table keyed by two foreign keys stays a junction when a row names a third column.
    let r = app.get("/relations/loose_walks/owner").await;
    assert_eq!(r.body["data"]["meta"]["junction_field"], "pet", "{}", r.body);
    let r = app.admin(Method::POST, "/items/loose_pets?fields=name,owner.name", json!({"name": "Nested", "owner": {"name": "Cy"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"], json!({"name": "Nested", "owner": {"name": "Cy"}}));
}

/// From the attacker's side, a relation kept only as a relation row is guarded as any M2O
/// (docs/security.md "Permissions"): a role nests, filters and writes through it only into
/// what its grants on the related collection allow — fields outside the grant are FORBIDDEN,
/// related rows outside its row rule read as null, the reverse alias needs read on the many
/// side, and a nested create of a related item needs create there.
#[tokio::test]
async fn a_relation_without_a_foreign_key_reaches_only_what_the_role_may_read() {
    let app = app(Dataset::DemoWrites);
    exec(
        app,
        "CREATE TABLE unbound_owners (id serial PRIMARY KEY, name text, secret text); \
         CREATE TABLE unbound_pets (id serial PRIMARY KEY, name text, owner integer); \
         INSERT INTO unbound_owners (id, name, secret) VALUES (1, 'Ada', 'ada-secret'), (2, 'Bob', 'bob-secret'); \
         SELECT setval(pg_get_serial_sequence('unbound_owners', 'id'), 2); \
         INSERT INTO unbound_pets (name, owner) VALUES ('Rex', 1), ('Tom', 2); \
         INSERT INTO cdapi.relations (many_collection, many_field, one_collection, one_field) VALUES ('unbound_pets', 'owner', 'unbound_owners', 'pets')",
    )
    .await;
    let r = eventually(app, "/items/unbound_owners/1?fields=pets.name", |r| r.status == 200).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (pet_reader, _, _) = e2e_tests::fixture::role(
        app,
        "UnboundPetReaders",
        json!([
            {"collection": "unbound_pets", "action": "read", "fields": ["*"]},
            {"collection": "unbound_pets", "action": "create", "fields": ["*"]},
            {"collection": "unbound_owners", "action": "read", "fields": ["id", "name"], "permissions": {"id": {"_eq": 1}}}
        ]),
    )
    .await;
    let as_reader = |path: &'static str| app.as_token(Some(&pet_reader), Method::GET, path, None);
    for path in
        ["/items/unbound_pets?fields=name,owner.secret", "/items/unbound_pets?filter[owner][secret][_eq]=ada-secret", "/items/unbound_pets?sort=owner.secret"]
    {
        e2e_tests::assert_error(&as_reader(path).await, 403, "FORBIDDEN", path);
    }
    let r = as_reader("/items/unbound_pets?fields=name,owner.name&sort=id").await;
    assert_eq!(r.body["data"], json!([{"name": "Rex", "owner": {"name": "Ada"}}, {"name": "Tom", "owner": null}]), "Bob is outside the row rule: {}", r.body);
    let r = as_reader("/items/unbound_pets?filter[owner][name][_eq]=Bob").await;
    assert_eq!(r.body["data"], json!([]), "a filter through the relation sees no row outside the rule: {}", r.body);
    let r = app.graphql("/graphql", Some(&pet_reader), "{ unbound_pets { owner { secret } } }", json!({})).await;
    assert!(r.body["errors"].is_array() && r.body["data"].is_null(), "GraphQL has no such field for the role: {}", r.body);
    // A nested create of an owner needs create on owners; nothing is written.
    let r = app.as_token(Some(&pet_reader), Method::POST, "/items/unbound_pets", Some(json!({"name": "Sly", "owner": {"name": "Forged"}}))).await;
    e2e_tests::assert_error(&r, 403, "FORBIDDEN", "a nested create without create on owners");
    let counts = "SELECT json_build_array((SELECT count(*) FROM unbound_owners), (SELECT count(*) FROM unbound_pets))::text";
    assert_eq!(app.sql(counts).await, json!([2, 2]));
    // The reverse alias needs read on the pets.
    let (owner_reader, _, _) =
        e2e_tests::fixture::role(app, "UnboundOwnerReaders", json!([{"collection": "unbound_owners", "action": "read", "fields": ["*"]}])).await;
    for path in ["/items/unbound_owners?fields=pets.name", "/items/unbound_owners?filter[pets][name][_eq]=Rex"] {
        e2e_tests::assert_error(&app.as_token(Some(&owner_reader), Method::GET, path, None).await, 403, "FORBIDDEN", path);
    }
    let r = app.as_token(Some(&owner_reader), Method::GET, "/items/unbound_owners/1", None).await;
    assert!(r.body["data"].get("pets").is_none(), "no alias into unreadable pets: {}", r.body);
}

/// A parent table and a child table with a foreign key to it.
const LOCKED_TABLES: &str = "CREATE TABLE locked_parents (id serial PRIMARY KEY, name text); \
     CREATE TABLE locked_children (id serial PRIMARY KEY, parent int REFERENCES locked_parents(id)); \
     INSERT INTO locked_parents (name) VALUES ('one')";

/// A schema change that deadlocks with running item traffic is run again, not refused: here a
/// transaction holds a row lock on the referenced table while the change (a new `on_delete`,
/// so the foreign key is dropped and added again) holds the referencing one, and then reads
/// the referencing table. PostgreSQL rolls the change back (it waited first, so it finds the
/// deadlock); the core runs it again once the transaction is done, and the client gets the
/// changed relation.
#[tokio::test]
async fn a_schema_change_that_deadlocks_with_item_traffic_is_run_again() {
    use sqlx::Connection;
    let app = app(Dataset::DemoWrites);
    exec(app, LOCKED_TABLES).await;
    let r = eventually(app, "/relations/locked_children/parent", |r| r.status == 200).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut traffic = sqlx::PgConnection::connect(&app.database_url).await.expect("connect");
    sqlx::raw_sql("BEGIN; UPDATE locked_parents SET name = 'held' WHERE id = 1").execute(&mut traffic).await.expect("hold a row");
    let change = tokio::spawn(async move { app.admin(Method::PATCH, "/relations/locked_children/parent", json!({"schema": {"on_delete": "CASCADE"}})).await });
    // The change now holds `locked_children` and waits for `locked_parents`.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let read = sqlx::raw_sql("SELECT count(*) FROM locked_children").execute(&mut traffic).await;
    assert!(read.is_ok(), "the change, not the traffic, is rolled back for the deadlock: {read:?}");
    sqlx::raw_sql("COMMIT").execute(&mut traffic).await.expect("commit");
    let r = change.await.expect("the change's task");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["schema"]["on_delete"], "CASCADE", "{}", r.body);
    let rows = app.sql("SELECT count(*)::text FROM cdapi.activity WHERE collection = 'directus_relations' AND item = 'locked_children.parent'").await;
    assert_eq!(rows, json!(1), "recorded once");
}
