//! The schema snapshot follows the database without a restart: DDL and changes to the system
//! tables are announced with NOTIFY and picked up by the running core.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{Dataset, app};
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
