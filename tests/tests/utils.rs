//! Directus's utilities (README "Utilities"): random strings, argon2 hashes made and checked,
//! and clearing the cache, through REST `/utils` and GraphQL `utils_*`; from the attacker's
//! side, only the admin clears caches, and hash input is bounded.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::fixture::{admin, call, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, app, assert_error, graphql_as};
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn random_strings_have_the_asked_length() {
    let app = app(Dataset::DemoWrites);
    let r = call(app, None, Method::GET, "/utils/random/string", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let a = r.body["data"].as_str().expect("a string").to_owned();
    assert!(a.len() == 32 && a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-'), "{a}");
    let r = call(app, None, Method::GET, "/utils/random/string?length=500", None).await;
    assert_eq!(r.body["data"].as_str().map(str::len), Some(500), "{}", r.body);
    assert_ne!(call(app, None, Method::GET, "/utils/random/string", None).await.body["data"], json!(a));
    for bad in ["0", "501", "-3", "ten", "1e9"] {
        let r = call(app, None, Method::GET, &format!("/utils/random/string?length={bad}"), None).await;
        assert_error(&r, 400, "INVALID_QUERY", bad);
    }
    let g = graphql_as(app, "/graphql/system", None, "mutation { utils_random_string(length: 12) }", json!({})).await;
    assert_eq!(g.body["data"]["utils_random_string"].as_str().map(str::len), Some(12), "{}", g.body);
}

#[tokio::test]
async fn hashes_are_argon2_and_verify_only_their_string() {
    let app = app(Dataset::DemoWrites);
    let r = call(app, None, Method::POST, "/utils/hash/generate", Some(json!({"string": "correct horse"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let hash = r.body["data"].as_str().expect("a hash").to_owned();
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    for (string, expected) in [("correct horse", true), ("correct horsf", false)] {
        let r = call(app, None, Method::POST, "/utils/hash/verify", Some(json!({"string": string, "hash": hash}))).await;
        assert_eq!((r.status, r.body["data"].clone()), (200, json!(expected)), "{}", r.body);
    }
    let r = call(app, None, Method::POST, "/utils/hash/verify", Some(json!({"string": "x", "hash": "not a hash"}))).await;
    assert_eq!(r.body["data"], false, "a malformed hash matches nothing: {}", r.body);
    for (path, body) in [
        ("/utils/hash/generate", json!({})),
        ("/utils/hash/generate", json!({"string": ""})),
        ("/utils/hash/generate", json!({"string": 42})),
        ("/utils/hash/generate", json!({"string": "x".repeat(5000)})),
        ("/utils/hash/verify", json!({"string": "x"})),
        ("/utils/hash/verify", json!({"string": "x", "hash": "y".repeat(5000)})),
    ] {
        let r = call(app, None, Method::POST, path, Some(body.clone())).await;
        assert_error(&r, 400, "INVALID_PAYLOAD", &format!("{path} {}", body.to_string().chars().take(40).collect::<String>()));
    }
    let g = graphql_as(app, "/graphql/system", None, "mutation { h: utils_hash_generate(string: \"abc\") }", json!({})).await;
    let hash = g.body["data"]["h"].as_str().expect("a hash").to_owned();
    let g = graphql_as(app, "/graphql/system", None, "mutation($h: String!) { utils_hash_verify(string: \"abc\", hash: $h) }", json!({"h": hash})).await;
    assert_eq!(g.body["data"]["utils_hash_verify"], true, "{}", g.body);
}

#[tokio::test]
async fn only_the_admin_clears_the_cache() {
    let app = app(Dataset::DemoWrites);
    let (token, _, _) = role(app, "CacheClearers32", json!([{"collection": "articles", "action": "read", "fields": ["*"]}])).await;
    for t in [None, Some(token.as_str())] {
        let r = call(app, t, Method::POST, "/utils/cache/clear", None).await;
        assert_error(&r, 403, "FORBIDDEN", "a non-admin clearing the cache");
        let g = graphql_as(app, "/graphql/system", t, "mutation { utils_cache_clear }", json!({})).await;
        assert_eq!(g.body["errors"][0]["extensions"]["code"], "FORBIDDEN", "{}", g.body);
    }
    let r = admin(app, Method::POST, "/utils/cache/clear?system", Value::Null).await;
    assert_eq!((r.status, r.body.clone()), (200, Value::Null), "200 with no body");
    let g = graphql_as(app, "/graphql/system", Some(ADMIN_TOKEN), "mutation { utils_cache_clear }", json!({})).await;
    assert_eq!(g.body["data"]["utils_cache_clear"], Value::Null, "{}", g.body);
    assert!(g.body.get("errors").is_none(), "{}", g.body);
    let r = call(app, None, Method::GET, "/utils/cache/clear", None).await;
    assert_eq!(r.status, 405, "{}", r.body);
}
