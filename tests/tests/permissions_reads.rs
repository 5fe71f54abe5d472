//! Permissions on reads (docs/permissions.md): for the public role, a role with an item filter and a field
//! list, an ownership role and admin, every kind of read gives exactly the permitted data (the
//! ground truth is SQL with the permission written out) or FORBIDDEN. Fixture:
//! `e2e_tests::fixture`.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{self};
use e2e_tests::{ADMIN_TOKEN, Dataset, TestApp, app, assert_error};
use reqwest::Method;
use serde_json::{Value, json};

async fn get_as(app: &TestApp, token: Option<&str>, path: &str) -> Value {
    let r = app.as_token(token, Method::GET, path, None).await;
    assert_eq!(r.status, 200, "GET {path}: {}", r.body);
    r.body
}

async fn forbidden(app: &TestApp, token: Option<&str>, path: &str) {
    let r = app.as_token(token, Method::GET, path, None).await;
    assert_error(&r, 403, "FORBIDDEN", path);
}

#[tokio::test]
async fn public_reads_only_published_articles_and_allowed_fields() {
    let app = app(Dataset::DemoWrites);
    fixture::demo(app).await;
    let body = get_as(app, None, "/items/articles?fields=id,title&sort=id&limit=-1").await;
    let truth = app
        .sql("SELECT coalesce(json_agg(json_build_object('id', id, 'title', title) ORDER BY id), '[]')::text FROM articles WHERE status = 'published'")
        .await;
    assert_eq!(body["data"], truth);
    // `*` is the field list, in table order.
    let body = get_as(app, None, "/items/articles?limit=1&sort=id").await;
    let keys: Vec<&String> = body["data"][0].as_object().expect("item").keys().collect();
    assert_eq!(keys, ["id", "status", "title", "published_at", "rating", "author"]);
    // Fields outside the list cannot be read, filtered, sorted, searched on or aggregated.
    for path in [
        "/items/articles?fields=body",
        "/items/articles?filter[body][_contains]=a",
        "/items/articles?sort=word_count",
        "/items/articles?aggregate[sum]=word_count",
        "/items/articles?groupBy[]=slug&aggregate[count]=*",
        "/items/articles?fields=author.email",
        "/items/articles?filter[author][email][_nnull]=true",
        "/items/articles?sort=author.email",
        "/items/comments",
        "/items/tags",
        "/items/articles?fields=comments.body",
        "/users",
    ] {
        forbidden(app, None, path).await;
    }
    // A draft by id is the same as a missing item.
    let draft = app.sql("SELECT to_json(min(id))::text FROM articles WHERE status = 'draft'").await;
    forbidden(app, None, &format!("/items/articles/{draft}")).await;
    let published = app.sql("SELECT to_json(min(id))::text FROM articles WHERE status = 'published'").await;
    let one = get_as(app, None, &format!("/items/articles/{published}?fields=title,author.name")).await;
    let truth = app.sql(&format!("SELECT json_build_object('title', a.title, 'author', CASE WHEN a.author IS NULL THEN NULL ELSE json_build_object('name', au.name) END)::text FROM articles a LEFT JOIN authors au ON au.id = a.author WHERE a.id = {published}")).await;
    assert_eq!(one["data"], truth);
}

#[tokio::test]
async fn counts_aggregates_search_and_exports_stay_inside_the_filter() {
    let app = app(Dataset::DemoWrites);
    fixture::demo(app).await;
    let published = app.sql("SELECT count(*)::text FROM articles WHERE status = 'published'").await;
    let body = get_as(app, None, "/items/articles?meta=total_count,filter_count&filter[rating][_gte]=3&limit=1").await;
    assert_eq!(body["meta"]["total_count"], published, "total_count ignores the filter, not permissions");
    assert_eq!(body["meta"]["filter_count"], app.sql("SELECT count(*)::text FROM articles WHERE status = 'published' AND rating >= 3").await);
    let body = get_as(app, None, "/items/articles?aggregate[count]=*&groupBy[]=status").await;
    assert_eq!(body["data"], json!([{"count": published.to_string(), "status": "published"}]), "counts are strings, as Directus on Postgres");
    let body = get_as(app, None, "/items/articles?aggregate[sum]=rating&aggregate[countDistinct]=author").await;
    let truth = app.sql("SELECT json_build_object('sum', json_build_object('rating', sum(rating)::text), 'countDistinct', json_build_object('author', count(DISTINCT author)::text))::text FROM articles WHERE status = 'published'").await;
    assert_eq!(body["data"][0], truth);
    // search covers the readable text fields only (body is not one of them)
    let term = app.sql("SELECT to_json(substr(split_part(body, ' ', 1), 1, 8))::text FROM articles WHERE status = 'published' AND body ~ '^[A-Za-z]{3}' ORDER BY id LIMIT 1",
    )
    .await;
    let term = term.as_str().expect("term");
    let body = get_as(app, None, &format!("/items/articles?search={}&fields=id&limit=-1&sort=id", term.replace(' ', "%20"))).await;
    let truth = app.sql(&format!("SELECT coalesce(json_agg(json_build_object('id', id) ORDER BY id), '[]')::text FROM articles WHERE status = 'published' AND (title ILIKE '%{}%' OR status ILIKE '%{0}%')", term.replace('\'', "''"))).await;
    assert_eq!(body["data"], truth);
    // export: the same rows
    let r = app.as_token(None, Method::GET, "/items/articles?export=json&limit=-1&fields=id", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body.as_array().map(Vec::len), published.as_i64().map(|n| n as usize));
    // count(o2m) counts only readable related items; the public cannot read comments at all
    forbidden(app, None, "/items/articles?fields=count(comments)").await;
}

