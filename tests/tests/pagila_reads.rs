//! REST reads on Pagila checked against SQL ground truth (docs/testing.md "Tests").

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{Dataset, app, column};
use serde_json::{Value, json};

#[tokio::test]
async fn films_with_language_name_match_sql() {
    let app = app(Dataset::Pagila);
    let r = app.get("/items/film?fields=film_id,title,language_id.name&sort=film_id&limit=5").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app.sql("SELECT json_agg(json_build_object('film_id', f.film_id, 'title', f.title, 'language_id', json_build_object('name', l.name)) ORDER BY f.film_id)::text \
         FROM (SELECT * FROM film ORDER BY film_id LIMIT 5) f JOIN language l ON l.language_id = f.language_id",
    )
    .await;
    assert_eq!(r.body["data"], truth);
}

#[tokio::test]
async fn pg13_films_with_actors_through_the_junction_alias() {
    let app = app(Dataset::Pagila);
    let r = app.get("/items/film?fields=film_id,title,language_id.name,actors.actor_id.first_name&filter[rating][_eq]=PG-13&limit=5").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let data = r.body["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(data.len(), 5);
    for film in &data {
        let id = film["film_id"].as_i64().unwrap_or_default();
        let truth = app
            .sql(&format!("SELECT json_agg(a.first_name ORDER BY fa.actor_id)::text FROM film_actor fa JOIN actor a USING (actor_id) WHERE fa.film_id = {id}"))
            .await;
        let names: Vec<Value> = film["actors"].as_array().map(|a| a.iter().map(|x| x["actor_id"]["first_name"].clone()).collect()).unwrap_or_default();
        assert_eq!(Value::Array(names), truth, "actors of film {id}");
        let rating = app.sql(&format!("SELECT to_json(rating)::text FROM film WHERE film_id = {id}")).await;
        assert_eq!(rating, json!("PG-13"));
    }
    // The first five PG-13 films by key, as SQL lists them.
    let ids = app.sql("SELECT json_agg(film_id)::text FROM (SELECT film_id FROM film WHERE rating = 'PG-13' ORDER BY film_id LIMIT 5) x").await;
    assert_eq!(Value::Array(column(&r.body["data"], "film_id")), ids);
}

#[tokio::test]
async fn default_o2m_alias_lists_keys_and_composite_keys_join_with_commas() {
    let app = app(Dataset::Pagila);
    // language is referenced twice by film: aliases are disambiguated by the foreign key column.
    let r = app.get("/items/language/2?fields=language_id,film_language_id,film_original_language_id").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body["data"]["film_language_id"].is_array());
    // film_actor has a composite primary key (actor_id, film_id).
    let r = app.get("/items/film_actor/1,1?fields=actor_id.last_name,film_id.title").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"], app.sql("SELECT json_build_object('actor_id', json_build_object('last_name', a.last_name), 'film_id', json_build_object('title', f.title))::text FROM actor a, film f WHERE a.actor_id = 1 AND f.film_id = 1").await);
    // The actor's films through the junction, as keys "actor_id,film_id".
    let r = app.get("/items/actor/1?fields=films").await;
    let truth = app.sql("SELECT json_agg(actor_id || ',' || film_id ORDER BY actor_id, film_id)::text FROM film_actor WHERE actor_id = 1").await;
    assert_eq!(r.body["data"]["films"], truth);
}

#[tokio::test]
async fn customers_filtered_through_three_m2o_levels() {
    let app = app(Dataset::Pagila);
    let r = app
        .get("/items/customer?fields=customer_id,address_id.city_id.country_id.country&filter[address_id][city_id][country_id][country][_eq]=Canada&limit=-1")
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app.sql("SELECT json_agg(c.customer_id ORDER BY c.customer_id)::text FROM customer c JOIN address a USING (address_id) JOIN city ci USING (city_id) JOIN country co USING (country_id) WHERE co.country = 'Canada'",
    )
    .await;
    assert_eq!(Value::Array(column(&r.body["data"], "customer_id")), truth);
    for c in r.body["data"].as_array().into_iter().flatten() {
        assert_eq!(c["address_id"]["city_id"]["country_id"]["country"], "Canada");
    }
}

