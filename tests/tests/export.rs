//! `export=csv|json|xml|yaml`: a streamed download with the same items as the list.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, app, assert_error};
use serde_json::Value;

async fn download(app: &e2e_tests::TestApp, path: &str) -> (u16, String, String, String) {
    let res =
        e2e_tests::http_client().build().expect("http client").get(format!("{}{path}", app.rest_url)).bearer_auth(ADMIN_TOKEN).send().await.expect("request");
    let status = res.status().as_u16();
    let header = |n: &str| res.headers().get(n).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let (ct, cd) = (header("content-type"), header("content-disposition"));
    (status, ct, cd, res.text().await.expect("body"))
}

#[tokio::test]
async fn every_format_carries_the_same_items() {
    let app = app(Dataset::Pagila);
    let q = "fields=actor_id,first_name,last_name&sort=actor_id&limit=-1";
    let truth = app
        .sql("SELECT json_agg(json_build_object('actor_id', actor_id, 'first_name', first_name, 'last_name', last_name) ORDER BY actor_id)::text FROM actor")
        .await;
    let n = truth.as_array().map(|a| a.len()).unwrap_or(0);
    assert!(n > 100);

    let (status, ct, cd, body) = download(app, &format!("/items/actor?{q}&export=json")).await;
    assert_eq!(status, 200);
    assert!(ct.starts_with("application/json"), "{ct}");
    assert!(cd.starts_with("attachment; filename=\"actor ") && cd.ends_with(".json\""), "{cd}");
    assert_eq!(serde_json::from_str::<Value>(&body).expect("json"), truth);

    let (_, ct, cd, body) = download(app, &format!("/items/actor?{q}&export=csv")).await;
    assert!(ct.starts_with("text/csv") && cd.ends_with(".csv\""), "{ct} {cd}");
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some("actor_id,first_name,last_name"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), n);
    assert_eq!(rows[0], format!("1,{},{}", truth[0]["first_name"].as_str().expect("s"), truth[0]["last_name"].as_str().expect("s")));

    let (_, ct, _, body) = download(app, &format!("/items/actor?{q}&export=yaml")).await;
    assert!(ct.starts_with("text/yaml"), "{ct}");
    // A YAML sequence of mappings: one `- actor_id: N` entry per item, in order.
    let entries: Vec<&str> = body.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(entries.len(), n);
    assert_eq!(entries[0], "- actor_id: 1");
    assert!(body.contains(&format!("  first_name: {}", truth[0]["first_name"].as_str().expect("s"))), "{}", &body[..200]);

    let (_, ct, _, body) = download(app, &format!("/items/actor?{q}&export=xml")).await;
    assert!(ct.starts_with("text/xml"), "{ct}");
    assert!(body.starts_with("<?xml") && body.trim_end().ends_with("</data>"));
    assert_eq!(body.matches("<item>").count(), n);
}

#[tokio::test]
async fn nested_fields_flatten_and_errors_come_before_the_download() {
    let app = app(Dataset::Pagila);
    let (status, _, _, body) = download(app, "/items/film?fields=title,language_id.name,film_id&sort=film_id&limit=2&export=csv").await;
    assert_eq!(status, 200);
    // Columns follow the JSON keys, which Directus orders as plain values first, then related
    // items (docs/directus-compatibility.md, "Key order of an item").
    assert_eq!(body.lines().next(), Some("title,film_id,language_id.name"), "columns follow the keys");
    assert_eq!(body.lines().count(), 3);
    let r = app.get("/items/film?fields=nope&export=csv").await;
    assert_error(&r, 403, "FORBIDDEN", "export of an unknown field");
    let r = app.get("/items/film?export=pdf").await;
    assert_error(&r, 400, "INVALID_QUERY", "unknown export format");
    let r = app.get("/items/film/1?export=csv").await;
    assert_error(&r, 400, "INVALID_QUERY", "export of one item");
}
