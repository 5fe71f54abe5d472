//! Manual order (docs/history.md "Manual order"): a collection's `meta.sort_field` is its lists' default
//! order, a relation's `sort_field` orders its O2M lists, and `POST /utils/sort/:collection`
//! (GraphQL `utils_sort`) moves an item as Directus does; from the attacker's side, a role may
//! only move items it may update with the sort field granted, and only when every item whose
//! value changes is one of those.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, role};
use e2e_tests::{Dataset, TestApp, app, assert_error};
use reqwest::Method;
use serde_json::{Value, json};

/// Creates `cards<suffix>` (id, name, sort with `meta.sort_field`) and `steps<suffix>` (id, card
/// M2O with the O2M `steps` ordered by their own `sort`), and waits until both are served.
async fn collections(app: &TestApp, suffix: &str) -> (String, String) {
    let (cards, steps) = (format!("cards{suffix}"), format!("steps{suffix}"));
    let pk = json!({"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}});
    for (name, sort_field) in [(&cards, json!("sort")), (&steps, Value::Null)] {
        let body = json!({"collection": name, "schema": {}, "meta": {"sort_field": sort_field}, "fields": [
            pk, {"field": "name", "type": "string"}, {"field": "sort", "type": "integer"}, {"field": "card", "type": "integer"}
        ]});
        let r = app.admin(Method::POST, "/collections", body).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let relation = json!({"collection": steps, "field": "card", "related_collection": cards, "meta": {"one_field": "steps", "sort_field": "sort"}});
    let r = app.admin(Method::POST, "/relations", relation).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let path = format!("/items/{cards}?fields=steps");
    eventually("the collections are served", || async { app.admin(Method::GET, &path, Value::Null).await.status == 200 }).await;
    (cards, steps)
}

/// The `name`s of a list answer, in order.
fn names(list: &Value) -> Vec<String> {
    list.as_array().map(|a| a.iter().filter_map(|i| i["name"].as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// The names of `collection`'s items in its default order, as the admin reads them.
async fn order(app: &TestApp, collection: &str) -> Vec<String> {
    names(&app.admin(Method::GET, &format!("/items/{collection}?fields=name"), Value::Null).await.body["data"])
}

/// Creates items named `names` with these sort values; returns their ids.
async fn items(app: &TestApp, collection: &str, rows: Value) -> Vec<i64> {
    let r = app.admin(Method::POST, &format!("/items/{collection}"), rows).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"].as_array().map(|a| a.iter().filter_map(|i| i["id"].as_i64()).collect()).unwrap_or_default()
}

#[tokio::test]
async fn the_sort_field_orders_lists_and_nested_lists_unless_a_sort_is_asked() {
    let app = app(Dataset::DemoWrites);
    let (cards, steps) = collections(app, "_o32").await;
    let ids = items(app, &cards, json!([{"name": "c", "sort": 3}, {"name": "a", "sort": 1}, {"name": "b", "sort": 2}, {"name": "none"}])).await;
    assert_eq!(order(app, &cards).await, ["a", "b", "c", "none"], "the sort field first, items without a value last");
    let r = app.admin(Method::GET, &format!("/items/{cards}?fields=name&sort=-id"), Value::Null).await;
    assert_eq!(names(&r.body["data"]), ["none", "b", "a", "c"], "an asked sort wins");
    let card = ids[0];
    items(app, &steps, json!([{"name": "two", "sort": 2, "card": card}, {"name": "one", "sort": 1, "card": card}, {"name": "three", "sort": 3, "card": card}]))
        .await;
    let r = app.admin(Method::GET, &format!("/items/{cards}/{card}?fields=steps.name"), Value::Null).await;
    assert_eq!(names(&r.body["data"]["steps"]), ["one", "two", "three"], "{}", r.body);
    let r = app.admin(Method::GET, &format!("/items/{cards}/{card}?fields=steps.name&deep[steps][_sort]=-name"), Value::Null).await;
    assert_eq!(names(&r.body["data"]["steps"]), ["two", "three", "one"], "{}", r.body);
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), &format!("{{ {cards} {{ name steps {{ name }} }} }}"), json!({})).await;
    assert_eq!(names(&g.body["data"][&cards]), ["a", "b", "c", "none"], "{}", g.body);
    assert_eq!(names(&g.body["data"][&cards][2]["steps"]), ["one", "two", "three"], "{}", g.body);
}

#[tokio::test]
async fn utils_sort_moves_an_item_as_directus_does() {
    let app = app(Dataset::DemoWrites);
    let (cards, _) = collections(app, "_m32").await;
    let ids = items(app, &cards, json!([{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}])).await;
    let sort = |item: i64, to: i64| json!({"item": item, "to": to});
    // Items without a value are numbered first (1..4 in key order); `a` takes `c`'s place.
    let r = app.admin(Method::POST, &format!("/utils/sort/{cards}"), sort(ids[0], ids[2])).await;
    assert_eq!((r.status, r.body.clone()), (200, Value::Null), "200 with no body");
    assert_eq!(order(app, &cards).await, ["b", "c", "a", "d"]);
    // Upwards, with keys as strings, through GraphQL.
    let mutation = format!("mutation {{ utils_sort(collection: \"{cards}\", item: \"{}\", to: \"{}\") }}", ids[3], ids[1]);
    let g = app.graphql("/graphql/system", Some(e2e_tests::ADMIN_TOKEN), &mutation, json!({})).await;
    assert_eq!(g.body["data"]["utils_sort"], true, "{}", g.body);
    assert_eq!(order(app, &cards).await, ["d", "b", "c", "a"]);
    let r = app.admin(Method::GET, &format!("/items/{cards}?fields=name,sort&sort=sort"), Value::Null).await;
    let values: Vec<Value> = r.body["data"].as_array().expect("items").iter().map(|i| i["sort"].clone()).collect();
    assert_eq!(values, [json!(1), json!(2), json!(3), json!(4)]);
    // Duplicates are renumbered first (c=1, d=2, b=3, a=4; ties in key order), as Directus.
    let r = app.admin(Method::PATCH, &format!("/items/{cards}/{}", ids[2]), json!({"sort": 1})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::POST, &format!("/utils/sort/{cards}"), sort(ids[0], ids[3])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::GET, &format!("/items/{cards}?fields=name,sort&sort=sort"), Value::Null).await;
    let rows: Vec<(String, i64)> =
        r.body["data"].as_array().expect("items").iter().map(|i| (i["name"].as_str().unwrap_or("").to_owned(), i["sort"].as_i64().unwrap_or(0))).collect();
    let expected: Vec<(String, i64)> = [("c", 1), ("a", 2), ("d", 3), ("b", 4)].iter().map(|(n, s)| (n.to_string(), *s)).collect();
    assert_eq!(rows, expected);
    // Who moved what is recorded like any update.
    let path = format!("/activity?filter[collection][_eq]={cards}&filter[action][_eq]=update&fields=item&limit=-1");
    let r = app.admin(Method::GET, &path, Value::Null).await;
    assert!(r.body["data"].as_array().is_some_and(|a| a.len() >= 4), "{}", r.body);
    // Bad requests.
    let r = app.admin(Method::POST, &format!("/utils/sort/{cards}"), json!({"item": ids[0]})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "no `to`");
    let r = app.admin(Method::POST, "/utils/sort/articles", sort(1, 2)).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a collection without a sort field");
    let r = app.admin(Method::POST, &format!("/utils/sort/{cards}"), sort(ids[0], 999_999)).await;
    assert_error(&r, 403, "FORBIDDEN", "a missing item");
    let r = app.admin(Method::POST, "/utils/sort/no_such_collection", sort(1, 2)).await;
    assert_error(&r, 403, "FORBIDDEN", "a missing collection");
}

#[tokio::test]
async fn a_role_moves_only_items_it_may_update_and_never_shifts_others() {
    let app = app(Dataset::DemoWrites);
    let (cards, _) = collections(app, "_a32").await;
    let ids =
        items(app, &cards, json!([{"name": "mine 1", "sort": 1}, {"name": "theirs", "sort": 2}, {"name": "mine 2", "sort": 3}, {"name": "mine 3", "sort": 4}]))
            .await;
    let mine = json!({"name": {"_starts_with": "mine"}});
    let read = json!({"collection": cards, "action": "read", "fields": ["*"]});
    let (sorter, _, _) = role(app, "Sorters32", json!([read, {"collection": cards, "action": "update", "permissions": mine, "fields": ["sort"]}])).await;
    let (namer, _, _) = role(app, "Namers32", json!([read, {"collection": cards, "action": "update", "fields": ["name"]}])).await;
    let (reader, _, _) = role(app, "SortReaders32", json!([read])).await;
    let before = order(app, &cards).await;
    let sort = |item: i64, to: i64| Some(json!({"item": item, "to": to}));
    let path = format!("/utils/sort/{cards}");
    // Moving across an item it may not update would shift that item: refused, nothing changes.
    let r = app.as_token(Some(&sorter), Method::POST, &path, sort(ids[0], ids[2])).await;
    assert_error(&r, 403, "FORBIDDEN", "shifting another's item");
    // Moving another's item, or to another's item's place.
    for (item, to) in [(ids[1], ids[2]), (ids[2], ids[1])] {
        let r = app.as_token(Some(&sorter), Method::POST, &path, sort(item, to)).await;
        assert_error(&r, 403, "FORBIDDEN", "another's item");
    }
    // Without the sort field granted, without update at all, as the public.
    for token in [Some(namer.as_str()), Some(reader.as_str()), None] {
        let r = app.as_token(token, Method::POST, &path, sort(ids[2], ids[3])).await;
        assert_error(&r, 403, "FORBIDDEN", "no update of the sort field");
        let g = app
            .graphql("/graphql/system", token, &format!("mutation {{ utils_sort(collection: \"{cards}\", item: {}, to: {}) }}", ids[2], ids[3]), json!({}))
            .await;
        assert_eq!(g.body["errors"][0]["extensions"]["code"], "FORBIDDEN", "{}", g.body);
    }
    assert_eq!(order(app, &cards).await, before, "a refused sort changed the order");
    // Within its own items: done.
    let r = app.as_token(Some(&sorter), Method::POST, &path, sort(ids[3], ids[2])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(order(app, &cards).await, ["mine 1", "theirs", "mine 3", "mine 2"]);
}