#[tokio::test]
async fn nested_relations_stop_at_what_the_role_can_read() {
    let app = app(Dataset::DemoWrites);
    let f = fixture::demo(app).await;
    let t = Some(f.reviewer.as_str());
    // From an allowed collection into a forbidden one: explicit paths are FORBIDDEN, `*.*`
    // leaves the relation as keys.
    forbidden(app, t, "/items/articles?fields=tags.tags_id.name").await;
    forbidden(app, t, "/items/articles?filter[tags][tags_id][name][_eq]=x").await;
    let body = get_as(app, t, "/items/articles?fields=*.*&limit=1&sort=id&filter[author][_nnull]=true").await;
    let item = &body["data"][0];
    assert!(item.get("tags").is_none(), "no O2M into the unreadable junction: {item}");
    assert_eq!(item["author"].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()), Some(vec!["id".to_owned(), "name".to_owned()]));
    assert!(item["comments"].is_array(), "comments are readable: {item}");
    // The nested list of an allowed relation is exact.
    let id = item["id"].clone();
    let nested = get_as(app, t, &format!("/items/articles/{id}?fields=comments.id&deep[comments][_sort]=id")).await;
    let truth = app.sql(&format!("SELECT coalesce(json_agg(json_build_object('id', id) ORDER BY id), '[]')::text FROM (SELECT id FROM comments WHERE article = {id} ORDER BY id LIMIT 100) c")).await;
    assert_eq!(nested["data"]["comments"], truth);
    // An M2O into a filtered collection reads null when the related item is outside the filter:
    // comments of drafts point at articles the reviewer cannot see.
    let draft_comment = app.sql("SELECT to_json(min(c.id))::text FROM comments c JOIN articles a ON a.id = c.article WHERE a.status = 'draft'").await;
    let c = get_as(app, t, &format!("/items/comments/{draft_comment}?fields=id,article,article.title")).await;
    assert_eq!(c["data"]["article"], Value::Null, "{}", c["data"]);
    // Sorting through an M2O cannot order by hidden rows either: same order as the SQL.
    let sorted = get_as(app, t, "/items/comments?fields=id&sort=article.title,id&limit=5").await;
    let truth = app.sql("SELECT json_agg(json_build_object('id', id))::text FROM (SELECT c.id FROM comments c LEFT JOIN articles a ON a.id = c.article AND a.status = 'published' ORDER BY a.title, c.id LIMIT 5) x").await;
    assert_eq!(sorted["data"], truth);
}

