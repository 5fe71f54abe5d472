//! Activity and revisions (docs/history.md "Activity and revisions"): every item write is recorded in
//! `directus_activity` and `directus_revisions` in its own transaction, on every path, per the
//! collection's `meta.accountability`; both are read-only and read under the caller's rights,
//! and a revision of an item the caller cannot read is not readable through them.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{id_of, item_history as history, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, app, assert_error, send};
use reqwest::Method;
use serde_json::{Value, json};

/// A user creating, updating and deleting an article leaves one activity row each, with who,
/// from where and with which client; creates and updates carry a revision holding the whole
/// item and the fields the write set.
#[tokio::test]
async fn create_update_and_delete_are_recorded_with_who_and_what() {
    let app = app(Dataset::DemoWrites);
    let (token, user, _) = role(
        app,
        "Recorders32",
        json!([
            {"collection": "articles", "action": "create", "fields": ["*"]},
            {"collection": "articles", "action": "read", "fields": ["*"]},
            {"collection": "articles", "action": "update", "fields": ["*"]},
            {"collection": "articles", "action": "delete", "fields": ["*"]}
        ]),
    )
    .await;
    let headers = [("user-agent", "recorder-test/1.0"), ("origin", "https://editor.example.com")];
    let r = send(app, Method::POST, "/items/articles", Some(&token), &headers, Some(("application/json", json!({"title": "Recorded 32"}).to_string()))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = id_of(&r.body["data"]);
    let r =
        send(app, Method::PATCH, &format!("/items/articles/{id}"), Some(&token), &headers, Some(("application/json", json!({"rating": 4}).to_string()))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rows = history(app, "articles", &id).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (row, action) in rows.iter().zip(["create", "update"]) {
        assert_eq!(row["action"], action);
        assert_eq!(row["user"], json!(user));
        assert_eq!(row["user_agent"], "recorder-test/1.0");
        assert_eq!(row["origin"], "https://editor.example.com");
        assert!(row["ip"].as_str().is_some_and(|ip| !ip.is_empty()), "{row}");
        assert!(row["timestamp"].is_string(), "{row}");
        assert_eq!(row["revisions"].as_array().map(Vec::len), Some(1), "{row}");
    }
    let created = &rows[0]["revisions"][0];
    // As Directus: a create's data is what it set; an update's, the whole item after it.
    assert_eq!((created["data"].clone(), created["delta"].clone()), (json!({"title": "Recorded 32"}), json!({"title": "Recorded 32"})));
    let updated = &rows[1]["revisions"][0];
    assert_eq!(updated["data"]["title"], "Recorded 32");
    assert_eq!(updated["data"]["status"], "draft", "the whole item: {updated}");
    assert_eq!(updated["data"]["rating"], 4);
    assert_eq!(updated["delta"], json!({"rating": 4}));
    let r = app.as_token(Some(&token), Method::DELETE, &format!("/items/articles/{id}"), None).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let rows = history(app, "articles", &id).await;
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[2]["action"], "delete");
    assert_eq!(rows[2]["revisions"], json!([]), "a delete has no revision");
}

/// Batches, writes by query, nested relational writes and GraphQL mutations are recorded per
/// item touched; a write that fails leaves no record at all.
#[tokio::test]
async fn every_write_path_records_each_item_and_a_failed_write_records_nothing() {
    let app = app(Dataset::DemoWrites);
    let r = app.admin(Method::POST, "/items/tags", json!([{"name": "batch-32-a"}, {"name": "batch-32-b"}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tags: Vec<String> = r.body["data"].as_array().expect("tags").iter().map(id_of).collect();
    for t in &tags {
        assert_eq!(history(app, "tags", t).await.len(), 1, "batch create of tag {t}");
    }
    let r = app.admin(Method::PATCH, "/items/tags", json!({"query": {"filter": {"name": {"_starts_with": "batch-32-"}}}, "data": {"name": null}})).await;
    assert_eq!(r.status, 400, "a NOT NULL violation fails the whole write: {}", r.body);
    for t in &tags {
        assert_eq!(history(app, "tags", t).await.len(), 1, "the failed update of tag {t} left a record");
    }
    // Nested: an article with a new author and two tags through the junction.
    let r = app.admin(Method::POST,
        "/items/articles",
        json!({"title": "Nested 32", "author": {"name": "Author 32"}, "tags": [{"tags_id": tags[0].parse::<i64>().expect("key")}, {"tags_id": {"name": "nested-32"}}]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let article = id_of(&r.body["data"]);
    let r = app.admin(Method::GET, &format!("/items/articles/{article}?fields=author,tags.id,tags.tags_id"), Value::Null).await;
    let author = r.body["data"]["author"].to_string();
    let junctions: Vec<String> = r.body["data"]["tags"].as_array().expect("tags").iter().map(id_of).collect();
    assert_eq!(history(app, "articles", &article).await.len(), 1);
    assert_eq!(history(app, "authors", &author).await.len(), 1, "the nested author");
    for j in &junctions {
        let rows = history(app, "articles_tags", j).await;
        assert_eq!(rows.len(), 1, "junction row {j}");
        assert_eq!(rows[0]["revisions"][0]["data"]["articles_id"].to_string(), article);
    }
    // As Directus: every nested item's revision has the top-level item's as `parent`.
    let revision = |collection: &str, item: &str| {
        let path = format!("/revisions?filter[collection][_eq]={collection}&filter[item][_eq]={item}&fields=id,parent");
        async move { app.admin(Method::GET, &path, Value::Null).await.body["data"][0].clone() }
    };
    let top = revision("articles", &article).await;
    assert_eq!(top["parent"], Value::Null, "{top}");
    let nested_tag = r.body["data"]["tags"][1]["tags_id"].to_string();
    for (collection, item) in
        [("authors", author.as_str()), ("articles_tags", junctions[0].as_str()), ("articles_tags", junctions[1].as_str()), ("tags", nested_tag.as_str())]
    {
        let v = revision(collection, item).await;
        assert_eq!(v["parent"], top["id"], "{collection} {item}: {v}");
    }
    // GraphQL.
    let q = format!("mutation {{ update_tags_item(id: {}, data: {{name: \"graphql-32\"}}) {{ id }} }}", tags[1]);
    let g = app.graphql("/graphql", Some(ADMIN_TOKEN), &q, json!({})).await;
    assert_eq!(g.body["data"]["update_tags_item"]["id"], json!(tags[1]), "{}", g.body);
    let rows = history(app, "tags", &tags[1]).await;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["revisions"][0]["delta"], json!({"name": "graphql-32"}));
}

/// A batch of creates records each item with what it set: items that set the same fields (in
/// any order, recorded by the INSERT itself) and items that do not (recorded after it).
#[tokio::test]
async fn a_batch_records_each_item_with_the_fields_it_set() {
    let app = app(Dataset::DemoWrites);
    let like = json!([{"title": "Like 32 a", "rating": 1}, {"rating": 2, "title": "Like 32 b"}]);
    let unlike = json!([{"title": "Unlike 32 a"}, {"title": "Unlike 32 b", "rating": 5}, {"status": "published", "title": "Unlike 32 c"}]);
    for batch in [like, unlike] {
        let r = app.admin(Method::POST, "/items/articles", batch.clone()).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let created = r.body["data"].as_array().expect("created articles");
        assert_eq!(created.len(), batch.as_array().map(Vec::len).unwrap_or_default());
        for (item, sent) in created.iter().zip(batch.as_array().expect("batch")) {
            let rows = history(app, "articles", &id_of(item)).await;
            assert_eq!(rows.len(), 1, "{rows:?}");
            assert_eq!((rows[0]["action"].clone(), rows[0]["revisions"][0]["delta"].clone()), (json!("create"), sent.clone()), "{rows:?}");
            assert_eq!(rows[0]["revisions"][0]["data"], *sent);
        }
    }
}

/// An update by query records each item it changed with its whole state after the update and
/// what it set, and a delete by query each item it removed.
#[tokio::test]
async fn writes_by_query_record_each_item_whole() {
    let app = app(Dataset::DemoWrites);
    let r =
        app.admin(Method::POST, "/items/articles", json!([{"title": "By query 32 a", "rating": 1}, {"title": "By query 32 b", "status": "published"}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let ids: Vec<String> = r.body["data"].as_array().expect("articles").iter().map(id_of).collect();
    let selector = json!({"filter": {"title": {"_starts_with": "By query 32 "}}, "sort": ["id"]});
    let r = app.admin(Method::PATCH, "/items/articles", json!({"query": selector, "data": {"rating": 4}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    for (id, (title, status)) in ids.iter().zip([("By query 32 a", "draft"), ("By query 32 b", "published")]) {
        let rows = history(app, "articles", id).await;
        assert_eq!(rows.iter().map(|r| r["action"].clone()).collect::<Vec<_>>(), [json!("create"), json!("update")], "{rows:?}");
        let revision = &rows[1]["revisions"][0];
        assert_eq!(revision["delta"], json!({"rating": 4}), "{revision}");
        let data = &revision["data"];
        assert_eq!(
            (data["id"].to_string(), data["title"].clone(), data["status"].clone(), data["rating"].clone()),
            (id.clone(), json!(title), json!(status), json!(4))
        );
        assert_eq!(data["tags"], json!([]), "the to-many keys: {data}");
    }
    let r = app.admin(Method::DELETE, "/items/articles", json!({"query": selector})).await;
    assert_eq!(r.status, 204, "{}", r.body);
    for id in &ids {
        let rows = history(app, "articles", id).await;
        assert_eq!((rows.len(), rows[2]["action"].clone(), rows[2]["revisions"].clone()), (3, json!("delete"), json!([])), "{rows:?}");
    }
}

/// An update that moves items of a to-many list of the items it writes (here a list of the same
/// collection: children re-parented) records each item's list as it is after the update.
#[tokio::test]
async fn an_update_moving_list_items_records_the_lists_after_it() {
    let app = app(Dataset::DemoWrites);
    e2e_tests::exec(
        app,
        "CREATE TABLE outline (id serial PRIMARY KEY, title text, parent int REFERENCES outline (id)); \
         INSERT INTO outline (id, title) VALUES (1, 'Root'), (2, 'Child'), (3, 'Other'); \
         INSERT INTO cdapi.relations (many_collection, many_field, one_collection, one_field) VALUES ('outline', 'parent', 'outline', 'children')",
    )
    .await;
    e2e_tests::fixture::eventually("outline is served", || async { app.get("/items/outline/1?fields=children").await.status == 200 }).await;
    let r = app.admin(Method::PATCH, "/items/outline", json!({"keys": [1, 2], "data": {"parent": 1}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rows = history(app, "outline", "1").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["revisions"][0]["data"]["children"], json!([1, 2]), "{rows:?}");
}

/// A nested update records the item after its to-many lists are written, as Directus reads it
/// after them: its revision lists the keys as they end up, its delta holds the lists it
/// changed, an update of the lists alone is recorded too, and the revisions of the items
/// written in the lists have the item's as `parent`.
#[tokio::test]
async fn a_nested_update_records_the_item_after_its_lists() {
    let app = app(Dataset::DemoWrites);
    let r = app.admin(Method::POST, "/items/articles", json!({"title": "Lists 32", "tags": [{"tags_id": 1}]})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let article = id_of(&r.body["data"]);
    let path = format!("/items/articles/{article}?fields=tags");
    let r = app.admin(Method::PATCH, &path, json!({"title": "Lists 32b", "tags": [{"tags_id": 2}, {"tags_id": 3}]})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let after = r.body["data"]["tags"].clone();
    let rows = history(app, "articles", &article).await;
    assert_eq!(rows.iter().map(|r| r["action"].clone()).collect::<Vec<_>>(), [json!("create"), json!("update")], "{rows:?}");
    let revision = &rows[1]["revisions"][0];
    assert_eq!(revision["data"]["tags"], after, "{revision}");
    assert_eq!((revision["delta"]["title"].clone(), revision["delta"]["tags"].clone()), (json!("Lists 32b"), after.clone()), "{revision}");
    // The lists alone.
    let r = app.admin(Method::PATCH, &path, json!({"tags": [{"tags_id": 1}]})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let after = r.body["data"]["tags"].clone();
    let rows = history(app, "articles", &article).await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[2]["revisions"][0]["delta"], json!({"tags": after}), "{rows:?}");
    let top = app
        .admin(Method::GET, &format!("/revisions?filter[collection][_eq]=articles&filter[item][_eq]={article}&sort=-id&limit=1&fields=id"), Value::Null)
        .await;
    let junction = after[0].to_string();
    let nested =
        app.admin(Method::GET, &format!("/revisions?filter[collection][_eq]=articles_tags&filter[item][_eq]={junction}&fields=parent"), Value::Null).await;
    assert_eq!(nested.body["data"][0]["parent"], top.body["data"][0]["id"], "{} {}", nested.body, top.body);
}

/// A table with PostgreSQL rules (here an audit rule, `DO ALSO`) cannot be written by a
/// statement that records itself (PostgreSQL refuses a data-modifying `WITH` on it): its
/// creates, updates and deletes still succeed, its rules still run, and each is recorded.
#[tokio::test]
async fn writes_to_a_table_with_rules_are_recorded() {
    let app = app(Dataset::DemoWrites);
    e2e_tests::exec(
        app,
        "CREATE TABLE ruled_notes (id serial PRIMARY KEY, body text); \
         CREATE TABLE ruled_notes_log (id serial PRIMARY KEY, what text, body text); \
         CREATE RULE ruled_notes_created AS ON INSERT TO ruled_notes DO ALSO INSERT INTO ruled_notes_log (what, body) VALUES ('create', NEW.body); \
         CREATE RULE ruled_notes_updated AS ON UPDATE TO ruled_notes DO ALSO INSERT INTO ruled_notes_log (what, body) VALUES ('update', NEW.body); \
         CREATE RULE ruled_notes_deleted AS ON DELETE TO ruled_notes DO ALSO INSERT INTO ruled_notes_log (what, body) VALUES ('delete', OLD.body)",
    )
    .await;
    e2e_tests::fixture::eventually("ruled_notes is served", || async { app.get("/items/ruled_notes?limit=1").await.status == 200 }).await;
    let r = app.admin(Method::POST, "/items/ruled_notes", json!({"body": "one"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let one = id_of(&r.body["data"]);
    let r = app.admin(Method::POST, "/items/ruled_notes", json!([{"body": "two"}, {"body": "three"}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::PATCH, &format!("/items/ruled_notes/{one}"), json!({"body": "one, edited"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::DELETE, &format!("/items/ruled_notes/{one}"), Value::Null).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let rows = history(app, "ruled_notes", &one).await;
    let actions: Vec<Value> = rows.iter().map(|r| r["action"].clone()).collect();
    assert_eq!(actions, [json!("create"), json!("update"), json!("delete")], "{rows:?}");
    assert_eq!(rows[1]["revisions"][0]["data"], json!({"id": one.parse::<i64>().expect("key"), "body": "one, edited"}), "{rows:?}");
    let r = app.admin(Method::GET, "/items/ruled_notes_log?sort=id&fields=what,body&limit=-1", Value::Null).await;
    let log: Vec<(Value, Value)> = r.body["data"].as_array().expect("log").iter().map(|l| (l["what"].clone(), l["body"].clone())).collect();
    let expected = [("create", "one"), ("create", "two"), ("create", "three"), ("update", "one, edited"), ("delete", "one, edited")];
    assert_eq!(log, expected.map(|(w, b)| (json!(w), json!(b))), "the rules ran once per item");
}

/// A table's own AFTER UPDATE trigger that rewrites the updated row (here it keeps a length
/// column): the update's revision holds the row as the trigger left it, as Directus reads the
/// item after its update — not as the UPDATE statement returned it.
#[tokio::test]
async fn an_update_revision_holds_what_after_triggers_wrote() {
    let app = app(Dataset::DemoWrites);
    e2e_tests::exec(
        app,
        "CREATE TABLE measured_notes (id serial PRIMARY KEY, body text, body_length int); \
         CREATE FUNCTION measure_note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           UPDATE measured_notes SET body_length = length(NEW.body) WHERE id = NEW.id AND body_length IS DISTINCT FROM length(NEW.body); \
           RETURN NULL; END $$; \
         CREATE TRIGGER measured AFTER INSERT OR UPDATE OF body ON measured_notes FOR EACH ROW EXECUTE FUNCTION measure_note()",
    )
    .await;
    e2e_tests::fixture::eventually("measured_notes is served with its trigger", || async { app.get("/items/measured_notes?limit=1").await.status == 200 })
        .await;
    let r = app.admin(Method::POST, "/items/measured_notes", json!([{"body": "one"}, {"body": "three"}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let keys: Vec<String> = r.body["data"].as_array().expect("created").iter().map(id_of).collect();
    let r = app.admin(Method::PATCH, &format!("/items/measured_notes/{}", keys[0]), json!({"body": "seventeen letters"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["body_length"], 17, "the reply reads the item after the write: {}", r.body);
    let r = app.admin(Method::PATCH, "/items/measured_notes", json!({"keys": keys, "data": {"body": "twelve chars"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    for (key, lengths) in keys.iter().zip([json!([17, 12]), json!([12])]) {
        let rows = history(app, "measured_notes", key).await;
        let updates: Vec<Value> = rows.iter().filter(|r| r["action"] == "update").map(|r| r["revisions"][0]["data"]["body_length"].clone()).collect();
        assert_eq!(Value::Array(updates), lengths, "{rows:?}");
    }
}

/// `meta.accountability`: `activity` records activity without revisions, `null` nothing.
#[tokio::test]
async fn accountability_activity_or_null_records_less() {
    let app = app(Dataset::DemoWrites);
    let r = app.admin(Method::PATCH, "/collections/headings", json!({"meta": {"accountability": "activity"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::POST, "/items/headings", json!({"title": "Accountability 32"})).await;
    let id = id_of(&r.body["data"]);
    let r = app.admin(Method::PATCH, &format!("/items/headings/{id}"), json!({"title": "Accountability 32, edited"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::DELETE, &format!("/items/headings/{id}"), Value::Null).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let rows = history(app, "headings", &id).await;
    let recorded: Vec<(Value, Value)> = rows.iter().map(|r| (r["action"].clone(), r["revisions"].clone())).collect();
    assert_eq!(recorded, [("create", json!([])), ("update", json!([])), ("delete", json!([]))].map(|(a, v)| (json!(a), v)), "{rows:?}");
    let r = app.admin(Method::PATCH, "/collections/text_blocks", json!({"meta": {"accountability": null}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::POST, "/items/text_blocks", json!({"body": "Not recorded 32"})).await;
    let id = id_of(&r.body["data"]);
    let r = app.admin(Method::PATCH, &format!("/items/text_blocks/{id}"), json!({"body": "Not recorded 32, edited"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::DELETE, &format!("/items/text_blocks/{id}"), Value::Null).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(history(app, "text_blocks", &id).await, Vec::<Value>::new());
}

/// From the attacker's side: activity and revisions cannot be written by anyone, a role reads
/// only the activity its rows grant (another user's is out of reach), and a revision of an
/// item outside the role's read rows is not readable through `/revisions` or GraphQL — nor are
/// the fields of it the role may not read.
#[tokio::test]
async fn activity_and_revisions_are_read_only_and_read_under_the_callers_rights() {
    let app = app(Dataset::DemoWrites);
    let published = json!({"status": {"_eq": "published"}});
    let (token, user, _) = role(
        app,
        "HistoryReaders32",
        json!([
            {"collection": "articles", "action": "read", "permissions": published, "fields": ["id", "title", "status"]},
            {"collection": "articles", "action": "update", "permissions": published, "fields": ["title"]},
            {"collection": "directus_activity", "action": "read", "permissions": {"user": {"_eq": "$CURRENT_USER"}}, "fields": ["*"]},
            {"collection": "directus_revisions", "action": "read", "fields": ["*"]}
        ]),
    )
    .await;
    let r = app.admin(Method::POST, "/items/articles", json!({"title": "Secret draft 32", "status": "draft", "rating": 5})).await;
    let draft = id_of(&r.body["data"]);
    let r = app.admin(Method::POST, "/items/articles", json!({"title": "Public 32", "status": "published", "rating": 3})).await;
    let public = id_of(&r.body["data"]);
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/items/articles/{public}"), Some(json!({"title": "Public 32, edited"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);

    // Only its own activity.
    let r = app.as_token(Some(&token), Method::GET, "/activity?limit=-1&fields=user,collection,item", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rows = r.body["data"].as_array().expect("rows");
    assert!(!rows.is_empty() && rows.iter().all(|a| a["user"] == json!(user)), "another user's activity: {rows:?}");
    // No revision of the draft; the published one's without `rating`.
    let path = "/revisions?filter[collection][_eq]=articles&limit=-1&fields=item,data,delta";
    let r = app.as_token(Some(&token), Method::GET, path, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let revisions = r.body["data"].as_array().expect("revisions");
    assert!(revisions.iter().all(|v| v["item"] != json!(draft)), "a revision of an unreadable item: {revisions:?}");
    let mine: Vec<&Value> = revisions.iter().filter(|v| v["item"] == json!(public)).collect();
    assert_eq!(mine.len(), 2, "{revisions:?}");
    assert!(mine.iter().all(|v| v["data"].get("rating").is_none() && v["delta"].get("rating").is_none()), "a hidden field: {mine:?}");
    assert!(!r.body.to_string().contains("Secret draft"), "{}", r.body);
    let g = app.graphql("/graphql/system", Some(&token), "{ revisions(limit: -1) { item data } }", json!({})).await;
    assert!(g.body["data"]["revisions"].is_array(), "{}", g.body);
    assert!(!g.body.to_string().contains("Secret draft") && !g.body.to_string().contains("\"rating\""), "through GraphQL: {}", g.body);
    // Nobody writes them, not even the admin.
    for (method, path, body) in [
        (Method::POST, "/activity", json!({"action": "create", "collection": "articles", "item": "1"})),
        (Method::PATCH, "/revisions/1", json!({"data": {}})),
        (Method::DELETE, "/activity/1", Value::Null),
    ] {
        for t in [Some(token.as_str()), Some(ADMIN_TOKEN)] {
            let r = app.as_token(t, method.clone(), path, Some(body.clone())).await;
            assert_error(&r, 403, "FORBIDDEN", &format!("{method} {path}"));
        }
    }
    // Without a grant: nothing at all.
    let r = app.as_token(None, Method::GET, "/activity", None).await;
    assert_error(&r, 403, "FORBIDDEN", "the public reading activity");
    let r = app.as_token(None, Method::GET, "/revisions", None).await;
    assert_error(&r, 403, "FORBIDDEN", "the public reading revisions");
}

/// `POST /utils/revert/:revision` sets the item back to the revision's data (recorded as one
/// more update); from the attacker's side, a role that may read the revision but not update the
/// item, or may not read the item at all, changes nothing.
#[tokio::test]
async fn revert_restores_a_revision_only_for_those_who_may_update_the_item() {
    let app = app(Dataset::DemoWrites);
    let published = json!({"status": {"_eq": "published"}});
    let (reader, _, _) = role(
        app,
        "RevertReaders32",
        json!([
            {"collection": "articles", "action": "read", "fields": ["*"]},
            {"collection": "directus_revisions", "action": "read", "fields": ["*"]}
        ]),
    )
    .await;
    let (editor, _, _) = role(
        app,
        "RevertEditors32",
        json!([
            {"collection": "articles", "action": "read", "permissions": published, "fields": ["*"]},
            {"collection": "articles", "action": "update", "permissions": published, "fields": ["*"]},
            {"collection": "directus_revisions", "action": "read", "fields": ["*"]}
        ]),
    )
    .await;
    let r = app.admin(Method::POST, "/items/articles", json!({"title": "Revert 32 first", "status": "published"})).await;
    let id = id_of(&r.body["data"]);
    let r = app.admin(Method::PATCH, &format!("/items/articles/{id}"), json!({"title": "Revert 32 second"})).await;
    assert_eq!(r.status, 200);
    let first = history(app, "articles", &id).await[0]["revisions"][0].clone();
    let r = app.admin(Method::GET, &format!("/revisions?filter[item][_eq]={id}&filter[collection][_eq]=articles&sort=id&fields=id&limit=1"), Value::Null).await;
    let revision = id_of(&r.body["data"][0]);
    assert_eq!(first["data"]["title"], "Revert 32 first");

    let title = || async { app.admin(Method::GET, &format!("/items/articles/{id}?fields=title"), Value::Null).await.body["data"]["title"].clone() };
    let r = app.as_token(Some(&reader), Method::POST, &format!("/utils/revert/{revision}"), None).await;
    assert_error(&r, 403, "FORBIDDEN", "reverting without update rights");
    let r = app.as_token(None, Method::POST, &format!("/utils/revert/{revision}"), None).await;
    assert_error(&r, 403, "FORBIDDEN", "the public reverting");
    assert_eq!(title().await, "Revert 32 second");

    // A draft's revision is out of the editor's reach, its item unchanged.
    let r = app.admin(Method::POST, "/items/articles", json!({"title": "Draft 32", "status": "draft"})).await;
    let draft = id_of(&r.body["data"]);
    app.admin(Method::PATCH, &format!("/items/articles/{draft}"), json!({"title": "Draft 32 edited"})).await;
    let r =
        app.admin(Method::GET, &format!("/revisions?filter[item][_eq]={draft}&filter[collection][_eq]=articles&sort=id&fields=id&limit=1"), Value::Null).await;
    let draft_revision = id_of(&r.body["data"][0]);
    let r = app.as_token(Some(&editor), Method::POST, &format!("/utils/revert/{draft_revision}"), None).await;
    assert_error(&r, 403, "FORBIDDEN", "reverting an unreadable item's revision");
    let r = app.admin(Method::GET, &format!("/items/articles/{draft}?fields=title"), Value::Null).await;
    assert_eq!(r.body["data"]["title"], "Draft 32 edited");

    // The same through GraphQL.
    let q = format!("mutation {{ utils_revert(revision: \"{revision}\") }}");
    let g = app.graphql("/graphql/system", Some(&reader), &q, json!({})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "FORBIDDEN", "GraphQL revert without update rights: {}", g.body);
    let q = format!("mutation {{ utils_revert(revision: \"{draft_revision}\") }}");
    let g = app.graphql("/graphql/system", Some(&editor), &q, json!({})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "FORBIDDEN", "GraphQL revert of an unreadable item's revision: {}", g.body);
    assert_eq!(title().await, "Revert 32 second");

    // The editor may: the item is back, and the revert is recorded.
    let r = app.as_token(Some(&editor), Method::POST, &format!("/utils/revert/{revision}"), None).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(title().await, "Revert 32 first");
    let rows = history(app, "articles", &id).await;
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[2]["action"], "update");
    assert_eq!(rows[2]["revisions"][0]["data"]["title"], "Revert 32 first");
    // And through GraphQL, to the second revision.
    let r = app.admin(Method::GET, &format!("/revisions?filter[item][_eq]={id}&filter[collection][_eq]=articles&sort=id&fields=id"), Value::Null).await;
    let second = id_of(&r.body["data"][1]);
    let g = app.graphql("/graphql/system", Some(&editor), &format!("mutation {{ utils_revert(revision: \"{second}\") }}"), json!({})).await;
    assert_eq!(g.body["data"]["utils_revert"], true, "{}", g.body);
    assert_eq!(title().await, "Revert 32 second");
}

/// An update's revision lists the item's to-many keys as a read with `fields=*` does (as
/// Directus records it); a role sees in those lists only the related items it can read; a
/// revert sets the item's own fields back and leaves its lists alone (a list is cut at the
/// nested limit, and re-applying it would unlink the items past it).
#[tokio::test]
async fn an_updates_revision_lists_to_many_keys_as_the_reader_may_see_them() {
    let app = app(Dataset::DemoWrites);
    let r = app.admin(Method::POST, "/items/authors", json!({"name": "Lister 32"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let author = id_of(&r.body["data"]);
    let mut articles = Vec::new();
    for (title, status) in [("Listed published 32", "published"), ("Listed draft 32", "draft")] {
        let r = app.admin(Method::POST, "/items/articles", json!({"title": title, "status": status, "author": author.parse::<i64>().expect("key")})).await;
        assert_eq!(r.status, 200, "{}", r.body);
        articles.push(r.body["data"]["id"].clone());
    }
    let r = app.admin(Method::PATCH, &format!("/items/authors/{author}"), json!({"name": "Lister 32, renamed"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rows = history(app, "authors", &author).await;
    let data = rows[1]["revisions"][0]["data"].clone();
    assert_eq!(data["name"], "Lister 32, renamed");
    assert_eq!(data["articles"], json!(articles), "the O2M keys in the revision: {data}");
    let live = app.admin(Method::GET, &format!("/items/authors/{author}?fields=articles"), Value::Null).await;
    assert_eq!(data["articles"], live.body["data"]["articles"], "as a read with fields=* lists them");

    // A role reading only published articles sees only the published one in the list.
    let (token, _, _) = role(
        app,
        "ListReaders32",
        json!([
            {"collection": "authors", "action": "read", "fields": ["*"]},
            {"collection": "articles", "action": "read", "permissions": {"status": {"_eq": "published"}}, "fields": ["*"]},
            {"collection": "directus_revisions", "action": "read", "fields": ["*"]}
        ]),
    )
    .await;
    let path = format!("/revisions?filter[collection][_eq]=authors&filter[item][_eq]={author}&sort=id&fields=id,data");
    let r = app.as_token(Some(&token), Method::GET, &path, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"][1]["data"]["articles"], json!([articles[0]]), "a draft's key through a revision: {}", r.body);
    let live = app.as_token(Some(&token), Method::GET, &format!("/items/authors/{author}?fields=articles"), None).await;
    assert_eq!(live.body["data"]["articles"], json!([articles[0]]));
    let g = app
        .graphql(
            "/graphql/system",
            Some(&token),
            &format!("{{ revisions(filter: {{item: {{_eq: \"{author}\"}}, collection: {{_eq: \"authors\"}}}}, sort: \"id\") {{ data }} }}"),
            json!({}),
        )
        .await;
    assert_eq!(g.body["data"]["revisions"][1]["data"]["articles"], json!([articles[0]]), "through GraphQL: {}", g.body);

    // Reverting the first update: the name is back, the article linked since stays linked.
    let revision = id_of(&r.body["data"][1]);
    app.admin(Method::PATCH, &format!("/items/authors/{author}"), json!({"name": "Lister 32, again"})).await;
    let r = app.admin(Method::POST, "/items/articles", json!({"title": "Listed later 32", "author": author.parse::<i64>().expect("key")})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.as_token(Some(ADMIN_TOKEN), Method::POST, &format!("/utils/revert/{revision}"), None).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let r = app.admin(Method::GET, &format!("/items/authors/{author}?fields=name,articles"), Value::Null).await;
    assert_eq!(r.body["data"]["name"], "Lister 32, renamed");
    assert_eq!(r.body["data"]["articles"].as_array().map(Vec::len), Some(3), "a revert unlinked articles: {}", r.body);
}

/// A login is recorded as Directus records it (action `login`, collection `directus_users`, the
/// user as item, with address, user agent and origin); a failed login is not; a user granted
/// only its own activity reads its logins and no one else's.
#[tokio::test]
async fn logins_are_recorded_and_read_only_by_whom_the_rules_allow() {
    let app = app(Dataset::DemoWrites);
    let own = json!({"user": {"_eq": "$CURRENT_USER"}});
    let (token, user, _) = role(app, "Loggers32", json!([{"collection": "directus_activity", "action": "read", "permissions": own, "fields": ["*"]}])).await;
    let (_, other, _) = role(app, "OtherLoggers32", json!([])).await;
    let headers = [("user-agent", "login-test/2.0"), ("origin", "https://studio.example.com")];
    for (email, password, status) in
        [("loggers32@example.com", "a-password-1", 200), ("otherloggers32@example.com", "a-password-1", 200), ("loggers32@example.com", "wrong-password", 401)]
    {
        let body = json!({"email": email, "password": password}).to_string();
        let r = send(app, Method::POST, "/auth/login", None, &headers, Some(("application/json", body))).await;
        assert_eq!(r.status, status, "{email}: {}", r.body);
    }
    let path = "/activity?filter[action][_eq]=login&filter[collection][_eq]=directus_users&fields=*&limit=-1";
    let r = app.admin(Method::GET, path, Value::Null).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rows = r.body["data"].as_array().cloned().unwrap_or_default();
    let of = |u: &str| rows.iter().filter(|a| a["user"] == json!(u)).cloned().collect::<Vec<_>>();
    let (mine, theirs) = (of(&user), of(&other));
    assert_eq!((mine.len(), theirs.len()), (1, 1), "one row per successful login: {rows:?}");
    assert_eq!(mine[0]["item"], json!(user));
    assert_eq!(mine[0]["user_agent"], "login-test/2.0");
    assert_eq!(mine[0]["origin"], "https://studio.example.com");
    assert!(mine[0]["ip"].as_str().is_some_and(|ip| !ip.is_empty()), "{}", mine[0]);
    // The user reads its own login, never the other user's.
    let r = app.as_token(Some(&token), Method::GET, path, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let seen = r.body["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["user"], json!(user));
}

/// Schema changes are recorded as Directus records them: activity on `directus_collections`,
/// `directus_fields` and `directus_relations`, with who made them.
#[tokio::test]
async fn schema_changes_are_recorded() {
    let app = app(Dataset::DemoWrites);
    let me = app.admin(Method::GET, "/users/me?fields=id", Value::Null).await.body["data"]["id"].clone();
    let pk = json!({"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}});
    let steps = [
        (Method::POST, "/collections".to_owned(), json!({"collection": "logged32", "schema": {}, "meta": {}, "fields": [pk]})),
        (Method::POST, "/fields/logged32".to_owned(), json!({"field": "title", "type": "string"})),
        (Method::POST, "/fields/logged32".to_owned(), json!({"field": "article", "type": "integer"})),
        (Method::POST, "/relations".to_owned(), json!({"collection": "logged32", "field": "article", "related_collection": "articles"})),
        (Method::PATCH, "/fields/logged32/title".to_owned(), json!({"meta": {"note": "a note"}})),
        (Method::DELETE, "/collections/logged32".to_owned(), Value::Null),
    ];
    for (method, path, body) in steps {
        let r = app.admin(method.clone(), &path, body).await;
        assert!(r.status == 200 || r.status == 204, "{method} {path}: {} {}", r.status, r.body);
    }
    let path = "/activity?filter[collection][_in]=directus_collections,directus_fields,directus_relations&filter[item][_starts_with]=logged32&sort=id&fields=action,collection,item,user&limit=-1";
    let r = app.admin(Method::GET, path, Value::Null).await;
    let rows: Vec<(String, String, String)> = r.body["data"]
        .as_array()
        .expect("rows")
        .iter()
        .inspect(|a| assert_eq!(a["user"], me, "{a}"))
        .map(|a| {
            (a["action"].as_str().unwrap_or("").to_owned(), a["collection"].as_str().unwrap_or("").to_owned(), a["item"].as_str().unwrap_or("").to_owned())
        })
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("create", "directus_collections", "logged32"),
        ("create", "directus_fields", "logged32.title"),
        ("create", "directus_fields", "logged32.article"),
        ("create", "directus_relations", "logged32.article"),
        ("update", "directus_fields", "logged32.title"),
        ("delete", "directus_collections", "logged32"),
    ]
    .iter()
    .map(|(a, c, i)| (a.to_string(), c.to_string(), i.to_string()))
    .collect();
    assert_eq!(rows, expected);
}

/// `POST /schema/apply` records each object its diff changes (in an environment of its own: a
/// snapshot holds every collection, and other tests make theirs meanwhile).
#[tokio::test]
async fn an_applied_schema_diff_is_recorded_per_object() {
    let app = e2e_tests::start(e2e_tests::Spec { dataset: Dataset::DemoWrites, name: Some("schema_apply_activity".into()), ..Default::default() })
        .expect("environment");
    let app = &app;
    let pk = json!({"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}});
    let r = app.admin(Method::POST, "/collections", json!({"collection": "applied32", "schema": {}, "meta": {}, "fields": [pk]})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let snapshot = app.admin(Method::GET, "/schema/snapshot", Value::Null).await.body["data"].clone();
    let r = app.admin(Method::DELETE, "/collections/applied32", Value::Null).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let d = app.admin(Method::POST, "/schema/diff", snapshot).await.body["data"].clone();
    let r = app.admin(Method::POST, "/schema/apply", json!({"hash": d["hash"], "diff": d["diff"]})).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let path = "/activity?filter[item][_starts_with]=applied32&sort=id&fields=action,collection,item&limit=-1";
    let rows = app.admin(Method::GET, path, Value::Null).await.body["data"].clone();
    assert_eq!(
        rows,
        json!([
            {"action": "create", "collection": "directus_collections", "item": "applied32"},
            {"action": "delete", "collection": "directus_collections", "item": "applied32"},
            {"action": "create", "collection": "directus_collections", "item": "applied32"},
            {"action": "create", "collection": "directus_fields", "item": "applied32.id"}
        ])
    );
}
