//! GraphQL reads on the demo schema and Pagila (docs/graphql.md; Directus docs
//! "GraphQL"): each root field and argument, nested relations with their own arguments, aliases,
//! M2A fragments, functions, aggregates; the same data as REST.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{Dataset, app, gql_data};
use serde_json::{Value, json};

#[tokio::test]
async fn list_with_nested_relations_matches_rest() {
    let app = app(Dataset::Demo);
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "{ articles(limit: 3, sort: [\"-id\"], filter: {status: {_eq: \"published\"}}) { id title author { name } tags(limit: 1, sort: [\"-id\"]) { tags_id { name } } } }", json!({})).await;
    assert_eq!(g.status, 200, "{}", g.body);
    assert!(g.body.get("errors").is_none(), "{}", g.body);
    let r = app.get("/items/articles?limit=3&sort=-id&filter[status][_eq]=published&fields=id,title,author.name,tags.tags_id.name&deep[tags][_limit]=1&deep[tags][_sort]=-id").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut rest = r.body["data"].clone();
    for a in rest.as_array_mut().into_iter().flatten() {
        a["id"] = Value::String(a["id"].to_string());
    }
    assert_eq!(g.body["data"]["articles"], rest);
}

#[tokio::test]
async fn by_id_aliases_variables_fragments_and_functions() {
    let app = app(Dataset::Demo);
    let q = "query One($id: ID!, $skip: Boolean!) {
        a: articles_by_id(id: $id) { ...Core published_at_func { year month } writer: author { name } author { id created_at_func { year } } }
        b: articles_by_id(id: 2) { title @skip(if: $skip) id }
        first: articles(limit: 1, sort: [\"id\"]) { id }
        last: articles(limit: 1, sort: [\"-id\"]) { id }
      }
      fragment Core on articles { id title }";
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), q, json!({"id": 1, "skip": true})).await;
    let d = gql_data(&g);
    let truth = app.sql("SELECT json_build_object('id', a.id::text, 'title', a.title, 'y', extract(year FROM a.published_at)::int, 'm', extract(month FROM a.published_at)::int, 'name', au.name, 'author', au.id::text)::text FROM articles a LEFT JOIN authors au ON au.id = a.author WHERE a.id = 1").await;
    assert_eq!(d["a"]["id"], truth["id"]);
    assert_eq!(d["a"]["title"], truth["title"]);
    assert_eq!(d["a"]["published_at_func"]["year"], truth["y"]);
    assert_eq!(d["a"]["published_at_func"]["month"], truth["m"]);
    assert_eq!(d["a"]["writer"]["name"], truth["name"]);
    assert_eq!(d["a"]["author"]["id"], truth["author"]);
    let born = app.sql("SELECT to_json(extract(year FROM au.created_at)::int)::text FROM articles a JOIN authors au ON au.id = a.author WHERE a.id = 1").await;
    assert_eq!(d["a"]["author"]["created_at_func"]["year"], born, "a function of a related item's field");
    assert_eq!(d["b"], json!({"id": "2"}), "@skip drops the field");
    let max = app.sql("SELECT to_json(max(id)::text)::text FROM articles").await;
    assert_eq!(d["first"], json!([{"id": "1"}]));
    assert_eq!(d["last"][0]["id"], max);
}

#[tokio::test]
async fn one_relation_twice_with_different_arguments() {
    let app = app(Dataset::Demo);
    let q = "{ authors_by_id(id: 1) { newest: articles(limit: 2, sort: [\"-id\"]) { id } oldest: articles(limit: 1, sort: [\"id\"]) { id } } }";
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), q, json!({})).await;
    let d = &gql_data(&g)["authors_by_id"];
    let newest =
        app.sql("SELECT json_agg(json_build_object('id', id::text))::text FROM (SELECT id FROM articles WHERE author = 1 ORDER BY id DESC LIMIT 2) t").await;
    let oldest =
        app.sql("SELECT json_agg(json_build_object('id', id::text))::text FROM (SELECT id FROM articles WHERE author = 1 ORDER BY id LIMIT 1) t").await;
    assert_eq!(d["newest"], newest);
    assert_eq!(d["oldest"], oldest);
}

