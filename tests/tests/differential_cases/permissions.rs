//! A restricted role (same rules on both sides): row filters, field lists, forbidden fields and
//! collections, writes outside the rules (Directus docs "Access Control").

use e2e_tests::differential::{Auth, Differential, Req};
use reqwest::Method;
use serde_json::json;

pub async fn run(d: &mut Differential, reader: &Auth) {
    // Directus orders `*` by the permission's field list for a restricted role.
    d.deviates("role: rows by filter", "wildcard-order", Req::get("/items/articles?limit=4&sort=id").auth(reader.clone())).await;
    d.deviates("role: nested readable", "wildcard-order", Req::get("/items/articles?limit=2&fields=*,author.*").auth(reader.clone())).await;
    d.deviates("role: row inside the filter", "wildcard-order", Req::get("/items/articles/2").auth(reader.clone())).await;
    let reads = [
        ("rows by fields", "/items/articles?limit=4&sort=id&fields=id,title,status,author"),
        ("forbidden field", "/items/articles?fields=body&limit=1"),
        ("forbidden field in filter", "/items/articles?filter[body][_contains]=a&fields=id"),
        ("forbidden nested field", "/items/articles?fields=id,author.email&limit=1"),
        ("row outside the filter", "/items/articles/1"),
        ("collection not granted", "/items/tags"),
        ("aggregate over readable rows", "/items/articles?aggregate[count]=*"),
        ("meta over readable rows", "/items/articles?meta=filter_count&limit=1&fields=id"),
    ];
    for (label, path) in reads {
        d.check(&format!("role: {label}"), Req::get(path).auth(reader.clone())).await;
    }
    d.deviates("role: own user", "own-user", Req::get("/users/me?fields=email").auth(reader.clone())).await;
    d.check("role: policy globals", Req::get("/policies/me/globals").auth(reader.clone())).await;
    d.check("public: policy globals", Req::get("/policies/me/globals").auth(Auth::Public)).await;
    d.deviates("role: what it may do", "permissions-me", Req::get("/permissions/me").auth(reader.clone())).await;
    let q = "{ articles(limit: 2, sort: [\"id\"]) { id title author { name } } }";
    d.deviates("role: graphql", "graphql-role-relations", Req::graphql("/graphql", q).auth(reader.clone())).await;
    d.check("role: graphql forbidden field", Req::graphql("/graphql", "{ articles { body } }").auth(reader.clone())).await;
    d.check("role: update not granted", Req::json(Method::PATCH, "/items/articles/2", json!({"title": "x"})).auth(reader.clone())).await;
    d.check("role: create outside the field list", Req::json(Method::POST, "/items/tags", json!({"id": 500, "name": "x"})).auth(reader.clone())).await;
    d.check("role: validation", Req::json(Method::POST, "/items/tags", json!({"name": null})).auth(reader.clone())).await;
    d.check("public: items", Req::get("/items/articles?limit=1").auth(Auth::Public)).await;
    d.check("public: graphql", Req::graphql("/graphql", "{ articles { id } }").auth(Auth::Public)).await;
}