#[tokio::test]
async fn rental_pages_sorted_descending_match_offsets() {
    let app = app(Dataset::Pagila);
    for page in 1..=3 {
        let r = app.get(&format!("/items/rental?fields=rental_id&sort=-rental_date&limit=10&page={page}")).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let truth = app
            .sql(&format!(
                "SELECT json_agg(rental_id)::text FROM (SELECT rental_id FROM rental ORDER BY rental_date DESC, rental_id LIMIT 10 OFFSET {}) x",
                (page - 1) * 10
            ))
            .await;
        assert_eq!(Value::Array(column(&r.body["data"], "rental_id")), truth, "page {page}");
    }
    // offset is the same as page when page is absent
    let a = app.get("/items/rental?fields=rental_id&sort=-rental_date&limit=10&offset=20").await;
    let b = app.get("/items/rental?fields=rental_id&sort=-rental_date&limit=10&page=3").await;
    assert_eq!(a.body, b.body);
}

#[tokio::test]
async fn sort_through_m2o_path() {
    let app = app(Dataset::Pagila);
    let r = app.get("/items/city?fields=city_id&sort=country_id.country,-city&limit=15").await;
    let truth = app.sql("SELECT json_agg(city_id)::text FROM (SELECT ci.city_id FROM city ci LEFT JOIN country co USING (country_id) ORDER BY co.country, ci.city DESC, ci.city_id LIMIT 15) x").await;
    assert_eq!(Value::Array(column(&r.body["data"], "city_id")), truth);
}

#[tokio::test]
async fn meta_counts_are_exact() {
    let app = app(Dataset::Pagila);
    let r = app.get("/items/film?fields=film_id&filter[rating][_eq]=R&filter[length][_gt]=100&meta=total_count,filter_count&limit=1").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let total = app.sql("SELECT count(*)::text FROM film").await;
    let filtered = app.sql("SELECT count(*)::text FROM film WHERE rating = 'R' AND length > 100").await;
    assert_eq!(r.body["meta"]["total_count"], total);
    assert_eq!(r.body["meta"]["filter_count"], filtered);
    // relational filter: counts films, not joined rows
    let r = app.get("/items/film?fields=film_id&filter[actors][actor_id][last_name][_eq]=GUINESS&meta=*&limit=-1").await;
    let truth = app.sql("SELECT count(*)::text FROM film f WHERE EXISTS (SELECT 1 FROM film_actor fa JOIN actor a USING (actor_id) WHERE fa.film_id = f.film_id AND a.last_name = 'GUINESS')").await;
    assert_eq!(r.body["meta"]["filter_count"], truth);
    assert_eq!(json!(r.body["data"].as_array().map(|a| a.len()).unwrap_or(0)), truth);
}

#[tokio::test]
async fn search_matches_string_fields_of_the_root_only() {
    let app = app(Dataset::Pagila);
    let r = app.get("/items/actor?fields=actor_id&search=nick&limit=-1").await;
    let truth = app.sql("SELECT json_agg(actor_id ORDER BY actor_id)::text FROM actor WHERE first_name ILIKE '%nick%' OR last_name ILIKE '%nick%'").await;
    assert_eq!(Value::Array(column(&r.body["data"], "actor_id")), truth);
    // LIKE metacharacters match literally
    let r = app.get("/items/actor?fields=actor_id&search=%25&limit=-1").await;
    assert_eq!(r.body["data"], json!([]));
}

