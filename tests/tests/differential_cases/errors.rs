//! Error codes and statuses (Directus docs "Error Codes"): unknown collections, fields and routes, invalid
//! queries and payloads, constraint violations. Last in the run: failing inserts may use up
//! key values.

use e2e_tests::differential::{Differential, Req};
use reqwest::Method;
use serde_json::json;

pub async fn run(d: &mut Differential) {
    let reads = [
        ("unknown collection", "/items/nope"),
        ("unknown field in filter", "/items/articles?filter[nope][_eq]=1"),
        ("unknown operator", "/items/articles?filter[id][_bogus]=1"),
        ("limit not a number", "/items/articles?limit=abc"),
        ("unknown sort field", "/items/articles?sort=nope"),
        ("unknown field", "/items/articles?fields=nope"),
        ("filter not JSON", "/items/articles?filter={nope"),
        ("missing item", "/items/articles/999999"),
        ("key of the wrong type", "/items/articles/abc"),
        ("unknown route", "/nope"),
        ("unknown system route", "/server/nope"),
    ];
    for (label, path) in reads {
        d.check(&format!("error: {label}"), Req::get(path)).await;
    }
    d.deviates("error: unknown aggregate", "unknown-aggregate", Req::get("/items/articles?aggregate[bogus]=id")).await;
    let post = |path: &str, body: &str| Req { body: Some(("application/json".into(), body.to_owned())), method: Method::POST, ..Req::get(path) };
    d.check("error: body not JSON", post("/items/tags", "{nope")).await;
    d.check("error: body of the wrong shape", post("/items/tags", "42")).await;
    d.deviates("error: value of the wrong type", "no-500", post("/items/articles", r#"{"rating": "abc"}"#)).await;
    d.check("error: foreign key", post("/items/articles", r#"{"author": 99999}"#)).await;
    // Content Versioning is off in every collection of this data (Directus's default).
    d.check("error: a version where versioning is off", post("/versions", r#"{"key": "draft", "collection": "articles", "item": "1"}"#)).await;
    d.check("error: not null", post("/items/kinds", r#"{"label": null}"#)).await;
    d.deviates("error: too long", "value-too-long", post("/items/kinds", r#"{"label": "far too long for twenty characters"}"#)).await;
    d.deviates("error: duplicate key", "unique-value", post("/items/tags", r#"{"id": 1, "name": "dup"}"#)).await;
    d.deviates("error: update of a missing item", "missing-item-write", Req::json(Method::PATCH, "/items/articles/999999", json!({"title": "x"}))).await;
    d.deviates("error: delete of a missing item", "missing-item-write", Req { method: Method::DELETE, ..Req::get("/items/articles/999999") }).await;
}
