//! The fast path for item reads (edge-graphql `fast`) answers exactly as the resolvers do: the
//! same operations against the demo schema served with GRAPHQL_FAST_PATH on and off, compared
//! body for body. A request sent again after it ran without error is answered without the
//! executor (edge-graphql `direct`): byte for byte the same body, counted by
//! `cdapi_graphql_answers_total{path="direct"}`, and never for a schema it did not run against.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Spec, TestApp, fixture, metric_total, start};
use reqwest::Method;
use serde_json::{Value, json};

/// `POST /graphql` with `token`: status and the body as text.
async fn raw(app: &TestApp, token: Option<&str>, query: &str, variables: &Value, operation: Option<&str>) -> (u16, String) {
    let mut req = e2e_tests::http_client().build().expect("client").post(format!("{}/graphql", app.rest_url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.json(&json!({"query": query, "variables": variables, "operationName": operation})).send().await.expect("graphql request");
    (res.status().as_u16(), res.text().await.expect("body"))
}

/// edge-graphql's `/graphql` requests so far answered by `path` (`direct`, `executor`).
async fn answered(app: &TestApp, path: &str) -> f64 {
    metric_total(app, "graphql", "cdapi_graphql_answers_total", &format!("path=\"{path}\"")).await
}

#[tokio::test]
async fn fast_and_resolver_paths_answer_the_same() {
    let fast = start(Spec { name: Some("gql_direct".into()), metrics: true, ..Spec::default() }).expect("environment");
    let slow =
        start(Spec { name: Some("gql_slow".into()), graphql_env: vec![("GRAPHQL_FAST_PATH".into(), "false".into())], ..Spec::default() }).expect("environment");
    let operations = [
        ("{ articles(limit: 5, sort: [\"-id\"]) { __typename id title rating author { __typename id name } } }", json!({})),
        (
            "query Q($id: ID!, $skip: Boolean = false, $n: Int = 2) {
               a: articles_by_id(id: $id) { ...F t: title title @skip(if: $skip) published_at_func { __typename year day } author { created_at_func { month } name n2: name } }
               b: articles_by_id(id: 2) { id @include(if: $skip) word_count }
               c: authors(limit: $n, sort: [\"id\"]) { id newest: articles(limit: 2, sort: [\"-id\"]) { id tags { tags_id { name } } } oldest: articles(limit: 1, sort: [\"id\"]) { id } articles_func { count } }
             }
             fragment F on articles { id status tags_func { count } ... on articles { slug } }",
            json!({"id": "3"}),
        ),
        (
            "{ articles_by_id(id: 1) { blocks(sort: [\"sort\"]) { id collection item { __typename ... on headings { title level } ... on text_blocks { body } ... on articles_blocks_item_union { __typename } } } } }",
            json!({}),
        ),
        ("{ settings { __typename site_name featured { title author { name } } } x: articles_by_id(id: 999999) { id } }", json!({})),
        ("{ comments(limit: 3, sort: [\"id\"], filter: {article: {status: {_eq: \"published\"}}}) { id body article { id title } } tags(search: \"re\", sort: [\"name\"]) { name articles(limit: 1) { articles_id { title } } } }", json!({})),
        // Copied as the core wrote it (integer keys as strings at every level, a to-many list
        // with its arguments, plain values before relations).
        (
            "{ authors(limit: 2, sort: [\"id\"]) { id name articles(limit: 2, sort: [\"-id\"], filter: {status: {_eq: \"published\"}}) { id title status author { id name } } } }",
            json!({}),
        ),
        // A variable not sent takes its default, in `@include` too (GraphQL's
        // CoerceVariableValues).
        ("query D($all: Boolean = true) { tags(limit: 1, sort: [\"id\"]) { id } authors(limit: 1, sort: [\"id\"]) @include(if: $all) { id } }", json!({})),
        ("query A { tags(limit: 1) { id } } query B { authors(limit: 1, sort: [\"-id\"]) { name } }", json!({})),
    ];
    let direct_before = answered(&fast, "direct").await;
    for (i, (query, variables)) in operations.iter().enumerate() {
        // Two named operations: choose one, as clients do.
        let operation = (i == operations.len() - 1).then_some("B");
        let (status_slow, text_slow) = raw(&slow, Some(ADMIN_TOKEN), query, variables, operation).await;
        // The first time through the executor (with the fast path), then directly.
        let (status_fast, text_fast) = raw(&fast, Some(ADMIN_TOKEN), query, variables, operation).await;
        let (status_direct, text_direct) = raw(&fast, Some(ADMIN_TOKEN), query, variables, operation).await;
        assert_eq!(status_fast, status_slow, "{query}");
        assert_eq!((status_direct, &text_direct), (status_fast, &text_fast), "operation {i} answered directly: {query}");
        let body_fast: Value = serde_json::from_str(&text_fast).expect("JSON");
        let body_slow: Value = serde_json::from_str(&text_slow).expect("JSON");
        assert_eq!(body_fast, body_slow, "operation {i}: {query}");
        assert!(body_fast["data"].is_object() && body_fast.get("errors").is_none(), "{body_fast}");
        if query.starts_with("query D") {
            assert!(body_slow["data"]["authors"].is_array(), "the default includes the field: {body_slow}");
        }
    }
    assert_eq!(answered(&fast, "direct").await - direct_before, operations.len() as f64, "every operation's second request is answered directly");
}

/// A request validated against the admin's schema is still refused by a role whose schema
/// lacks what it selects, and one validated for a role is refused again once the role loses
/// the permission (a new build knows no validated request).
#[tokio::test]
async fn a_request_runs_directly_only_against_the_schema_it_was_validated_on() {
    let app = start(Spec { name: Some("gql_direct_roles".into()), metrics: true, ..Spec::default() }).expect("environment");
    let query = "{ articles(limit: 2, sort: [\"id\"]) { id title } }";
    for _ in 0..2 {
        let (status, body) = raw(&app, Some(ADMIN_TOKEN), query, &json!({}), None).await;
        assert_eq!(status, 200, "{body}");
    }
    assert!(answered(&app, "direct").await >= 1.0, "the admin's second request is answered directly");
    // The public role reads nothing here: its schema has no `articles`, whatever the admin ran.
    for _ in 0..2 {
        let g = app.graphql("/graphql", None, query, json!({})).await;
        assert_eq!(g.status, 400, "{}", g.body);
        assert_eq!(g.body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION", "{}", g.body);
    }
    // A request that failed validation is never taken as validated: an unknown argument (which
    // the fast path's planning would not notice) is refused every time.
    for _ in 0..3 {
        let (status, body) = raw(&app, Some(ADMIN_TOKEN), "{ articles(limit: 1, nope: 1) { id } }", &json!({}), None).await;
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("GRAPHQL_VALIDATION"), "{body}");
    }
    // Variables are part of the request: valid with one value, refused with a wrong one.
    let with_limit = "query Q($n: Int!) { articles(limit: $n, sort: [\"id\"]) { id } }";
    for _ in 0..2 {
        let (status, body) = raw(&app, Some(ADMIN_TOKEN), with_limit, &json!({"n": 1}), None).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = raw(&app, Some(ADMIN_TOKEN), with_limit, &json!({"n": "one"}), None).await;
    let body: Value = serde_json::from_str(&body).expect("JSON");
    assert!(body.get("errors").is_some() && body["data"]["articles"].is_null(), "a wrong variable is refused ({status}): {body}");

    // The public role may read articles' id only: `id` runs (and then directly), `title` never.
    let r = e2e_tests::send(
        &app,
        Method::POST,
        "/permissions",
        Some(ADMIN_TOKEN),
        &[],
        Some(("application/json", json!({"policy": fixture::PUBLIC_POLICY, "collection": "articles", "action": "read", "fields": ["id"]}).to_string())),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let permission = r.body["data"]["id"].clone();
    let ids_only = "{ articles(limit: 2, sort: [\"id\"]) { id } }";
    let mut status = 0;
    for _ in 0..100 {
        status = raw(&app, None, ids_only, &json!({}), None).await.0;
        if status == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "the public role reads articles' ids once granted");
    let before = answered(&app, "direct").await;
    let (status, body) = raw(&app, None, ids_only, &json!({}), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(answered(&app, "direct").await - before, 1.0, "the public role's second request is answered directly");
    let g = app.graphql("/graphql", None, query, json!({})).await;
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION", "the title was not granted: {}", g.body);

    // Revoked: the same request, validated a moment ago, is refused again.
    let r = e2e_tests::send(
        &app,
        Method::DELETE,
        &format!("/permissions/{}", permission.as_str().map_or(permission.to_string(), str::to_owned)),
        Some(ADMIN_TOKEN),
        &[],
        None,
    )
    .await;
    assert!(r.status == 204 || r.status == 200, "{}", r.body);
    let mut refused = false;
    for _ in 0..100 {
        let (status, _) = raw(&app, None, ids_only, &json!({}), None).await;
        if status == 400 {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(refused, "a revoked permission refuses the request it had validated");
}