#[tokio::test]
async fn many_to_any_items_by_inline_fragment_and_filter() {
    let app = app(Dataset::Demo);
    let q = "{ articles_by_id(id: 1) { blocks(sort: [\"sort\"]) { collection item { __typename ... on headings { title } ... on text_blocks { body } } } } }";
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), q, json!({})).await;
    let blocks = gql_data(&g)["articles_by_id"]["blocks"].as_array().cloned().unwrap_or_default();
    let truth = app.sql("SELECT json_agg(CASE WHEN b.collection = 'headings' THEN json_build_object('collection', b.collection, 'item', json_build_object('__typename', 'headings', 'title', h.title)) ELSE json_build_object('collection', b.collection, 'item', json_build_object('__typename', 'text_blocks', 'body', t.body)) END ORDER BY b.sort)::text FROM articles_blocks b LEFT JOIN headings h ON b.collection = 'headings' AND h.id::text = b.item LEFT JOIN text_blocks t ON b.collection = 'text_blocks' AND t.id::text = b.item WHERE b.articles_id = 1").await;
    assert_eq!(Value::Array(blocks), truth);
    // `item__headings` filters through the M2A scope (docs/graphql.md).
    let q = "{ articles(limit: 100, sort: [\"id\"], filter: {blocks: {item__headings: {title: {_starts_with: \"Section 7:\"}}}}) { id } }";
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), q, json!({})).await;
    let ids = app.sql("SELECT json_agg(json_build_object('id', b.articles_id::text) ORDER BY b.articles_id)::text FROM articles_blocks b JOIN headings h ON b.collection = 'headings' AND h.id::text = b.item WHERE h.title LIKE 'Section 7:%'").await;
    assert_eq!(gql_data(&g)["articles"], ids);
}

#[tokio::test]
async fn filters_with_functions_relations_and_quantifiers() {
    let app = app(Dataset::Demo);
    let q = "{ a: articles(limit: -1, filter: {_and: [{published_at_func: {year: {_eq: 2024}}}, {author: {name: {_icontains: \"a\"}}}]}) { id }
               b: articles(limit: -1, filter: {tags: {_none: {tags_id: {name: {_eq: \"rust\"}}}}}) { id }
               c: authors(limit: -1, filter: {articles_func: {count: {_gt: 200}}}) { id } }";
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), q, json!({})).await;
    let d = gql_data(&g);
    let count = |v: &Value| v.as_array().map(Vec::len).unwrap_or(0) as i64;
    let a = app
        .sql("SELECT count(*)::text FROM articles a JOIN authors au ON au.id = a.author WHERE extract(year FROM a.published_at) = 2024 AND au.name ILIKE '%a%'")
        .await;
    let b = app.sql("SELECT count(*)::text FROM articles a WHERE NOT EXISTS (SELECT 1 FROM articles_tags x JOIN tags t ON t.id = x.tags_id WHERE x.articles_id = a.id AND t.name = 'rust')").await;
    let c = app.sql("SELECT count(*)::text FROM authors au WHERE (SELECT count(*) FROM articles a WHERE a.author = au.id) > 200").await;
    assert_eq!(count(&d["a"]), a.as_i64().unwrap_or(-1));
    assert_eq!(count(&d["b"]), b.as_i64().unwrap_or(-1));
    assert_eq!(count(&d["c"]), c.as_i64().unwrap_or(-1));
}

#[tokio::test]
async fn aggregates_with_group_by_match_rest() {
    let app = app(Dataset::Demo);
    let q = "{ articles_aggregated(groupBy: [\"status\"], sort: [\"status\"], filter: {rating: {_nnull: true}}) { group countAll count { id rating } avg { rating } max { word_count } } }";
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), q, json!({})).await;
    let rows = gql_data(&g)["articles_aggregated"].as_array().cloned().unwrap_or_default();
    let r = app.get("/items/articles?groupBy[]=status&sort=status&filter[rating][_nnull]=true&aggregate[countAll]=*&aggregate[count]=id,rating&aggregate[avg]=rating&aggregate[max]=word_count").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rest = r.body["data"].as_array().cloned().unwrap_or_default();
    assert!(!rows.is_empty());
    assert_eq!(rows.len(), rest.len());
    for (g, r) in rows.iter().zip(&rest) {
        assert_eq!(g["group"], json!({"status": r["status"]}));
        // REST has Directus's JSON types (int8 results as strings); GraphQL Int/Float.
        assert_eq!(g["countAll"], numbers(&r["countAll"]));
        assert_eq!(g["count"], numbers(&r["count"]));
        assert_eq!(g["max"], numbers(&r["max"]));
        let (ga, ra) = (g["avg"]["rating"].as_f64(), r["avg"]["rating"].as_f64().or_else(|| r["avg"]["rating"].as_str().and_then(|s| s.parse().ok())));
        assert!(ga.is_some() && (ga.unwrap_or(0.0) - ra.unwrap_or(1.0)).abs() < 1e-9, "{g} vs {r}");
    }
}

#[tokio::test]
async fn singleton_and_versions() {
    let app = app(Dataset::Demo);
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "{ settings { site_name per_page featured { title } } }", json!({})).await;
    let r = app.get("/items/settings?fields=site_name,per_page,featured.title").await;
    assert_eq!(gql_data(&g)["settings"], r.body["data"]);
    // A version of article 3 changes its title; the version read shows it, the live item not.
    let key = format!("gql-{}", std::process::id());
    let create = e2e_tests::send(
        app,
        reqwest::Method::POST,
        "/versions",
        Some(e2e_tests::ADMIN_TOKEN),
        &[],
        Some(("application/json", json!({"key": key, "name": "draft", "collection": "articles", "item": "3"}).to_string())),
    )
    .await;
    assert_eq!(create.status, 200, "{}", create.body);
    let id = create.body["data"]["id"].to_string().trim_matches('"').to_owned();
    let save = e2e_tests::send(
        app,
        reqwest::Method::POST,
        &format!("/versions/{id}/save"),
        Some(e2e_tests::ADMIN_TOKEN),
        &[],
        Some(("application/json", json!({"title": "Versioned title"}).to_string())),
    )
    .await;
    assert_eq!(save.status, 200, "{}", save.body);
    let g = app
        .graphql(
            "/graphql",
            Some(e2e_tests::ADMIN_TOKEN),
            "query($v: String!) { articles_by_version(id: 3, version: $v) { id title } articles_by_id(id: 3) { title } }",
            json!({"v": key}),
        )
        .await;
    let d = gql_data(&g);
    assert_eq!(d["articles_by_version"]["title"], "Versioned title");
    assert_ne!(d["articles_by_id"]["title"], "Versioned title");
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "{ settings_by_version(version: \"main\") { site_name } }", json!({})).await;
    assert_eq!(gql_data(&g)["settings_by_version"]["site_name"], r.body["data"]["site_name"]);
}

