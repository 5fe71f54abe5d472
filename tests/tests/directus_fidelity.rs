//! Directus fidelity (docs/directus-compatibility.md): where a Directus client's calls answered differently from Directus 11.3.5 on the
//! same data, each fixed difference end to end (raw JSON in URLs, function result keys,
//! timestamp formats, aggregate value types, nested objects with new keys, lenient write
//! payloads, dynamic variable paths, `page=0`, `backlink`, singleton defaults, 204 for writes
//! the caller cannot read, MAX_RELATIONAL_DEPTH).

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, role};
use e2e_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// This file's environment: the demo data (written to by the tests here), relational depth
/// limited to 3 so the setting can be seen.
fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        start(Spec {
            dataset: Dataset::Demo,
            name: Some("directus_fidelity".into()),
            core_env: vec![("MAX_RELATIONAL_DEPTH".into(), "3".into())],
            ..Spec::default()
        })
        .expect("directus_fidelity environment")
    })
}

/// Sends raw bytes to `base` (an `http://host:port` URL) and reads until the server closes.
async fn raw_http(base: &str, request: &str) -> String {
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut out)).await.expect("server answered").expect("read");
    String::from_utf8_lossy(&out).into_owned()
}

/// Finding 1: a URL with raw JSON (`curl -g '...?filter={"id":{"_eq":3}}'`) is answered; the
/// bodies of requests on the same connection are untouched.
#[tokio::test]
async fn raw_json_in_the_url_is_answered() {
    let app = env();
    let auth = format!("Authorization: Bearer {ADMIN_TOKEN}\r\nHost: x\r\n");
    let search = r#"{"query":{"filter":{"title":{"_contains":"\"<>"}},"fields":["id"]}}"#;
    let request = format!(
        "SEARCH /items/articles HTTP/1.1\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{search}\
         GET /items/articles?filter={{\"id\":{{\"_eq\":3}}}}&fields=id,title HTTP/1.1\r\n{auth}\r\n\
         GET /items/articles?filter[title][_eq]=\"<`>\"&fields=id HTTP/1.1\r\n{auth}Connection: close\r\n\r\n",
        search.len()
    );
    let text = raw_http(&app.rest_url, &request).await;
    let statuses: Vec<&str> = text.match_indices("HTTP/1.1 ").map(|(i, _)| &text[i + 9..i + 12]).collect();
    assert_eq!(statuses, ["200", "200", "200"], "{text}");
    assert!(text.contains(r#"{"data":[]}"#), "the SEARCH body's quotes were kept (no title matches): {text}");
    let title = app.sql("SELECT to_json(title)::text FROM articles WHERE id = 3").await;
    assert!(text.contains(&format!(r#"{{"data":[{{"id":3,"title":{title}}}]}}"#)), "{text}");
    // GraphQL over GET on its own port, raw quotes in the document.
    let text = raw_http(&app.graphql_url, &format!("GET /graphql?query={{articles_by_id(id:\"3\"){{id}}}} HTTP/1.1\r\n{auth}Connection: close\r\n\r\n")).await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains(r#"{"data":{"articles_by_id":{"id":"3"}}}"#) || text.contains(r#""articles_by_id":{"id":3}"#), "{text}");
}

/// Finding 2: function results are keyed `<field>_<function>`, in fields and groupBy.
#[tokio::test]
async fn function_results_use_directus_keys() {
    let app = env();
    let r = app.get("/items/articles/4?fields=id,year(published_at),count(tags),author.month(created_at)").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app
        .sql(
            "SELECT json_build_object('id', a.id, 'published_at_year', extract(year FROM a.published_at AT TIME ZONE 'UTC')::int8::text, \
         'tags_count', (SELECT count(*) FROM articles_tags t WHERE t.articles_id = a.id)::text, \
         'author', json_build_object('created_at_month', extract(month FROM au.created_at AT TIME ZONE 'UTC')::int8::text))::text \
         FROM articles a JOIN authors au ON au.id = a.author WHERE a.id = 4",
        )
        .await;
    assert_eq!(r.body["data"], truth);
    let r = app
        .get("/items/articles?aggregate[count]=*&groupBy[]=year(published_at)&filter[published_at][_nnull]=true&filter[id][_lte]=2000&sort=year(published_at)")
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app.sql("SELECT json_agg(json_build_object('published_at_year', y::text, 'count', c::text) ORDER BY y)::text FROM \
         (SELECT extract(year FROM published_at AT TIME ZONE 'UTC')::int8 y, count(*) c FROM articles WHERE published_at IS NOT NULL AND id <= 2000 GROUP BY 1) x",
    )
    .await;
    assert_eq!(r.body["data"], truth);
    // GraphQL reads the same keys behind `<f>_func` and `group`.
    let g = app.graphql("/graphql", Some(ADMIN_TOKEN), "{ articles_by_id(id: 4) { published_at_func { year } } articles_aggregated(groupBy: [\"year(published_at)\"], filter: {published_at: {_nnull: true}, id: {_lte: 2000}}, sort: [\"year(published_at)\"]) { group countAll } }", json!({})).await;
    let d = gql_data(&g);
    assert_eq!(d["articles_by_id"]["published_at_func"]["year"], truth_year(app).await);
    assert_eq!(d["articles_aggregated"][0]["group"], json!({"published_at_year": truth[0]["published_at_year"]}), "as Directus's group");
    assert_eq!(d["articles_aggregated"][0]["countAll"].as_i64().map(|n| n.to_string()), truth[0]["count"].as_str().map(str::to_owned));
}

async fn truth_year(app: &TestApp) -> Value {
    app.sql("SELECT to_json(extract(year FROM published_at AT TIME ZONE 'UTC')::int8)::text FROM articles WHERE id = 4").await
}

/// Finding 3: `timestamptz` as `2024-03-14T10:52:07.123Z`, `timestamp` without zone and
/// fraction, `date` and `time` as Postgres writes them, `bigint` and `numeric` as strings, at
/// every depth and in aggregates (expected values as Directus 11.3.5 answered them).
#[tokio::test]
async fn dates_and_times_are_formatted_as_directus() {
    let app = env();
    exec(
        app,
        "CREATE TABLE moments (id serial PRIMARY KEY, at timestamptz, local timestamp, day date, clock time, article int REFERENCES articles(id),
           big bigint, dec numeric(10,2), ratio float8);
         INSERT INTO moments (at, local, day, clock, article, big, dec, ratio) VALUES
           ('2024-03-14 10:52:07.123456+02', '2024-03-14 10:52:07.987654', '2024-03-14', '10:52:07', 1, 9007199254740993, 12.50, 1.5),
           (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    )
    .await;
    eventually("moments is served", || async { app.get("/items/moments?limit=1").await.status == 200 }).await;
    let r = app.get("/items/moments?sort=id&fields=at,local,day,clock,article.id,big,dec,ratio").await;
    assert_eq!(
        r.body["data"],
        json!([
            {"at": "2024-03-14T08:52:07.123Z", "local": "2024-03-14T10:52:07", "day": "2024-03-14", "clock": "10:52:07", "article": {"id": 1},
             "big": "9007199254740993", "dec": "12.50", "ratio": 1.5},
            {"at": null, "local": null, "day": null, "clock": null, "article": null, "big": null, "dec": null, "ratio": null}
        ])
    );
    // Nested: an author's created_at inside an article.
    let r = app.get("/items/articles/1?fields=author.created_at").await;
    let truth = app.sql("SELECT to_json(to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))::text FROM authors WHERE id = (SELECT author FROM articles WHERE id = 1)").await;
    assert_eq!(r.body["data"]["author"]["created_at"], truth);
    assert!(truth.as_str().is_some_and(|s| s.ends_with(".000Z")), "{truth}");
    // min/max of a timestamp in an aggregate.
    let r = app.get("/items/moments?aggregate[max]=at,local,day,clock,big,dec,ratio&aggregate[sum]=big,dec,ratio&aggregate[avg]=dec,ratio").await;
    assert_eq!(
        r.body["data"],
        json!([{
            "max": {"at": "2024-03-14T08:52:07.123Z", "local": "2024-03-14T10:52:07.987Z", "day": "2024-03-14T00:00:00.000Z", "clock": "10:52:07",
                    "big": "9007199254740993", "dec": "12.50", "ratio": 1.5},
            "sum": {"big": "9007199254740993", "dec": "12.50", "ratio": 1.5},
            "avg": {"dec": "12.5000000000000000", "ratio": 1.5}
        }]),
        "the values Directus 11.3.5 answered for the same rows"
    );
}

/// Finding 4: aggregate results of SQL type bigint or numeric are strings, as Directus on
/// Postgres answers them; int/float results stay numbers. GraphQL answers numbers.
#[tokio::test]
async fn aggregate_values_have_directus_types() {
    let app = env();
    let r = app.get("/items/articles?filter[id][_lte]=2000&aggregate[count]=*&aggregate[countDistinct]=author&aggregate[sum]=rating&aggregate[avg]=rating&aggregate[min]=rating&aggregate[max]=word_count").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app
        .sql(
            "SELECT json_build_array(json_build_object('count', count(*)::text, 'countDistinct', json_build_object('author', count(DISTINCT author)::text), \
         'sum', json_build_object('rating', sum(rating)::text), 'avg', json_build_object('rating', avg(rating)::text), \
         'min', json_build_object('rating', min(rating)), 'max', json_build_object('word_count', max(word_count))))::text FROM articles WHERE id <= 2000",
        )
        .await;
    assert_eq!(r.body["data"], truth);
    assert!(r.body["data"][0]["count"].is_string() && r.body["data"][0]["min"]["rating"].is_number(), "{}", r.body);
    let g = app
        .graphql(
            "/graphql",
            Some(ADMIN_TOKEN),
            "{ articles_aggregated(filter: {id: {_lte: 2000}}) { countAll count { id } avg { rating } sum { rating } } }",
            json!({}),
        )
        .await;
    let d = &gql_data(&g)["articles_aggregated"][0];
    assert_eq!(d["countAll"].as_i64().map(|n| n.to_string()), truth[0]["count"].as_str().map(str::to_owned), "{d}");
    assert!(d["count"]["id"].is_number() && d["avg"]["rating"].is_number() && d["sum"]["rating"].is_number(), "{d}");
}

/// Findings 5 and 6: a nested object carrying a key no item has yet is created with that key;
/// a key in an update's payload and keys that are no field are left out; a generated key may
/// be given on create.
#[tokio::test]
async fn write_payloads_are_as_lenient_as_directus() {
    let app = env();
    let r = app
        .admin(
            Method::POST,
            "/items/articles?fields=id,author.id,author.name",
            json!({"title": "new author inline", "author": {"id": 9001, "name": "Nine Thousand One"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["author"], json!({"id": 9001, "name": "Nine Thousand One"}));
    let r = app
        .admin(
            Method::POST,
            "/items/authors?fields=id,articles.id,articles.title",
            json!({"name": "With new articles", "articles": [{"id": 9100, "title": "brand new"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["articles"], json!([{"id": 9100, "title": "brand new"}]));
    // An existing key is still updated, not duplicated.
    let r = app.admin(Method::PATCH, "/items/articles/9100?fields=author.name", json!({"author": {"id": 9001, "name": "Renamed"}})).await;
    assert_eq!(r.body["data"]["author"]["name"], "Renamed", "{}", r.body);
    assert_eq!(app.sql("SELECT count(*)::text FROM authors WHERE id = 9001").await, json!(1));
    // Key in the PATCH body, unknown fields: left out.
    let r = app.admin(Method::PATCH, "/items/articles/9100?fields=id,title", json!({"id": 9100, "title": "patched", "no_such_field": 1})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"], json!({"id": 9100, "title": "patched"}));
    let r = app.admin(Method::PATCH, "/items/articles/9100?fields=id", json!({"id": 9100})).await;
    assert_eq!(r.status, 200, "only the key: nothing to change, still answered: {}", r.body);
    let r = app.admin(Method::PATCH, "/items/articles/999999", json!({"id": 999999})).await;
    assert_error(&r, 403, "FORBIDDEN", "a missing item stays forbidden");
    // A value for the serial key on create.
    let r = app.admin(Method::POST, "/items/tags?fields=id,name", json!({"id": 7777, "name": "given key"})).await;
    assert_eq!(r.body["data"], json!({"id": 7777, "name": "given key"}), "{}", r.body);
    // From a role's side: a key that is no field is still a field the role was not granted.
    let (token, _, _) = role(app, "TagNamers", json!([{"collection": "tags", "action": "create", "fields": ["name"]}])).await;
    let r = app.as_token(Some(&token), Method::POST, "/items/tags", Some(json!({"name": "named", "no_such_field": 1}))).await;
    assert_error(&r, 403, "FORBIDDEN", "an ungranted (unknown) key");
    assert_eq!(app.sql("SELECT count(*)::text FROM tags WHERE name = 'named'").await, json!(0));
}

/// Finding 7: `$CURRENT_USER.<path>`, `$CURRENT_ROLE.<path>`, `$CURRENT_ROLES` and `$NOW(...)`
/// inside lists, in permission rules and in query filters.
#[tokio::test]
async fn dynamic_variable_paths_work_in_rules_and_filters() {
    let app = env();
    let (token, user, role_id) = role(
        app,
        "published",
        json!([
            {"collection": "authors", "action": "read", "permissions": {"email": {"_eq": "$CURRENT_USER.email"}}, "fields": ["id", "name", "email"]},
            {"collection": "articles", "action": "read", "permissions": {"status": {"_eq": "$CURRENT_ROLE.name"}}, "fields": ["id", "status"]},
            {"collection": "directus_users", "action": "read", "permissions": {"role": {"_in": "$CURRENT_ROLES"}}, "fields": ["id", "role"]},
        ]),
    )
    .await;
    // The user takes the email of author 5: they read exactly that author.
    let email = app.sql("SELECT to_json(email)::text FROM authors WHERE id = 5").await;
    let r = app.admin(Method::PATCH, &format!("/users/{user}"), json!({"email": email})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    eventually("the user's new email applies", || async {
        let r = app.as_token(Some(&token), Method::GET, "/items/authors?fields=id", None).await;
        r.body["data"] == json!([{"id": 5}])
    })
    .await;
    // The role is named "published": its rule reads the role's name.
    let r = app.as_token(Some(&token), Method::GET, "/items/articles?aggregate[count]=*&filter[id][_lte]=2000", None).await;
    assert_eq!(r.body["data"][0]["count"], app.sql("SELECT to_json(count(*)::text)::text FROM articles WHERE status = 'published' AND id <= 2000").await);
    // Users of the caller's roles: only themselves here.
    let r = app.as_token(Some(&token), Method::GET, "/users?fields=id,role", None).await;
    assert_eq!(r.body["data"], json!([{"id": user, "role": role_id}]), "{}", r.body);
    // The public role has no user: a rule on its fields matches nothing, a filter too.
    let r = app.as_token(None, Method::GET, "/items/articles?filter[title][_eq]=$CURRENT_USER.email", None).await;
    assert_error(&r, 403, "FORBIDDEN", "public has no read on articles at all");
    let r = app.get("/items/authors?filter[email][_eq]=$CURRENT_USER.email&fields=id").await;
    assert_eq!(r.body["data"], json!([]), "the admin's email is no author's: {}", r.body);
    // $NOW inside _between and _in.
    let r = app.get("/items/articles?aggregate[count]=*&filter[id][_lte]=2000&filter[published_at][_between]=$NOW(-100 years),$NOW").await;
    assert_eq!(
        r.body["data"][0]["count"],
        app.sql("SELECT to_json(count(*)::text)::text FROM articles WHERE published_at <= now() AND id <= 2000").await,
        "{}",
        r.body
    );
    let r = app.get("/items/articles?aggregate[count]=*&filter[published_at][_nin]=$NOW").await;
    assert_eq!(r.status, 200, "{}", r.body);
    // A path through a to-many relation or an unknown field is refused clearly.
    let r = app.get("/items/authors?filter[name][_eq]=$CURRENT_USER.nope").await;
    assert_error(&r, 403, "FORBIDDEN", "unknown field in a variable path");
}

/// Finding 9: page=0, backlink, singleton defaults, 204 after a write the caller cannot read,
/// MAX_RELATIONAL_DEPTH.
#[tokio::test]
async fn smaller_differences_match_directus() {
    let app = env();
    // page=0 is accepted and changes nothing.
    let a = app.get("/items/articles?fields=id&limit=3&page=0").await;
    let b = app.get("/items/articles?fields=id&limit=3").await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body, b.body);
    // backlink=false leaves the way back out of `*`.
    let r = app.get("/items/articles/1?fields=id,author.*").await;
    assert!(r.body["data"]["author"].get("articles").is_some(), "{}", r.body);
    let r = app.get("/items/articles/1?fields=id,author.*&backlink=false").await;
    assert!(r.body["data"]["author"].get("articles").is_none() && r.body["data"]["author"].get("name").is_some(), "{}", r.body);
    let r = app.get("/items/authors/1?fields=id,articles.*&backlink=false&deep[articles][_limit]=1").await;
    assert!(r.body["data"]["articles"][0].get("author").is_none() && r.body["data"]["articles"][0].get("title").is_some(), "{}", r.body);
    // A singleton with no row: its defaults.
    exec(
        app,
        "CREATE TABLE site_options (id serial PRIMARY KEY, title text DEFAULT 'Untitled', per_page int NOT NULL DEFAULT 25, \
           ratio float8 DEFAULT 1.5, live boolean DEFAULT true, note text, created timestamptz DEFAULT now());
         INSERT INTO cdapi.collections (collection, singleton) VALUES ('site_options', true);",
    )
    .await;
    eventually("site_options is a singleton", || async { app.get("/items/site_options").await.body["data"].is_object() }).await;
    let r = app.get("/items/site_options").await;
    assert_eq!(r.body["data"], json!({"id": null, "title": "Untitled", "per_page": 25, "ratio": 1.5, "live": true, "created": "now()"}));
    let r = app.get("/items/site_options?fields=per_page,note").await;
    assert_eq!(r.body["data"], json!({"per_page": 25}));
    // A write whose result the caller may not read: 204, and the row is written.
    let (token, _, _) = role(app, "TagWriters", json!([{"collection": "tags", "action": "create", "fields": ["*"]}])).await;
    let r = app.as_token(Some(&token), Method::POST, "/items/tags", Some(json!({"name": "written blind"}))).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(app.sql("SELECT count(*)::text FROM tags WHERE name = 'written blind'").await, json!(1));
    // MAX_RELATIONAL_DEPTH=3 in this environment.
    let r = app.get("/items/articles?fields=author.articles.author.name&limit=1").await;
    assert_eq!(r.status, 200, "3 relations deep: {}", r.body);
    let r = app.get("/items/articles?fields=author.articles.author.articles.id&limit=1").await;
    assert_error(&r, 400, "INVALID_QUERY", "4 relations deep");
    let r = app.get("/items/articles?filter[author][articles][author][articles][id][_eq]=1").await;
    assert_error(&r, 400, "INVALID_QUERY", "a filter 4 relations deep");
}

/// Finding 8 (part): `<collection>_by_id` takes a `version` argument, as in Directus.
#[tokio::test]
async fn graphql_by_id_reads_a_version() {
    let app = env();
    let r = app.admin(Method::POST, "/versions", json!({"key": "gql-draft", "name": "GraphQL draft", "collection": "articles", "item": "7"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.body["data"]["id"].as_str().expect("version id").to_owned();
    let r = app.admin(Method::POST, &format!("/versions/{id}/save"), json!({"title": "Title in the draft"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let g = app
        .graphql(
            "/graphql",
            Some(ADMIN_TOKEN),
            "{ a: articles_by_id(id: 7, version: \"gql-draft\") { id title } b: articles_by_id(id: 7) { title } }",
            json!({}),
        )
        .await;
    let d = gql_data(&g);
    assert_eq!(d["a"]["title"], "Title in the draft");
    assert_eq!(d["b"]["title"], app.sql("SELECT to_json(title)::text FROM articles WHERE id = 7").await);
}

/// Finding 7, from the attacker's side: a path in a query's own filter is read through the
/// caller's permissions, so `$CURRENT_USER.org.secret` cannot serve as an oracle on a
/// collection they may not read; the same path in a permission rule (an admin's) may.
#[tokio::test]
async fn variable_paths_in_filters_read_only_what_the_caller_may() {
    let app = env();
    exec(
        app,
        "CREATE TABLE orgs (id serial PRIMARY KEY, secret text); INSERT INTO orgs (secret) VALUES ('s3cr3t-value');
         ALTER TABLE cdapi.users ADD COLUMN org int REFERENCES orgs (id);",
    )
    .await;
    eventually("users.org is served", || async { app.get("/users?fields=org.secret&limit=1").await.status == 200 }).await;
    let (token, user, _) = role(
        app,
        "OrgMembers",
        json!([{"collection": "articles", "action": "read", "fields": ["id", "title"], "permissions": {"title": {"_neq": "$CURRENT_USER.org.secret"}}}]),
    )
    .await;
    exec(app, &format!("UPDATE cdapi.users SET org = 1 WHERE id = '{user}'")).await;
    let r = app.as_token(Some(&token), Method::GET, "/items/articles?aggregate[count]=*&filter[id][_lte]=2000", None).await;
    assert_eq!(r.body["data"][0]["count"], "2000", "the rule reads the secret (no title equals it): {}", r.body);
    for probe in ["filter[title][_starts_with]=$CURRENT_USER.org.secret", "filter[title][_neq]=$CURRENT_USER.org.id"] {
        let r = app.as_token(Some(&token), Method::GET, &format!("/items/articles?fields=id&{probe}"), None).await;
        assert_error(&r, 403, "FORBIDDEN", probe);
    }
}

/// Finding 8: `/graphql/system` serves the system collections (`users`, `roles`,
/// `permissions`, `versions`, `users_me`, `update_users_me`, their mutations), and a relation
/// from a user collection to users nests on `/graphql` (both endpoints share one type graph).
#[tokio::test]
async fn graphql_serves_system_collections_and_relations_into_them() {
    let app = env();
    exec(
        app,
        "CREATE TABLE memos (id serial PRIMARY KEY, text text, owner uuid REFERENCES cdapi.users (id));
         INSERT INTO memos (text, owner) SELECT 'first memo', id FROM cdapi.users WHERE email = 'admin@example.com';",
    )
    .await;
    eventually("memos is served", || async { app.get("/items/memos?limit=1").await.status == 200 }).await;
    // edge-graphql rebuilds from the schema stream, a moment after the core.
    eventually("memos in GraphQL", || async {
        let g = app.graphql("/graphql", Some(ADMIN_TOKEN), "{ memos { text } }", json!({})).await;
        g.status == 200 && g.body.get("errors").is_none()
    })
    .await;
    let admin_email = app.sql("SELECT to_json(email)::text FROM cdapi.users WHERE email = 'admin@example.com'").await;
    // /graphql: the user collection, its owner nested (type directus_users), the role beyond.
    let g = app.graphql("/graphql", Some(ADMIN_TOKEN), "{ memos { text owner { email role { name } } } }", json!({})).await;
    assert_eq!(gql_data(&g)["memos"], json!([{"text": "first memo", "owner": {"email": admin_email, "role": {"name": "Administrator"}}}]));
    let g = app.graphql("/graphql", Some(ADMIN_TOKEN), "{ users { id } }", json!({})).await;
    assert_eq!(g.status, 400, "system collections have no root fields on /graphql: {}", g.body);
    // /graphql/system: the collections under their Directus names.
    let q = "{ users(filter: {email: {_eq: \"admin@example.com\"}}) { email role { name } } roles(filter: {name: {_eq: \"Administrator\"}}) { name } \
             users_aggregated { countAll } users_me { email } }";
    let g = app.graphql("/graphql/system", Some(ADMIN_TOKEN), q, json!({})).await;
    let d = gql_data(&g);
    assert_eq!(d["users"], json!([{"email": admin_email, "role": {"name": "Administrator"}}]));
    assert_eq!(d["roles"], json!([{"name": "Administrator"}]));
    assert_eq!(d["users_me"], json!({"email": admin_email}));
    let users = app.sql("SELECT count(*)::text FROM cdapi.users").await;
    assert_eq!(d["users_aggregated"][0]["countAll"], users);
    let g = app
        .graphql(
            "/graphql/system",
            Some(ADMIN_TOKEN),
            "mutation { update_users_me(data: {first_name: \"Ada\"}) { first_name } create_roles_item(data: {name: \"GraphQL role\"}) { name } }",
            json!({}),
        )
        .await;
    assert_eq!(gql_data(&g)["update_users_me"], json!({"first_name": "Ada"}));
    assert_eq!(gql_data(&g)["create_roles_item"], json!({"name": "GraphQL role"}));
    assert_eq!(app.sql("SELECT count(*)::text FROM cdapi.roles WHERE name = 'GraphQL role'").await, json!(1));
    // A role sees only what it may: its own user, no other user, no roles it was not granted.
    let (token, me, _) = role(app, "MemoReaders", json!([{"collection": "memos", "action": "read", "fields": ["*"]}])).await;
    let g = app.graphql("/graphql/system", Some(&token), "{ users { id } users_me { id } }", json!({})).await;
    assert_eq!(gql_data(&g)["users"], json!([{"id": me}]), "only their own user");
    assert_eq!(gql_data(&g)["users_me"], json!({"id": me}));
    let g = app.graphql("/graphql/system", Some(&token), "{ permissions { id } }", json!({})).await;
    assert_eq!(g.status, 400, "no permissions root field for a role that may not read them: {}", g.body);
    let g = app.graphql("/graphql/system", Some(&token), "mutation { update_users_me(data: {email: \"stolen@example.com\"}) { id } }", json!({})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "FORBIDDEN", "the built-in own-user rights cover names and password only: {}", g.body);
    // The memo's owner is a user the role may not read: it nests as null.
    let g = app.graphql("/graphql", Some(&token), "{ memos { text owner { email } } }", json!({})).await;
    assert_eq!(gql_data(&g)["memos"], json!([{"text": "first memo", "owner": null}]));
}

/// Found by Schemathesis: a write by query without `limit` writes the default limit (100), as
/// Directus 11.3.5 does (it wrote every matching row); a materialized view not yet populated is
/// not served (reading it was a 500) until it is refreshed.
#[tokio::test]
async fn writes_by_query_default_to_limit_100_and_empty_views_are_not_served() {
    let app = env();
    exec(app, "CREATE TABLE bulk (id serial PRIMARY KEY, v int); INSERT INTO bulk (v) SELECT 0 FROM generate_series(1, 150);").await;
    eventually("bulk is served", || async { app.get("/items/bulk?limit=1").await.status == 200 }).await;
    let r = app.admin(Method::PATCH, "/items/bulk", json!({"query": {"filter": {"v": {"_eq": 0}}}, "data": {"v": 1}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql("SELECT count(*)::text FROM bulk WHERE v = 1").await, json!(100));
    let r = app.admin(Method::DELETE, "/items/bulk", json!({"query": {"filter": {"v": {"_eq": 1}}, "limit": -1}})).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(app.sql("SELECT count(*)::text FROM bulk").await, json!(50));
    exec(app, "CREATE MATERIALIZED VIEW bulk_totals AS SELECT v, count(*) AS n FROM bulk GROUP BY v WITH NO DATA").await;
    // Another DDL after it, so the snapshot surely saw the view exist.
    exec(app, "CREATE TABLE after_view (id serial PRIMARY KEY)").await;
    eventually("after_view is served", || async { app.get("/items/after_view").await.status == 200 }).await;
    assert_error(&app.get("/items/bulk_totals").await, 403, "FORBIDDEN", "an unpopulated view is not served");
    exec(app, "REFRESH MATERIALIZED VIEW bulk_totals").await;
    eventually("bulk_totals is served once refreshed", || async { app.get("/items/bulk_totals").await.status == 200 }).await;
    assert_eq!(app.get("/items/bulk_totals?fields=v,n").await.body["data"], json!([{"v": 0, "n": "50"}]));
}
