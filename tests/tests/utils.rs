//! Directus's utilities (docs/history.md "Utilities"): random strings, argon2 hashes made and checked,
//! and clearing the cache, through REST `/utils` and GraphQL `utils_*`; from the attacker's
//! side, only the admin clears caches, and hash input is bounded.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{app_role, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, app, assert_error};
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn random_strings_have_the_asked_length() {
    let app = app(Dataset::DemoWrites);
    let r = app.as_token(None, Method::GET, "/utils/random/string", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let a = r.body["data"].as_str().expect("a string").to_owned();
    assert!(a.len() == 32 && a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-'), "{a}");
    let r = app.as_token(None, Method::GET, "/utils/random/string?length=500", None).await;
    assert_eq!(r.body["data"].as_str().map(str::len), Some(500), "{}", r.body);
    assert_ne!(app.as_token(None, Method::GET, "/utils/random/string", None).await.body["data"], json!(a));
    for bad in ["0", "501", "-3", "ten", "1e9"] {
        let r = app.as_token(None, Method::GET, &format!("/utils/random/string?length={bad}"), None).await;
        assert_error(&r, 400, "INVALID_QUERY", bad);
    }
    let g = app.graphql("/graphql/system", None, "mutation { utils_random_string(length: 12) }", json!({})).await;
    assert_eq!(g.body["data"]["utils_random_string"].as_str().map(str::len), Some(12), "{}", g.body);
}

#[tokio::test]
async fn hashes_are_argon2_and_verify_only_their_string() {
    let app = app(Dataset::DemoWrites);
    let r = app.as_token(None, Method::POST, "/utils/hash/generate", Some(json!({"string": "correct horse"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let hash = r.body["data"].as_str().expect("a hash").to_owned();
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    for (string, expected) in [("correct horse", true), ("correct horsf", false)] {
        let r = app.as_token(None, Method::POST, "/utils/hash/verify", Some(json!({"string": string, "hash": hash}))).await;
        assert_eq!((r.status, r.body["data"].clone()), (200, json!(expected)), "{}", r.body);
    }
    let r = app.as_token(None, Method::POST, "/utils/hash/verify", Some(json!({"string": "x", "hash": "not a hash"}))).await;
    assert_eq!(r.body["data"], false, "a malformed hash matches nothing: {}", r.body);
    for (path, body) in [
        ("/utils/hash/generate", json!({})),
        ("/utils/hash/generate", json!({"string": ""})),
        ("/utils/hash/generate", json!({"string": 42})),
        ("/utils/hash/generate", json!({"string": "x".repeat(5000)})),
        ("/utils/hash/verify", json!({"string": "x"})),
        ("/utils/hash/verify", json!({"string": "x", "hash": "y".repeat(5000)})),
    ] {
        let r = app.as_token(None, Method::POST, path, Some(body.clone())).await;
        assert_error(&r, 400, "INVALID_PAYLOAD", &format!("{path} {}", body.to_string().chars().take(40).collect::<String>()));
    }
    let g = app.graphql("/graphql/system", None, "mutation { h: utils_hash_generate(string: \"abc\") }", json!({})).await;
    let hash = g.body["data"]["h"].as_str().expect("a hash").to_owned();
    let g = app.graphql("/graphql/system", None, "mutation($h: String!) { utils_hash_verify(string: \"abc\", hash: $h) }", json!({"h": hash})).await;
    assert_eq!(g.body["data"]["utils_hash_verify"], true, "{}", g.body);
}

#[tokio::test]
async fn only_the_admin_clears_the_cache() {
    let app = app(Dataset::DemoWrites);
    let (token, _, _) = role(app, "CacheClearers32", json!([{"collection": "articles", "action": "read", "fields": ["*"]}])).await;
    for t in [None, Some(token.as_str())] {
        let r = app.as_token(t, Method::POST, "/utils/cache/clear", None).await;
        assert_error(&r, 403, "FORBIDDEN", "a non-admin clearing the cache");
        let g = app.graphql("/graphql/system", t, "mutation { utils_cache_clear }", json!({})).await;
        assert_eq!(g.body["errors"][0]["extensions"]["code"], "FORBIDDEN", "{}", g.body);
    }
    let r = app.admin(Method::POST, "/utils/cache/clear?system", Value::Null).await;
    assert_eq!((r.status, r.body.clone()), (200, Value::Null), "200 with no body");
    let g = app.graphql("/graphql/system", Some(ADMIN_TOKEN), "mutation { utils_cache_clear }", json!({})).await;
    assert_eq!(g.body["data"]["utils_cache_clear"], Value::Null, "{}", g.body);
    assert!(g.body.get("errors").is_none(), "{}", g.body);
    let r = app.as_token(None, Method::GET, "/utils/cache/clear", None).await;
    assert_eq!(r.status, 405, "{}", r.body);
}

/// POSTs `content` as the file part (`media_type`) of an import into `collection`.
async fn import(app: &e2e_tests::TestApp, token: Option<&str>, collection: &str, media_type: &str, content: String) -> (u16, Value) {
    let part = reqwest::multipart::Part::text(content).file_name("import").mime_str(media_type).expect("media type");
    let client = e2e_tests::http_client().build().expect("client");
    let mut req = client.post(format!("{}/utils/import/{collection}", app.rest_url)).multipart(reqwest::multipart::Form::new().part("file", part));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.expect("post");
    let status = res.status().as_u16();
    (status, serde_json::from_str(&res.text().await.unwrap_or_default()).unwrap_or(Value::Null))
}

/// The tags whose name starts with `prefix`, as (name, id) sorted by name.
async fn tags(app: &e2e_tests::TestApp, prefix: &str) -> Vec<String> {
    let r = app.admin(Method::GET, &format!("/items/tags?filter[name][_starts_with]={prefix}&sort=name&fields=name&limit=-1"), Value::Null).await;
    r.body["data"].as_array().map(|a| a.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

#[tokio::test]
async fn imports_upsert_json_and_csv_in_one_transaction() {
    let app = app(Dataset::DemoWrites);
    let r = app.admin(Method::POST, "/items/tags", json!({"name": "imp32-existing"})).await;
    let existing = r.body["data"]["id"].clone();
    // JSON: a new tag, and the existing one updated by its key.
    let json_file = json!([{"name": "imp32-json"}, {"id": existing, "name": "imp32-existing-renamed"}]).to_string();
    let (status, body) = import(app, Some(ADMIN_TOKEN), "tags", "application/json", json_file).await;
    assert_eq!((status, body), (200, Value::Null), "200 with no body");
    assert_eq!(tags(app, "imp32").await, ["imp32-existing-renamed", "imp32-json"]);
    // CSV, with Directus's cell rules (a number-like name stays text).
    let (status, body) = import(app, Some(ADMIN_TOKEN), "tags", "text/csv", "name\nimp32-csv-a\nimp32-csv-1\n".into()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(tags(app, "imp32-csv").await, ["imp32-csv-1", "imp32-csv-a"]);
    // A bad item anywhere, or a malformed file, imports nothing at all.
    let many: Vec<Value> = (0..1200).map(|i| json!({"name": format!("imp32-bulk-{i:04}")})).chain([json!({"name": ["not", "text"]})]).collect();
    let (status, body) = import(app, Some(ADMIN_TOKEN), "tags", "application/json", Value::Array(many).to_string()).await;
    assert_eq!((status, body["errors"][0]["extensions"]["code"].clone()), (400, json!("FAILED_VALIDATION")), "{body}");
    let (status, _) = import(app, Some(ADMIN_TOKEN), "tags", "application/json", "[{\"name\": \"imp32-broken\"}, {\"name\": ".into()).await;
    assert_eq!(status, 400);
    assert_eq!(tags(app, "imp32-b").await, Vec::<String>::new(), "a failed import kept items");
    // Other media types.
    let (status, body) = import(app, Some(ADMIN_TOKEN), "tags", "text/plain", "name\nx\n".into()).await;
    assert_eq!((status, body["errors"][0]["extensions"]["code"].clone()), (415, json!("UNSUPPORTED_MEDIA_TYPE")), "{body}");
    let r = app.admin(Method::POST, "/utils/import/tags", json!([{"name": "x"}])).await;
    assert_error(&r, 415, "UNSUPPORTED_MEDIA_TYPE", "a JSON body instead of a file");
}

#[tokio::test]
async fn imports_need_create_and_update_rights() {
    let app = app(Dataset::DemoWrites);
    let all = |action: &str| json!({"collection": "tags", "action": action, "fields": ["*"]});
    let (creator, _, _) = role(app, "TagCreators32", json!([all("create"), all("read")])).await;
    let (importer, _, _) = role(app, "TagImporters32", json!([all("create"), all("read"), all("update")])).await;
    let file = || json!([{"name": "imprights32"}]).to_string();
    for (token, what) in [(None, "the public"), (Some(creator.as_str()), "no update right")] {
        let (status, body) = import(app, token, "tags", "application/json", file()).await;
        assert_eq!((status, body["errors"][0]["extensions"]["code"].clone()), (403, json!("FORBIDDEN")), "{what}: {body}");
    }
    let (status, body) = import(app, Some(&importer), "directus_users", "application/json", json!([{"email": "x@example.com"}]).to_string()).await;
    assert_eq!(status, 403, "a system collection: {body}");
    assert_eq!(tags(app, "imprights32").await, Vec::<String>::new());
    let (status, body) = import(app, Some(&importer), "tags", "application/json", file()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(tags(app, "imprights32").await, ["imprights32"]);
}

/// The text of file `id`, as the admin downloads it.
async fn asset_text(app: &e2e_tests::TestApp, id: &str) -> String {
    let client = e2e_tests::http_client().build().expect("client");
    let res = client.get(format!("{}/assets/{id}", app.rest_url)).bearer_auth(ADMIN_TOKEN).send().await.expect("get");
    assert_eq!(res.status().as_u16(), 200);
    res.text().await.unwrap_or_default()
}

/// Waits for `token`'s notification with this subject; returns it.
async fn notification(app: &e2e_tests::TestApp, token: &str, subject: &str) -> Value {
    let path = format!("/notifications?filter[subject][_eq]={}&fields=*", subject.replace(' ', "%20"));
    for _ in 0..100 {
        let r = app.as_token(Some(token), Method::GET, &path, None).await;
        if let Some(n) = r.body["data"].as_array().and_then(|a| a.first()) {
            return n.clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no notification \"{subject}\"");
}

#[tokio::test]
async fn exports_are_files_made_with_the_callers_rights_and_announced() {
    let app = app(Dataset::DemoWrites);
    let published = json!({"status": {"_eq": "published"}});
    let rows = |files: bool| {
        let mut rows = vec![json!({"collection": "articles", "action": "read", "permissions": published, "fields": ["id", "title"]})];
        if files {
            rows.push(json!({"collection": "directus_files", "action": "create", "fields": ["*"]}));
            rows.push(json!({"collection": "directus_files", "action": "read", "fields": ["*"]}));
        }
        Value::Array(rows)
    };
    let (exporter, _, _) = app_role(app, "Exporters32", rows(true)).await;
    let (no_files, _, _) = app_role(app, "NoFileExporters32", rows(false)).await;
    let body = json!({"query": {"fields": ["*"], "sort": ["id"]}, "format": "csv", "file": {"title": "Published articles 32"}});
    let r = app.as_token(Some(&exporter), Method::POST, "/utils/export/articles", Some(body.clone())).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let n = notification(app, &exporter, "Your export of articles is ready").await;
    assert_eq!(n["collection"], "directus_files", "{n}");
    let file = n["item"].as_str().expect("the file").to_owned();
    let r = app.admin(Method::GET, &format!("/files/{file}?fields=title,type,filename_download"), Value::Null).await;
    assert_eq!((r.body["data"]["title"].clone(), r.body["data"]["type"].clone()), (json!("Published articles 32"), json!("text/csv")), "{}", r.body);
    assert!(r.body["data"]["filename_download"].as_str().is_some_and(|f| f.starts_with("export-articles-") && f.ends_with(".csv")), "{}", r.body);
    // Only the published articles, only the fields the role may read.
    let text = asset_text(app, &file).await;
    let count = app.admin(Method::GET, "/items/articles?filter[status][_eq]=published&aggregate[count]=*", Value::Null).await;
    let published_count: usize = count.body["data"][0]["count"].as_str().and_then(|c| c.parse().ok()).expect("a count");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first().copied(), Some("id,title"), "{text}");
    assert_eq!(lines.len(), published_count + 1, "{text}");
    // Without the right to store files: no file, a "failed" notice.
    let r = app.as_token(Some(&no_files), Method::POST, "/utils/export/articles", Some(body)).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let n = notification(app, &no_files, "Your export of articles failed").await;
    assert_eq!(n["item"], Value::Null, "{n}");
    // Bad requests are refused before anything runs.
    for bad in [json!({"format": "csv"}), json!({"query": {}}), json!({"query": {}, "format": "pdf"})] {
        let r = app.as_token(Some(&exporter), Method::POST, "/utils/export/articles", Some(bad.clone())).await;
        assert_error(&r, 400, "INVALID_PAYLOAD", &bad.to_string());
    }
}