#[tokio::test]
async fn errors_carry_the_spec_codes() {
    let app = app(Dataset::Demo);
    // A missing item: `null` without an error, as Directus answers `_by_id`.
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "{ articles_by_id(id: 999999) { id } }", json!({})).await;
    assert_eq!(g.status, 200, "{}", g.body);
    assert_eq!(g.body, json!({"data": {"articles_by_id": null}}));
    // FORBIDDEN inside a normal GraphQL response, with the field's path.
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "{ articles_by_version(id: 999999, version: \"nope\") { id } }", json!({})).await;
    assert_eq!(g.status, 200, "{}", g.body);
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "FORBIDDEN", "{}", g.body);
    assert_eq!(g.body["errors"][0]["path"], json!(["articles_by_version"]));
    assert_eq!(g.body["data"]["articles_by_version"], Value::Null);
    // Unknown fields fail validation: 400 GRAPHQL_VALIDATION, nothing runs.
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "{ articles { nope } }", json!({})).await;
    assert_eq!(g.status, 400, "{}", g.body);
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION");
    // A bad sort reaches the core: INVALID_QUERY.
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "{ articles(sort: [\"nope(\"]) { id } }", json!({})).await;
    let code = g.body["errors"][0]["extensions"]["code"].as_str().unwrap_or_default().to_owned();
    assert!(code == "INVALID_QUERY" || code == "FORBIDDEN", "{}", g.body);
    // No token: the public role reads nothing here, so its schema has no `articles` (Directus
    // builds the schema per role: a validation error, not FORBIDDEN).
    let g = app.graphql("/graphql", None, "{ articles(limit: 1) { id } }", json!({})).await;
    assert_eq!(g.status, 400, "{}", g.body);
    assert_eq!(g.body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION", "{}", g.body);
    assert!(g.body["errors"][0]["extensions"]["errors"][0]["message"].as_str().unwrap_or_default().contains("Unknown field \"articles\""), "{}", g.body);
    // A bad token: INVALID_TOKEN.
    let g = app.graphql("/graphql", Some("not-a-token"), "{ articles(limit: 1) { id } }", json!({})).await;
    let code = g.body["errors"][0]["extensions"]["code"].clone();
    assert!(code == "INVALID_TOKEN" || code == "INVALID_CREDENTIALS", "{}", g.body);
    // Too deep: refused before anything runs.
    let deep = format!("{{ articles {{ {} id {} }} }}", "author { articles { ".repeat(12), "} } ".repeat(12));
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), &deep, json!({})).await;
    assert_eq!(g.status, 400, "{}", g.body);
    // Export is REST only: no such argument.
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), "{ articles(export: \"csv\") { id } }", json!({})).await;
    assert_eq!(g.status, 400, "{}", g.body);
}