#[tokio::test]
async fn filter_operators_match_sql() {
    let app = app(Dataset::Pagila);
    let cases = [
        ("filter[rental_rate][_gte]=4&filter[length][_lt]=60", "rental_rate >= 4 AND length < 60"),
        ("filter[rating][_in]=G,NC-17", "rating IN ('G', 'NC-17')"),
        ("filter[rating][_nin]=G,NC-17", "rating NOT IN ('G', 'NC-17')"),
        ("filter[title][_starts_with]=AL", "title LIKE 'AL%'"),
        ("filter[title][_icontains]=love", "title ILIKE '%love%'"),
        ("filter[title][_nends_with]=E", "title NOT LIKE '%E'"),
        ("filter[original_language_id][_null]=true", "original_language_id IS NULL"),
        ("filter[length][_between]=50,55", "length BETWEEN 50 AND 55"),
        ("filter[special_features][_contains]=Trailers", "special_features::text LIKE '%Trailers%'"),
        ("filter[release_year][_eq]=2006&filter[rating][_neq]=G", "release_year = 2006 AND rating <> 'G'"),
        // a value the `year` domain's CHECK refuses still compares (as the base type): no match
        ("filter[release_year][_eq]=1800", "release_year = 1800"),
        ("filter={\"_or\":[{\"length\":{\"_lt\":48}},{\"title\":{\"_eq\":\"ZORRO ARK\"}}]}", "length < 48 OR title = 'ZORRO ARK'"),
        ("filter[actors][_none][actor_id][_eq]=1", "NOT EXISTS (SELECT 1 FROM film_actor fa WHERE fa.film_id = film.film_id AND fa.actor_id = 1)"),
    ];
    for (qs, sql) in cases {
        let r = app.get(&format!("/items/film?fields=film_id&limit=-1&{qs}")).await;
        assert_eq!(r.status, 200, "{qs}: {}", r.body);
        let truth = app.sql(&format!("SELECT coalesce(json_agg(film_id ORDER BY film_id), '[]')::text FROM film WHERE {sql}")).await;
        assert_eq!(Value::Array(column(&r.body["data"], "film_id")), truth, "{qs}");
    }
}

#[tokio::test]
async fn every_pagila_type_reads() {
    let app = app(Dataset::Pagila);
    // enum, domain, text[], tsvector, numeric, timestamptz, char(n) via language.name
    let r = app.get("/items/film/1?fields=rating,release_year,special_features,fulltext,rental_rate,last_update").await;
    assert_eq!(r.status, 200, "{}", r.body);
    // timestamptz as Directus writes it: UTC, milliseconds, `Z`.
    let truth = app.sql("SELECT row_to_json(x)::text FROM (SELECT rating, release_year, special_features, fulltext, rental_rate::text, to_char(last_update AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS last_update FROM film WHERE film_id = 1) x").await;
    assert_eq!(r.body["data"], truth);
    // bytea
    let r = app.get("/items/staff/1?fields=picture").await;
    assert_eq!(r.status, 200, "{}", r.body);
    // views are readable collections
    let r = app.get("/items/film_list?limit=3&sort=fid").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"].as_array().map(|a| a.len()), Some(3));
    // the partitioned parent is a collection, its partitions are hidden, and the partitions'
    // foreign keys are lifted to it
    let r = app.get("/items/payment?fields=payment_id,customer_id.last_name&sort=payment_id&limit=1").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body["data"][0]["customer_id"]["last_name"].is_string(), "{}", r.body);
    let r = app.get("/items/payment_p2022_01").await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn search_method_takes_the_query_from_the_body() {
    let app = app(Dataset::Pagila);
    let body = json!({"query": {"fields": ["film_id"], "filter": {"rating": {"_eq": "G"}}, "sort": ["-film_id"], "limit": 3}});
    let r = e2e_tests::send(
        app,
        reqwest::Method::from_bytes(b"SEARCH").unwrap_or(reqwest::Method::GET),
        "/items/film",
        Some(e2e_tests::ADMIN_TOKEN),
        &[],
        Some(("application/json", body.to_string())),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let truth = app.sql("SELECT json_agg(film_id)::text FROM (SELECT film_id FROM film WHERE rating = 'G' ORDER BY film_id DESC LIMIT 3) x").await;
    assert_eq!(Value::Array(column(&r.body["data"], "film_id")), truth);
}

#[tokio::test]
async fn wildcards_expand_relations_one_level() {
    let app = app(Dataset::Pagila);
    let r = app.get("/items/address/1?fields=*,city_id.*").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["data"]["city_id"]["city"],
        app.sql("SELECT to_json(city)::text FROM city WHERE city_id = (SELECT city_id FROM address WHERE address_id = 1)").await
    );
    // `*` alone gives the M2O key and the O2M key lists
    let r = app.get("/items/address/1").await;
    assert!(r.body["data"]["city_id"].is_number(), "{}", r.body);
    assert!(r.body["data"]["customer"].is_array(), "{}", r.body);
    // `*.*` expands every relation of the first level
    let r = app.get("/items/city/1?fields=*.*").await;
    assert!(r.body["data"]["country_id"]["country"].is_string(), "{}", r.body);
    assert!(r.body["data"]["address"].as_array().is_some_and(|a| a.iter().all(|x| x.is_object())), "{}", r.body);
}
