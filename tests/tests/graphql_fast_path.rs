//! The fast path for item reads (edge-graphql `fast`) answers exactly as the resolvers do: the
//! same operations against the demo schema served with GRAPHQL_FAST_PATH on (the shared
//! environment) and off (this file's own), compared body for body.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::{Dataset, Spec, app, graphql, start};
use serde_json::json;

#[tokio::test]
async fn fast_and_resolver_paths_answer_the_same() {
    let fast = app(Dataset::Demo);
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
        ("query A { tags(limit: 1) { id } } query B { authors(limit: 1, sort: [\"-id\"]) { name } }", json!({})),
    ];
    for (i, (query, variables)) in operations.iter().enumerate() {
        let mut body_fast = graphql(fast, "/graphql", query, variables.clone()).await;
        let mut body_slow = graphql(&slow, "/graphql", query, variables.clone()).await;
        if i == operations.len() - 1 {
            // Two named operations: choose one, as clients do.
            let body = json!({"query": query, "variables": variables, "operationName": "B"}).to_string();
            body_fast =
                e2e_tests::send(fast, reqwest::Method::POST, "/graphql", Some(e2e_tests::ADMIN_TOKEN), &[], Some(("application/json", body.clone()))).await;
            body_slow = e2e_tests::send(&slow, reqwest::Method::POST, "/graphql", Some(e2e_tests::ADMIN_TOKEN), &[], Some(("application/json", body))).await;
            assert!(body_fast.body["data"]["authors"].is_array(), "{}", body_fast.body);
        }
        assert_eq!(body_fast.status, body_slow.status, "{query}");
        assert_eq!(body_fast.body, body_slow.body, "operation {i}: {query}");
        assert!(body_fast.body["data"].is_object(), "{}", body_fast.body);
    }
}