#[tokio::test]
async fn get_requests_and_the_direct_edge_work_too() {
    let app = app(Dataset::Demo);
    let client = e2e_tests::http_client().build().expect("client");
    let url = format!(
        "{}/graphql?query={}&access_token={}",
        app.graphql_url,
        "%7B%20tags(limit%3A%202%2C%20sort%3A%20%5B%22id%22%5D)%20%7B%20id%20name%20%7D%20%7D",
        e2e_tests::ADMIN_TOKEN
    );
    let res = client.get(url).send().await.expect("GET /graphql");
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.expect("json");
    let truth =
        app.sql("SELECT json_agg(json_build_object('id', id::text, 'name', name) ORDER BY id)::text FROM (SELECT * FROM tags ORDER BY id LIMIT 2) t").await;
    assert_eq!(body["data"]["tags"], truth);
    // GET never runs a mutation (GraphQL over HTTP): 405 with Allow: POST.
    let url = format!("{}/graphql?query=mutation%20%7B%20delete_tags_item(id%3A%201)%20%7B%20id%20%7D%20%7D", app.graphql_url);
    let res = client.get(url).bearer_auth(e2e_tests::ADMIN_TOKEN).send().await.expect("GET mutation");
    assert_eq!(res.status().as_u16(), 405);
    assert_eq!(res.headers().get("allow").and_then(|v| v.to_str().ok()), Some("POST"));
    let left = app.sql("SELECT count(*)::text FROM tags WHERE id = 1").await;
    assert_eq!(left, json!(1));
    // Bodies past MAX_PAYLOAD_SIZE (1 MiB) are refused without being buffered.
    let big = format!("{{\"query\": \"{{ tags {{ id }} }}\", \"x\": \"{}\"}}", "a".repeat(1_100_000));
    let res = client.post(format!("{}/graphql", app.graphql_url)).header("content-type", "application/json").body(big).send().await.expect("POST");
    assert_eq!(res.status().as_u16(), 413);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["errors"][0]["extensions"]["code"], "CONTENT_TOO_LARGE");
}

#[tokio::test]
async fn pagila_schema_builds_with_enums_arrays_and_composite_keys() {
    let app = app(Dataset::Pagila);
    let q = "{ film(filter: {rating: {_eq: \"PG-13\"}}, limit: 3, sort: [\"film_id\"]) { film_id title rating special_features language_id { name } actors(limit: 2, sort: [\"actor_id\"]) { actor_id { first_name } } }
               film_actor_by_id(id: \"1,1\") { actor_id { actor_id } film_id { film_id } }
               film_aggregated(groupBy: [\"rating\"], sort: [\"rating\"]) { group countAll sum { rental_rate } } }";
    let g = app.graphql("/graphql", Some(e2e_tests::ADMIN_TOKEN), q, json!({})).await;
    let d = gql_data(&g);
    let r = app.get("/items/film?filter[rating][_eq]=PG-13&limit=3&sort=film_id&fields=film_id,title,rating,special_features,language_id.name,actors.actor_id.first_name&deep[actors][_limit]=2&deep[actors][_sort]=actor_id").await;
    let mut rest = r.body["data"].clone();
    for f in rest.as_array_mut().into_iter().flatten() {
        f["film_id"] = Value::String(f["film_id"].to_string());
    }
    assert_eq!(d["film"], rest);
    assert_eq!(d["film_actor_by_id"]["film_id"]["film_id"], "1");
    let groups = app.sql("SELECT count(DISTINCT rating)::text FROM film").await;
    assert_eq!(d["film_aggregated"].as_array().map(Vec::len).unwrap_or(0) as i64, groups.as_i64().unwrap_or(-1));
}

/// `v` with every string that is a whole number turned into that number.
fn numbers(v: &Value) -> Value {
    match v {
        Value::String(s) => s.parse::<i64>().map(Value::from).unwrap_or_else(|_| v.clone()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), numbers(v))).collect()),
        other => other.clone(),
    }
}

/// Root fields answer in the order the query selects them, whichever finishes first (the
/// slow `_aggregated` over every article first, quick reads after), through fragments too.
#[tokio::test]
async fn root_fields_keep_the_selection_order() {
    let app = app(Dataset::Demo);
    let query = "query { slow: articles_aggregated(groupBy: [\"status\", \"author\"]) { countAll } b: articles_by_id(id: 2) { id } ...F a: articles_by_id(id: 1) { id } } fragment F on Query { m: authors(limit: 1) { id } }";
    let body = json!({ "query": query }).to_string();
    let client = e2e_tests::http_client().build().expect("client");
    for _ in 0..5 {
        let text = client
            .post(format!("{}/graphql", app.rest_url))
            .bearer_auth(e2e_tests::ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .expect("answer")
            .text()
            .await
            .expect("body");
        let at = |k: &str| text.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("{k} in {text}"));
        assert!(at("slow") < at("b") && at("b") < at("m") && at("m") < at("a"), "{text}");
    }
}
