//! Manual order, field specials and utilities (README "Manual order", "Automatic field values",
//! "Utilities"): a collection made through each side's own API with a sort field and every
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
}
