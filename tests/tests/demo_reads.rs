//! The project's demo schema (deploy/demo/demo.sql) serves nested data, including the configured
//! M2M alias `articles.tags`.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{Dataset, app};
use serde_json::Value;

#[tokio::test]
async fn articles_with_author_and_tags() {
    let app = app(Dataset::Demo);
    let r = app.get("/items/articles?fields=*,author.*&limit=2").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let data = r.body["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(data.len(), 2);
    for a in &data {
        let id = a["id"].as_i64().unwrap_or_default();
        let author = app.sql(&format!("SELECT to_json(au.name)::text FROM articles ar JOIN authors au ON au.id = ar.author WHERE ar.id = {id}")).await;
        assert_eq!(a["author"]["name"], author);
        assert!(a["author"]["articles"].is_array(), "O2M alias on authors: {a}");
        let tags = app.sql(&format!("SELECT coalesce(json_agg(id ORDER BY id), '[]')::text FROM articles_tags WHERE articles_id = {id}")).await;
        assert_eq!(a["tags"], tags, "`*` lists the junction keys under the configured alias");
    }
    let r = app.get("/items/articles/1?fields=title,tags.tags_id.name").await;
    let names: Vec<Value> = r.body["data"]["tags"].as_array().map(|t| t.iter().map(|x| x["tags_id"]["name"].clone()).collect()).unwrap_or_default();
    let truth = app
        .sql("SELECT coalesce(json_agg(t.name ORDER BY at.id), '[]')::text FROM articles_tags at JOIN tags t ON t.id = at.tags_id WHERE at.articles_id = 1")
        .await;
    assert_eq!(Value::Array(names), truth);
}

#[tokio::test]
async fn singleton_reads_as_a_plain_object() {
    let app = app(Dataset::Demo);
    let r = app.get("/items/settings?fields=site_name,per_page,featured.title").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app.sql("SELECT json_build_object('site_name', s.site_name, 'per_page', s.per_page, 'featured', json_build_object('title', a.title))::text FROM settings s JOIN articles a ON a.id = s.featured",
    )
    .await;
    assert_eq!(r.body["data"], truth);
}

#[tokio::test]
async fn many_to_any_blocks_read_and_filter() {
    let app = app(Dataset::Demo);
    // every allowed collection expanded
    let r = app.get("/items/articles/3?fields=id,blocks.collection,blocks.item.*&deep[blocks][_sort]=sort").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app
        .sql(
            "SELECT json_agg(json_build_object('collection', b.collection, 'item', CASE b.collection \
           WHEN 'headings' THEN (SELECT row_to_json(h) FROM headings h WHERE h.id = b.item::int) \
           ELSE (SELECT row_to_json(t) FROM text_blocks t WHERE t.id = b.item::int) END) ORDER BY b.sort)::text \
         FROM articles_blocks b WHERE b.articles_id = 3",
        )
        .await;
    assert_eq!(r.body["data"]["blocks"], truth);
    // scope syntax: only headings expanded, text blocks keep their key
    let r = app.get("/items/articles/3?fields=blocks.item:headings.title&deep[blocks][_sort]=sort").await;
    let blocks = r.body["data"]["blocks"].as_array().cloned().unwrap_or_default();
    assert_eq!(blocks.len(), 3, "{}", r.body);
    assert!(blocks[0]["item"]["title"].is_string(), "{}", r.body);
    assert!(blocks[1]["item"].is_string(), "{}", r.body);
    // filter through the M2A scope
    let r = app.get("/items/articles?fields=id&limit=-1&filter[blocks][item:headings][title][_starts_with]=Section 1:").await;
    let truth = app.sql("SELECT json_agg(DISTINCT b.articles_id)::text FROM articles_blocks b JOIN headings h ON b.collection = 'headings' AND h.id = b.item::int WHERE h.title LIKE 'Section 1:%'",
    )
    .await;
    let ids: Vec<Value> = r.body["data"].as_array().map(|a| a.iter().map(|x| x["id"].clone()).collect()).unwrap_or_default();
    assert_eq!(Value::Array(ids), truth);
    // bad scopes
    let r = app.get("/items/articles_blocks?fields=item:authors.name").await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = app.get("/items/articles_blocks?filter[item][title][_eq]=x").await;
    assert_eq!(r.status, 400, "{}", r.body);
}
