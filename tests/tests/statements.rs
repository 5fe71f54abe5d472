//! Every read is ONE SQL statement, nested relations and meta included: counted from the
//! database driver's own statement log (sqlx logs each statement it executes at debug level on
//! target `sqlx::query`), tied to the request by its request id.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::{ADMIN_TOKEN, Dataset, app, send};
use reqwest::Method;
use std::time::Duration;

fn statements_for(log: &std::path::Path, request_id: &str) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("\"target\":\"sqlx::query\"") && l.contains(&format!("\"request_id\":\"{request_id}\"")))
        .count()
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
