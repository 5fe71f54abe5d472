//! Every read is ONE SQL statement, nested relations and meta included: counted from the
//! database driver's own statement log (sqlx logs each statement it executes at debug level on
//! target `sqlx::query`), tied to the request by its request id.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::{ADMIN_TOKEN, Dataset, app, send};
use reqwest::Method;
use std::time::Duration;

fn statements_for(log: &std::path::Path, request_id: &str) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().filter(|l| l.contains("\"target\":\"sqlx::query\"") && l.contains(&format!("\"request_id\":\"{request_id}\""))).count()
}

#[tokio::test]
async fn nested_reads_are_one_statement() {
    let app = app(Dataset::Pagila);
    let paths = [
        "/items/film?fields=*,language_id.*,actors.actor_id.*&filter[actors][actor_id][last_name][_starts_with]=G&sort=-language_id.name&meta=*&limit=20",
        "/items/customer?fields=*,address_id.city_id.country_id.*,rental.inventory_id.film_id.title&limit=5&search=mary",
        "/items/film/10?fields=*.*",
        "/items/film?fields=title,first.actor_id.last_name,count(actors)&alias[first]=actors&deep[first][_sort]=-actor_id&deep[first][_limit]=2&filter[year(last_update)][_gte]=2000&sort=-count(actors)",
        "/items/rental?aggregate[count]=*&aggregate[max]=rental_date&groupBy[]=staff_id.first_name&groupBy[]=month(rental_date)",
    ];
    // Warm up: the first request of a token looks the token up (a separate, cached statement).
    let warm = send(app, Method::GET, "/items/language?limit=1", Some(ADMIN_TOKEN), &[], None).await;
    assert_eq!(warm.status, 200);
    for (i, path) in paths.iter().enumerate() {
        let id = format!("stmt-count-{i}-{}", std::process::id());
        let r = send(app, Method::GET, path, Some(ADMIN_TOKEN), &[("x-request-id", &id)], None).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert_eq!(r.headers.get("x-request-id").and_then(|v| v.to_str().ok()), Some(id.as_str()));
        let mut count = 0;
        for _ in 0..50 {
            count = statements_for(&app.core_log, &id);
            if count > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(count, 1, "{path} ran {count} statements");
    }
}

/// Waits until the core's log shows `expected` statements for `id` (or 5 s), then a little more
/// so that extra ones would show too.
async fn settle(log: &std::path::Path, id: &str, expected: usize) -> usize {
    for _ in 0..50 {
        if statements_for(log, id) >= expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    statements_for(log, id)
}

#[tokio::test]
async fn a_graphql_root_field_is_one_statement_whatever_its_nesting() {
    let app = app(Dataset::Pagila);
    let warm = send(app, Method::GET, "/items/language?limit=1", Some(ADMIN_TOKEN), &[], None).await;
    assert_eq!(warm.status, 200);
    let cases = [
        (
            "{ film(limit: 20, filter: {actors: {actor_id: {last_name: {_starts_with: \"G\"}}}}) { title language_id { name } actors(limit: 3, sort: [\"-actor_id\"]) { actor_id { first_name films(limit: 1) { film_id { title } } } } last_update_func { year } } }",
            1,
        ),
        (
            "{ a: customer(limit: 5, search: \"mary\") { address_id { city_id { country_id { country } } } } b: film_aggregated(groupBy: [\"rating\"]) { group countAll } }",
            2,
        ),
    ];
    for (i, (query, expected)) in cases.iter().enumerate() {
        let id = format!("gql-stmt-{i}-{}", std::process::id());
        let body = serde_json::json!({"query": query}).to_string();
        let r = send(app, Method::POST, "/graphql", Some(ADMIN_TOKEN), &[("x-request-id", &id)], Some(("application/json", body))).await;
        assert_eq!(r.status, 200, "{query}: {}", r.body);
        assert!(r.body.get("errors").is_none(), "{}", r.body);
        let count = settle(&app.core_log, &id, *expected).await;
        assert_eq!(count, *expected, "{query} ran {count} statements");
    }
}
