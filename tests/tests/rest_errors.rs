//! Bad input on the REST edge: each gets Directus's error code and HTTP status, never a 500.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, app, assert_error, send};
use reqwest::Method;

#[tokio::test]
async fn bad_queries_get_their_codes() {
    let app = app(Dataset::Pagila);
    let cases = [
        ("/items/nope", 403, "FORBIDDEN"),
        ("/items/film?fields=nope", 403, "FORBIDDEN"),
        ("/items/film?filter[nope][_eq]=1", 403, "FORBIDDEN"),
        ("/items/film?sort=nope", 403, "FORBIDDEN"),
        ("/items/film?filter={bad json", 400, "INVALID_QUERY"),
        ("/items/film?filter[title][_like]=x", 400, "INVALID_QUERY"),
        ("/items/film?limit=ten", 400, "INVALID_QUERY"),
        ("/items/film?limit=-5", 400, "INVALID_QUERY"),
        ("/items/film?page=-1", 400, "INVALID_QUERY"),
        ("/items/film?filter[film_id][_eq]=abc", 400, "INVALID_QUERY"),
        ("/items/film?filter[last_update][_gt]=not-a-date", 400, "INVALID_QUERY"),
        ("/items/film?filter[rating][_eq]=XXX", 400, "INVALID_QUERY"),
        ("/items/film?fields=title.x", 400, "INVALID_QUERY"),
        ("/items/film?filter[language_id][_some][name][_eq]=x", 400, "INVALID_QUERY"),
        ("/items/film?sort=actors.actor_id", 400, "INVALID_QUERY"),
        ("/items/film?aggregate[sum]=title", 400, "INVALID_QUERY"),
        ("/items/film?aggregate[median]=length", 400, "INVALID_QUERY"),
        ("/items/film?aggregate[count]=*&meta=*", 400, "INVALID_QUERY"),
        ("/items/film?aggregate[count]=*&groupBy[]=rating&sort=title", 400, "INVALID_QUERY"),
        ("/items/film?groupBy[]=actors", 400, "INVALID_QUERY"),
        ("/items/film?deep[title][_limit]=1", 400, "INVALID_QUERY"),
        ("/items/film?deep[language_id][_limit]=1", 400, "INVALID_QUERY"),
        ("/items/film?deep[nope][_limit]=1", 403, "FORBIDDEN"),
        ("/items/film?alias[a]=language_id.name", 400, "INVALID_QUERY"),
        ("/items/film?alias[title]=description", 400, "INVALID_QUERY"),
        ("/items/film?filter[special_features][_in]=Trailers", 400, "INVALID_QUERY"),
        ("/items/film?fields=*.*.*.*.*.*.*.*.*.*", 400, "INVALID_QUERY"),
        ("/items/film/3000000000", 403, "FORBIDDEN"),
        ("/items/rental/2022-01-01", 403, "FORBIDDEN"),
        ("/items/film?fields=decade(last_update)", 400, "INVALID_QUERY"),
        ("/items/film?fields=year(title)", 400, "INVALID_QUERY"),
        ("/items/film?fields=count(title)", 400, "INVALID_QUERY"),
        ("/items/film?filter[year(title)][_eq]=1", 400, "INVALID_QUERY"),
        ("/items/film?sort=-year(nope)", 403, "FORBIDDEN"),
        ("/items/film?filter[last_update][_gt]=$NOW(soon)", 400, "INVALID_QUERY"),
        // Not a dynamic variable: a plain value (as in Directus), here not an integer.
        ("/items/film?filter[film_id][_eq]=$YESTERDAY", 400, "INVALID_QUERY"),
        ("/items/film/999999", 403, "FORBIDDEN"),
        ("/items/film/abc", 403, "FORBIDDEN"),
        ("/items/film_actor/1", 403, "FORBIDDEN"),
        ("/nothing/here", 404, "ROUTE_NOT_FOUND"),
    ];
    for (path, status, code) in cases {
        let r = app.get(path).await;
        assert_error(&r, status, code, path);
    }
}

#[tokio::test]
async fn tokens_are_checked() {
    let app = app(Dataset::Pagila);
    let r = send(app, Method::GET, "/items/film?limit=1", None, &[], None).await;
    assert_error(&r, 403, "FORBIDDEN", "no token");
    let r = send(app, Method::GET, "/items/film?limit=1", Some("wrong"), &[], None).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "bad token");
    let r = send(app, Method::GET, "/items/film?limit=1", None, &[("authorization", "Basic YTpi")], None).await;
    assert_error(&r, 403, "FORBIDDEN", "another scheme is the public role");
    let r = send(app, Method::GET, "/items/film?limit=1", None, &[("authorization", &format!("BEARER {ADMIN_TOKEN}"))], None).await;
    assert_eq!(r.status, 200, "scheme is case-insensitive: {}", r.body);
    let r = send(app, Method::GET, &format!("/items/film?limit=1&access_token={ADMIN_TOKEN}"), None, &[], None).await;
    assert_eq!(r.status, 200, "query token: {}", r.body);
    let r = send(app, Method::GET, &format!("/items/film?limit=1&access_token={ADMIN_TOKEN}"), Some(ADMIN_TOKEN), &[], None).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "both header and query token");
}

#[tokio::test]
async fn methods_media_types_and_bodies() {
    let app = app(Dataset::Pagila);
    let r = send(app, Method::PUT, "/items/film/1", Some(ADMIN_TOKEN), &[], None).await;
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(r.headers.get("allow").and_then(|v| v.to_str().ok()), Some("GET, PATCH, DELETE"));
    let search = Method::from_bytes(b"SEARCH").unwrap_or(Method::GET);
    let r = send(app, search.clone(), "/items/film", Some(ADMIN_TOKEN), &[], Some(("text/plain", "{}".into()))).await;
    assert_error(&r, 415, "UNSUPPORTED_MEDIA_TYPE", "SEARCH text/plain");
    let r = send(app, search.clone(), "/items/film", Some(ADMIN_TOKEN), &[], Some(("application/json", "{oops".into()))).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "SEARCH bad json");
    let r = send(app, search, "/items/film", Some(ADMIN_TOKEN), &[], Some(("application/json", "{\"query\": 5}".into()))).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "SEARCH query not object");
}

#[tokio::test]
async fn server_endpoints() {
    let app = app(Dataset::Pagila);
    let r = send(app, Method::GET, "/server/health", None, &[], None).await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("ok")));
    let r = send(app, Method::GET, "/server/ping", None, &[], None).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let app = app(Dataset::Pagila);
    let search = Method::from_bytes(b"SEARCH").unwrap_or(Method::GET);
    let big = format!("{{\"query\":{{\"search\":\"{}\"}}}}", "x".repeat(1_100_000));
    let r = send(app, search, "/items/film", Some(ADMIN_TOKEN), &[], Some(("application/json", big))).await;
    assert_error(&r, 413, "CONTENT_TOO_LARGE", "SEARCH over MAX_PAYLOAD_SIZE");
}