#[tokio::test]
async fn ownership_rows_and_users_both_ways() {
    let app = app(Dataset::DemoWrites);
    let f = fixture::demo(app).await;
    let (owner, owner_id) = (&f.owner.0, &f.owner.1);
    let other = &f.other_owner.0;
    for (token, title) in [(owner, "mine-1"), (owner, "mine-2"), (other, "theirs")] {
        let r = app.as_token(Some(token), Method::POST, "/items/notes", Some(json!({"title": title}))).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let mine = get_as(app, Some(owner), "/items/notes?fields=title,owner&sort=id").await;
    assert_eq!(mine["data"], json!([{"title": "mine-1", "owner": owner_id}, {"title": "mine-2", "owner": owner_id}]));
    let theirs = app.sql("SELECT to_json(id)::text FROM notes WHERE title = 'theirs'").await;
    forbidden(app, Some(owner), &format!("/items/notes/{theirs}")).await;
    // The relation to users works both ways, within the minimal grant (own user only).
    let body = get_as(app, Some(owner), "/items/notes?fields=title,owner.email&limit=1&sort=id").await;
    assert_eq!(body["data"][0]["owner"]["email"], "owner1@example.com");
    let me = get_as(app, Some(owner), "/users/me?fields=email,notes.title&deep[notes][_sort]=id").await;
    assert_eq!(me["data"], json!({"email": "owner1@example.com", "notes": [{"title": "mine-1"}, {"title": "mine-2"}]}));
    let users = get_as(app, Some(owner), "/users?fields=email").await;
    assert_eq!(users["data"], json!([{"email": "owner1@example.com"}]), "only their own user");
    // Admin reads every note, and the users' secrets are never part of a user.
    let all = get_as(app, Some(ADMIN_TOKEN), "/items/notes?aggregate[count]=*").await;
    assert_eq!(all["data"][0]["count"], "3");
    let users = get_as(app, Some(ADMIN_TOKEN), "/users?limit=-1").await;
    for u in users["data"].as_array().expect("users") {
        for secret in ["password_hash", "token_hash", "tfa_secret", "password", "token", "admin_access"] {
            assert!(u.get(secret).is_none(), "{secret} in {u}");
        }
    }
    forbidden(app, Some(ADMIN_TOKEN), "/users?filter[password_hash][_nnull]=true").await;
    forbidden(app, Some(ADMIN_TOKEN), "/items/directus_users").await;
    let roles = get_as(app, Some(owner), "/roles?fields=name").await;
    assert_eq!(roles["data"], json!([{"name": "Owners"}]), "only their own role");
}

#[tokio::test]
async fn versions_are_read_with_the_callers_permissions() {
    let app = app(Dataset::DemoWrites);
    fixture::demo(app).await;
    let published = app.sql("SELECT to_json(max(id))::text FROM articles WHERE status = 'published'").await;
    let draft = app.sql("SELECT to_json(max(id))::text FROM articles WHERE status = 'draft'").await;
    for item in [&published, &draft] {
        let r = app.admin(Method::POST, "/versions", json!({"key": "edit", "collection": "articles", "item": item.to_string()})).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let id = r.body["data"]["id"].as_str().expect("version id").to_owned();
        let r = app.admin(Method::POST, &format!("/versions/{id}/save"), json!({"title": "Versioned title", "body": "Versioned body"})).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // The version records themselves are not the public's, and so neither is what they hold.
    forbidden(app, None, "/versions").await;
    forbidden(app, None, &format!("/items/articles/{published}?version=edit&fields=id,title")).await;
    // Given read access to versions, the public sees only those of items it can read, and in
    // their deltas only the fields it can read.
    let r = app
        .admin(Method::POST, "/permissions", json!({"policy": fixture::PUBLIC_POLICY, "collection": "directus_versions", "action": "read", "fields": ["*"]}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let path = "/versions?filter[collection][_eq]=articles";
    fixture::eventually("the versions grant reaches the core", || async { app.as_token(None, Method::GET, path, None).await.status == 200 }).await;
    let v = get_as(app, None, &format!("/items/articles/{published}?version=edit&fields=id,title")).await;
    assert_eq!(v["data"], json!({"id": published, "title": "Versioned title"}));
    forbidden(app, None, &format!("/items/articles/{published}?version=edit&fields=body")).await;
    forbidden(app, None, &format!("/items/articles/{draft}?version=edit")).await;
    let listed = get_as(app, None, path).await;
    let items: Vec<Value> = listed["data"].as_array().expect("versions").iter().map(|v| v["item"].clone()).collect();
    assert_eq!(items, vec![Value::String(published.to_string())], "{listed}");
    assert_eq!(listed["data"][0]["delta"], json!({"title": "Versioned title"}), "{listed}");
    let all = get_as(app, Some(ADMIN_TOKEN), path).await;
    let draft_version = all["data"].as_array().expect("versions").iter().find(|v| v["item"] == Value::String(draft.to_string())).expect("the draft's version")
        ["id"]
        .as_str()
        .expect("id")
        .to_owned();
    forbidden(app, None, &format!("/versions/{draft_version}")).await;
    assert_eq!(all["data"].as_array().map(Vec::len), Some(2), "the admin sees both: {all}");
    // Saving into a version keeps the fields the saver cannot read; versions of items they
    // cannot read cannot be changed; what a save adds must be an update the saver may make on
    // the item (docs/security.md "Permissions").
    let r = app
        .admin(Method::POST, "/permissions", json!({"policy": fixture::PUBLIC_POLICY, "collection": "directus_versions", "action": "update", "fields": ["*"]}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let published_version_id =
        all["data"].as_array().expect("versions").iter().find(|v| v["item"] == Value::String(published.to_string())).expect("version")["id"]
            .as_str()
            .expect("id")
            .to_owned();
    let r = app.as_token(None, Method::POST, &format!("/versions/{published_version_id}/save"), Some(json!({"title": "Public edit"}))).await;
    assert_eq!(r.status, 403, "no update grant on the item: {}", r.body);
    let r = app.admin(Method::POST, "/permissions", json!({"policy": fixture::PUBLIC_POLICY, "collection": "articles", "action": "update", "permissions": {"status": {"_eq": "published"}}, "fields": ["title"]})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let published_version = all["data"]
        .as_array()
        .expect("versions")
        .iter()
        .find(|v| v["item"] == Value::String(published.to_string()))
        .expect("the published item's version")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let save = format!("/versions/{published_version}/save");
    fixture::eventually("the versions update grant reaches the core", || async {
        app.as_token(None, Method::POST, &save, Some(json!({"title": "Public edit"}))).await.status == 200
    })
    .await;
    let stored = get_as(app, Some(ADMIN_TOKEN), &format!("/versions/{published_version}")).await;
    assert_eq!(stored["data"]["delta"], json!({"title": "Public edit", "body": "Versioned body"}), "{stored}");
    let r = app.as_token(None, Method::POST, &format!("/versions/{draft_version}/save"), Some(json!({"title": "x"}))).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let r = app.as_token(None, Method::PATCH, &format!("/versions/{draft_version}"), Some(json!({"name": "x"}))).await;
    assert_eq!(r.status, 403, "{}", r.body);
}

#[tokio::test]
async fn graphql_and_grpc_apply_the_same_permissions() {
    let app = app(Dataset::DemoWrites);
    fixture::demo(app).await;
    let r = app.graphql("/graphql", None, "{ articles(limit: -1, sort: [\"id\"]) { id } }", json!({})).await;
    let truth = app.sql("SELECT coalesce(json_agg(json_build_object('id', id::text) ORDER BY id), '[]')::text FROM articles WHERE status = 'published'").await;
    assert_eq!(e2e_tests::gql_data(&r)["articles"], truth, "{}", r.body);
    // The public role's schema is its read view: `body` is not a field of its `articles`.
    let r = app.graphql("/graphql", None, "{ articles(limit: 1) { body } }", json!({})).await;
    assert_eq!(r.body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION", "{}", r.body);
    assert!(r.body["errors"][0]["extensions"]["errors"][0]["message"].as_str().unwrap_or_default().contains("Unknown field \"body\""), "{}", r.body);
    // gRPC: the public role over ItemsService, and the system collection by its name.
    use cdapi_proto::v1::items_service_client::ItemsServiceClient;
    use cdapi_proto::v1::{Query, ReadRequest};
    let mut client = ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    let res = client
        .read(ReadRequest {
            collection: "articles".into(),
            key: None,
            query: Some(Query {
                aggregate: vec![cdapi_proto::v1::AggregateCall { function: cdapi_proto::v1::AggregateFunction::CountAll as i32, fields: vec![] }],
                ..Default::default()
            }),
        })
        .await
        .expect("public aggregate");
    let counted: Value = serde_json::from_slice(&res.get_ref().data).expect("json");
    assert_eq!(counted[0]["countAll"], app.sql("SELECT to_json(count(*)::text)::text FROM articles WHERE status = 'published'").await);
    let mut req = tonic::Request::new(ReadRequest {
        collection: "directus_users".into(),
        key: None,
        query: Some(Query { fields: e2e_tests::paths(&["email"]), sort: e2e_tests::sort_keys(&["email"]), limit: Some(1), ..Default::default() }),
    });
    req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
    let res = client.read(req).await.expect("admin reads users over gRPC");
    let users: Value = serde_json::from_slice(&res.get_ref().data).expect("json");
    assert_eq!(users, app.sql("SELECT json_agg(json_build_object('email', email))::text FROM (SELECT email FROM cdapi.users ORDER BY email LIMIT 1) u").await);
}

/// The SDL a caller sees on `/server/specs/graphql`.
async fn sdl_as(app: &TestApp, token: Option<&str>) -> String {
    let mut req = e2e_tests::http_client().build().expect("client").get(format!("{}/server/specs/graphql", app.graphql_url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.expect("specs");
    assert_eq!(res.status().as_u16(), 200);
    res.text().await.expect("sdl")
}

/// The fields of `type <name> {...}` in an SDL.
fn sdl_fields(sdl: &str, name: &str) -> Vec<String> {
    let Some(start) = sdl.find(&format!("type {name} {{")) else { return Vec::new() };
    sdl[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('}'))
        .filter_map(|l| l.trim().split(['(', ':']).next().map(str::to_owned))
        .filter(|f| !f.is_empty() && !f.starts_with('"') && !f.starts_with('#'))
        .collect()
}

#[tokio::test]
async fn each_role_sees_a_graphql_schema_of_what_it_may_read() {
    let app = app(Dataset::DemoWrites);
    let f = fixture::demo(app).await;
    let public = sdl_as(app, None).await;
    let query = sdl_fields(&public, "Query");
    assert!(query.contains(&"articles".to_owned()) && query.contains(&"authors".to_owned()), "{query:?}");
    assert!(!query.iter().any(|q| q.starts_with("comments") || q.starts_with("notes")), "public sees no comments or notes: {query:?}");
    let articles = sdl_fields(&public, "articles");
    assert!(articles.contains(&"title".to_owned()) && !articles.contains(&"body".to_owned()), "public articles fields: {articles:?}");
    assert_eq!(sdl_fields(&public, "authors").iter().filter(|f| !f.ends_with("_func")).cloned().collect::<Vec<_>>(), ["id", "name"]);
    // Reviewers read comments and every article field; owners only their notes.
    let reviewer = sdl_as(app, Some(&f.reviewer)).await;
    assert!(sdl_fields(&reviewer, "Query").contains(&"comments".to_owned()));
    assert!(sdl_fields(&reviewer, "articles").contains(&"body".to_owned()));
    let owner = sdl_as(app, Some(&f.owner.0)).await;
    let owner_query = sdl_fields(&owner, "Query");
    assert!(owner_query.contains(&"notes".to_owned()) && !owner_query.contains(&"articles".to_owned()), "{owner_query:?}");
    // The admin sees everything; introspection agrees with the SDL.
    let admin = sdl_as(app, Some(ADMIN_TOKEN)).await;
    assert!(sdl_fields(&admin, "Query").contains(&"comments".to_owned()));
    let r = app.graphql("/graphql", None, "{ __schema { queryType { fields { name } } } }", json!({})).await;
    let names: Vec<String> = e2e_tests::gql_data(&r)["__schema"]["queryType"]["fields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["name"].as_str().map(str::to_owned))
        .collect();
    assert!(names.contains(&"articles".to_owned()) && !names.iter().any(|n| n.starts_with("comments")), "{names:?}");
    // A bad token is refused before any schema is chosen.
    let r = app.graphql("/graphql", Some("not-a-token"), "{ __typename }", json!({})).await;
    let code = r.body["errors"][0]["extensions"]["code"].clone();
    assert!(code == "INVALID_TOKEN" || code == "INVALID_CREDENTIALS", "{}", r.body);
}

#[tokio::test]
async fn pagila_role_with_item_filter_and_field_list() {
    let app = app(Dataset::Pagila);
    let token = fixture::pagila(app).await;
    let t = Some(token.as_str());
    let body = get_as(app, t, "/items/film?fields=film_id,title,language_id.name&sort=-length,film_id&limit=5").await;
    let truth = app.sql("SELECT json_agg(json_build_object('film_id', f.film_id, 'title', f.title, 'language_id', json_build_object('name', l.name)) ORDER BY f.length DESC NULLS FIRST, f.film_id)::text FROM (SELECT * FROM film WHERE rating = 'PG' ORDER BY length DESC NULLS FIRST, film_id LIMIT 5) f JOIN language l ON l.language_id = f.language_id").await;
    assert_eq!(body["data"], truth);
    // The role's aggregate equals the admin's with the permission written as a filter.
    let body = get_as(app, t, "/items/film?aggregate[count]=*&aggregate[avg]=length&groupBy[]=rating").await;
    let admin = get_as(app, Some(ADMIN_TOKEN), "/items/film?aggregate[count]=*&aggregate[avg]=length&groupBy[]=rating&filter[rating][_eq]=PG").await;
    assert_eq!(body["data"], admin["data"]);
    assert_eq!(body["data"][0]["count"], app.sql("SELECT to_json(count(*)::text)::text FROM film WHERE rating = 'PG'").await);
    forbidden(app, t, "/items/film?fields=description").await;
    forbidden(app, t, "/items/film?fields=actors.actor_id.first_name").await;
    forbidden(app, t, "/items/actor").await;
    let r2 = app.sql("SELECT to_json(min(film_id))::text FROM film WHERE rating = 'R'").await;
    forbidden(app, t, &format!("/items/film/{r2}")).await;
}
