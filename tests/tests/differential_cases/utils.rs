//! Manual order, field specials and utilities (docs/history.md "Manual order", "Automatic field
//! values", "Utilities"): a collection made through each side's own API with a sort field and every
//! shaping special, its items written and read, `/utils/sort` moves, and the utilities whose
//! answers are not random.

use e2e_tests::differential::{Differential, Req};
use reqwest::Method;
use serde_json::{Value, json};

pub async fn run(d: &mut Differential) {
    let post = |path: &str, body: Value| Req::json(Method::POST, path, body);
    let special = |s: &str| json!({"special": [s]});
    let create = post(
        "/collections",
        json!({"collection": "cards", "schema": {}, "meta": {"sort_field": "sort"}, "fields": [
            {"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}},
            {"field": "name", "type": "string"},
            {"field": "sort", "type": "integer"},
            {"field": "code", "type": "uuid", "meta": special("uuid")},
            {"field": "flags", "type": "text", "meta": special("cast-csv")},
            {"field": "settings", "type": "text", "meta": special("cast-json")},
            {"field": "active", "type": "integer", "meta": special("cast-boolean")},
            {"field": "secret", "type": "string", "meta": special("conceal")}
        ]}),
    );
    let (o, t) = d.both(&create, &create).await;
    assert!(o.status == 200 && t.status == 200, "the collection was not made: ours {} {}, theirs {} {}", o.status, o.body, t.status, t.body);
    let served = Req::get("/items/cards?limit=1");
    for _ in 0..100 {
        if d.both(&served, &served).await.0.status == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let items = json!([
        {"name": "a", "sort": 1, "flags": ["x", "y"], "settings": {"k": [1]}, "active": 1, "secret": "hidden"},
        {"name": "b", "sort": 2, "flags": "", "active": 0},
        {"name": "c", "sort": 3, "code": "00000000-0000-4000-8000-000000000002"},
        {"name": "d", "sort": 4, "settings": "not json"}
    ]);
    d.check("create with specials", post("/items/cards?fields=id,name,sort,code,flags,settings,active,secret", items)).await;
    d.check("the sort field is the default order", Req::get("/items/cards?fields=name")).await;
    d.check("sort an item down", post("/utils/sort/cards", json!({"item": 1, "to": 3}))).await;
    d.check("the order after it", Req::get("/items/cards?fields=name,sort")).await;
    d.check("sort an item up, keys as strings", post("/utils/sort/cards", json!({"item": "4", "to": "2"}))).await;
    d.check("the order after that", Req::get("/items/cards?fields=name,sort")).await;
    d.deviates(
        "a sort is recorded as updates",
        "sort-recorded",
        Req::get("/activity?filter[collection][_eq]=cards&filter[action][_eq]=update&fields=action,item&sort=id&limit=-1"),
    )
    .await;
    d.check("sort without `to`", post("/utils/sort/cards", json!({"item": 1}))).await;
    d.check("sort without a sort field", post("/utils/sort/tags", json!({"item": 1, "to": 2}))).await;
    d.check("filter on a concealed field", Req::get("/items/cards?filter[secret][_eq]=hidden")).await;
    d.check("filter on a concealed field, null", Req::get("/items/cards?filter[secret][_null]=true&fields=name")).await;

    d.check("random string, too long", Req::get("/utils/random/string?length=501")).await;
    let hash = access_token::passwords::hash_now("a-string").unwrap_or_else(|e| panic!("hash: {e:?}"));
    d.check("hash verify, match", post("/utils/hash/verify", json!({"string": "a-string", "hash": hash}))).await;
    d.check("hash verify, no match", post("/utils/hash/verify", json!({"string": "another", "hash": hash}))).await;
    d.check("hash generate without a string", post("/utils/hash/generate", json!({}))).await;
    d.check("clear the cache", post("/utils/cache/clear", json!({}))).await;

    let import = |media_type: &str, content: &str| Req {
        method: Method::POST,
        path: "/utils/import/cards".into(),
        body: Some((
            "multipart/form-data; boundary=XyZ".into(),
            format!("--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cards\"\r\nContent-Type: {media_type}\r\n\r\n{content}\r\n--XyZ--\r\n"),
        )),
        auth: e2e_tests::differential::Auth::Admin,
    };
    d.check("import JSON, a new item and an update", import("application/json", r#"[{"name": "e", "sort": 5}, {"id": 2, "name": "b2"}]"#)).await;
    d.check("import CSV", import("text/csv", "name,sort,active\nf,6,1\n")).await;
    d.check("import another type", import("text/plain", "name\ng\n")).await;
    d.check("the items after the imports", Req::get("/items/cards?fields=name,sort,active&sort=id")).await;
}

/// Comments and notifications (docs/history.md "Comments and notifications"): writes and reads as the
/// admin, times left out of the fields asked for.
pub async fn comments(d: &mut Differential) {
    let post = |path: &str, body: Value| Req::json(Method::POST, path, body);
    let fields = "fields=collection,item,comment";
    d.check("create a comment", post(&format!("/comments?{fields}"), json!({"collection": "articles", "item": "1", "comment": "Nice"}))).await;
    d.check("a comment without text", post("/comments", json!({"collection": "articles", "item": "1"}))).await;
    d.check("a comment on no item", post(&format!("/comments?{fields}"), json!({"collection": "articles", "item": "999999", "comment": "x"}))).await;
    d.check("a comment on no collection", post("/comments", json!({"collection": "nope", "item": "1", "comment": "x"}))).await;
    d.check("the item's comments", Req::get(&format!("/comments?{fields}&filter[item][_eq]=1"))).await;
    let me = Req::get("/users/me?fields=id");
    let (o, t) = d.both(&me, &me).await;
    let id = |a: &e2e_tests::differential::Answer| a.json()["data"]["id"].as_str().unwrap_or_default().to_owned();
    let note = |recipient: String| {
        post("/notifications?fields=recipient,subject,message,status,collection,item", json!({"recipient": recipient, "subject": "Hi", "message": "Hello"}))
    };
    d.pair("notify a user", note(id(&o)), note(id(&t))).await;
    d.check("the inbox", Req::get("/notifications?fields=recipient,subject,status,collection,item")).await;
    d.check("archive a notification", Req::json(Method::PATCH, "/notifications/1?fields=status", json!({"status": "archived"}))).await;
}
