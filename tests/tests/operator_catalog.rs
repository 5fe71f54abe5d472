//! The operator catalog (docs/query-language.md) as every edge exposes it: a validation-only
//! operator (`_regex`) checks payloads but is refused in a query, over REST and GraphQL alike;
//! the negating operators hold for a missing value in a validation rule; the OpenAPI document
//! lists the catalog's query operators.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, app, assert_error, exec};
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn regex_validates_payloads_and_is_refused_in_queries() {
    let app = app(Dataset::DemoWrites);
    exec(app, "CREATE TABLE catalog_codes (id serial PRIMARY KEY, code text, size int)").await;
    eventually("catalog_codes is served", || async { app.as_token(Some(ADMIN_TOKEN), Method::GET, "/items/catalog_codes?limit=1", None).await.status == 200 })
        .await;
    let (token, _, _) = role(
        app,
        "CodeWriters",
        json!([{"collection": "catalog_codes", "action": "create", "fields": ["*"],
                "validation": {"code": {"_regex": "/^[a-z]{3}$/i"}, "size": {"_nbetween": [10, 20]}}}]),
    )
    .await;
    let post = |body: Value| {
        let token = token.clone();
        async move { app.as_token(Some(&token), Method::POST, "/items/catalog_codes", Some(body)).await }
    };
    // The JavaScript form's `i` flag ignores case; an absent `size` passes the negating `_nbetween`.
    let r = post(json!({"code": "AbC"})).await;
    assert_eq!(r.status, 204, "{}", r.body);
    for (body, field, kind) in
        [(json!({"code": "ab1"}), "code", "regex"), (json!({"code": "abcd"}), "code", "regex"), (json!({"code": "abc", "size": 15}), "size", "nbetween")]
    {
        let r = post(body.clone()).await;
        assert_error(&r, 400, "FAILED_VALIDATION", &body.to_string());
        assert_eq!(
            (r.body["errors"][0]["extensions"]["field"].clone(), r.body["errors"][0]["extensions"]["type"].clone()),
            (json!(field), json!(kind)),
            "{}",
            r.body
        );
    }
    assert_eq!(app.sql("SELECT json_agg(code)::text FROM catalog_codes").await, json!(["AbC"]), "only the valid item is stored");

    // In a query the pattern would be the caller's, and its cost unbounded: refused everywhere.
    let r = app.admin(Method::GET, "/items/catalog_codes?filter[code][_regex]=^a", Value::Null).await;
    assert_error(&r, 400, "INVALID_QUERY", "_regex in a REST filter");
    assert!(r.body["errors"][0]["message"].as_str().is_some_and(|m| m.contains("validation rules")), "{}", r.body);
    let r = app.admin(Method::POST, "/graphql", json!({"query": "{ catalog_codes(filter: {code: {_regex: \"^a\"}}) { id } }"})).await;
    assert_eq!(r.body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION", "{}", r.body);
    let r = app.admin(Method::GET, "/items/catalog_codes?filter[code][_nistarts_with]=A&fields=code", Value::Null).await;
    assert_eq!(r.body["data"], json!([]), "{}", r.body);
}

#[tokio::test]
async fn openapi_lists_the_query_operators_of_the_catalog() {
    let app = app(Dataset::Demo);
    let r = app.admin(Method::GET, "/server/specs/oas", Value::Null).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let description = r.body["components"]["parameters"]["Filter"]["description"].as_str().expect("the filter parameter's description").to_owned();
    for op in ["_eq", "_nnull", "_nistarts_with", "_nbetween", "_intersects_bbox"] {
        assert!(description.contains(op), "{op} in {description}");
    }
    assert!(!description.contains("_regex"), "a validation-only operator is not offered to queries: {description}");
}
