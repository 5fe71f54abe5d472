//! GraphQL reads on the demo schema and Pagila (spec: Item operations (GraphQL), GraphQL
//! rules): each root field and argument, nested relations with their own arguments, aliases,
//! M2A fragments, functions, aggregates; the same data as REST.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::{Dataset, app, get, graphql};
use serde_json::{Value, json};

#[tokio::test]
async fn list_with_nested_relations_matches_rest() {
    let app = app(Dataset::Demo);
    let g = graphql(app, "/graphql", "{ articles(limit: 3, sort: [\"-id\"], filter: {status: {_eq: \"published\"}}) { id title author { name } tags(limit: 1, sort: [\"-id\"]) { tags_id { name } } } }", json!({})).await;
    assert_eq!(g.status, 200, "{}", g.body);
    assert!(g.body.get("errors").is_none(), "{}", g.body);
    let r = get(app, "/items/articles?limit=3&sort=-id&filter[status][_eq]=published&fields=id,title,author.name,tags.tags_id.name&deep[tags][_limit]=1&deep[tags][_sort]=-id").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut rest = r.body["data"].clone();
    for a in rest.as_array_mut().into_iter().flatten() {
        a["id"] = Value::String(a["id"].to_string());
    }
    assert_eq!(g.body["data"]["articles"], rest);
}
