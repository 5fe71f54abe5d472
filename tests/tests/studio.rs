//! The Directus Data Studio (`@directus/app` 13.4.0, from the directus@11.3.5 the test setup
//! installs; BUSL-1.1, never copied here) served at `/admin` by edge-rest (STUDIO_DIR) and
//! driven in Debian's Chromium by Playwright (`tests/studio/journeys.py`), one test per journey
//! (docs/data-studio.md), a share link's page among them. Each journey asserts what the screen shows; each test here then
//! asserts what the database holds. A failed journey leaves its screenshot in
//! `$CARGO_TARGET_DIR/studio-shots/<journey>.png`.
//!
//! Every journey signs in as a user of its own (sign-ins are limited per account and address).
//! When the Studio, Chromium or Playwright is missing, each test says `SKIPPED` (never a silent
//! pass); `deploy/local/test` installs all three.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{id_of, role};
use e2e_tests::{Dataset, Spec, TestApp, start};
use reqwest::Method;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The Studio's `dist/` directory inside the directus@11.3.5 install.
fn studio_dir() -> PathBuf {
    e2e_tests::directus_peer::install_dir().join("node_modules/@directus/app/dist")
}

/// The browser Playwright drives.
fn chromium() -> String {
    std::env::var("CDAPI_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

fn python() -> String {
    std::env::var("CDAPI_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Why the journeys cannot run here, if they cannot.
fn unavailable() -> Option<String> {
    if !studio_dir().join("index.html").exists() {
        return Some(format!("no Data Studio in {}", studio_dir().display()));
    }
    if !std::path::Path::new(&chromium()).exists() {
        return Some(format!("no Chromium at {}", chromium()));
    }
    let playwright = std::process::Command::new(python()).args(["-c", "import playwright.sync_api"]).output();
    if !playwright.is_ok_and(|o| o.status.success()) {
        return Some(format!("{} has no Playwright", python()));
    }
    None
}

/// This file's environment: the demo data with `tests/sql/studio.sql`, the Studio at `/admin`.
fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        start(Spec {
            dataset: Dataset::DemoWrites,
            name: Some("studio".into()),
            sql: vec![e2e_tests::repo_root().join("tests/sql/studio.sql")],
            edge_env: vec![("STUDIO_DIR".into(), studio_dir().to_string_lossy().into_owned())],
            ..Spec::default()
        })
        .expect("environment")
    })
}

/// Skips (saying so) when the journeys cannot run here; else the environment.
fn ready(test: &str) -> Option<&'static TestApp> {
    match unavailable() {
        Some(why) => {
            println!("SKIPPED {test}: {why}");
            None
        }
        None => Some(env()),
    }
}

/// A user in the Administrator role (a fresh one per journey); returns (email, password, id).
async fn administrator(app: &TestApp, name: &str) -> (String, String, String) {
    let roles = app.admin(Method::GET, "/roles?filter[name][_eq]=Administrator&fields=id", Value::Null).await;
    let role = id_of(&roles.body["data"][0]);
    let (email, password) = (format!("{name}@example.com"), format!("{name}-password-1"));
    let r = app.admin(Method::POST, "/users", json!({"email": email, "password": password, "role": role})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    (email, password, id_of(&r.body["data"]))
}

/// Journeys run one at a time: each reads the data it expects first, and two browsers at once
/// on two cores would only slow each other past their timeouts.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs one journey; returns its `RESULT` object. Panics with its output when it fails.
fn journey(app: &TestApp, name: &str, args: &[(&str, &str)]) -> Value {
    let shots = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| e2e_tests::repo_root().join("target")).join("studio-shots");
    let script = e2e_tests::repo_root().join("tests/studio/journeys.py");
    let out = std::process::Command::new(python())
        .arg(&script)
        .arg(name)
        .args(args.iter().map(|(k, v)| format!("{k}={v}")))
        .env("STUDIO_URL", &app.rest_url)
        .env("STUDIO_SHOTS", &shots)
        .env("CDAPI_CHROMIUM", chromium())
        .output()
        .expect("run the journey");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "journey {name} failed (screenshot: {}):\n{stdout}\n{stderr}", shots.join(format!("{name}.png")).display());
    let line = stdout.lines().find_map(|l| l.strip_prefix("RESULT ")).expect("a RESULT line");
    serde_json::from_str(line).expect("RESULT json")
}

/// One value of a ground-truth query.
async fn one(app: &TestApp, sql: &str) -> Value {
    app.sql(sql).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_lands_in_content_with_the_collections_listed_and_a_reload_stays_signed_in() {
    let Some(app) = ready("sign_in") else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let (email, password, _) = administrator(app, "studio-sign-in").await;
    let seen = tokio::task::block_in_place(|| journey(app, "sign_in", &[("email", &email), ("password", &password)]));
    // The collections with metadata that are not hidden, in their `sort` order, as titles.
    let expected = one(
        app,
        "SELECT json_agg(initcap(replace(collection, '_', ' ')) ORDER BY (meta->>'sort')::int)::text FROM cdapi.collections \
         WHERE NOT hidden AND collection NOT LIKE 'directus\\_%'",
    )
    .await;
    assert_eq!(seen["collections"], expected, "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_counts_sorts_searches_filters_and_pages_as_the_database() {
    let Some(app) = ready("list") else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let (email, password, _) = administrator(app, "studio-list").await;
    let first_desc = one(app, "SELECT to_json(title)::text FROM articles ORDER BY title DESC LIMIT 1").await;
    let search_count = one(app, "SELECT to_json(count(*)::text)::text FROM articles WHERE title ILIKE '%pooling%' OR body ILIKE '%pooling%' OR slug ILIKE '%pooling%' OR status ILIKE '%pooling%'").await;
    let archived = one(app, "SELECT to_json(count(*)::text)::text FROM articles WHERE status = 'archived'").await;
    let args = [
        ("email", email.as_str()),
        ("password", password.as_str()),
        ("first_title_desc", first_desc.as_str().unwrap_or_default()),
        ("search", "pooling"),
        ("search_count", search_count.as_str().unwrap_or_default()),
        ("filter_count", archived.as_str().unwrap_or_default()),
    ];
    let seen = tokio::task::block_in_place(|| journey(app, "list", &args));
    let total = one(app, "SELECT to_json(count(*))::text FROM articles").await;
    let shown = seen["count"].as_str().unwrap_or_default().replace(',', "");
    assert!(shown.starts_with("1-25 of ") && shown.contains(&format!(" {total} ")), "{seen}");
    let desc = one(app, "SELECT json_agg(title)::text FROM (SELECT title FROM articles ORDER BY title DESC LIMIT 25) t").await;
    let seen_sorted: Vec<String> = seen["sorted"].as_array().into_iter().flatten().filter_map(|t| t.as_str().map(str::to_owned)).collect();
    let desc: Vec<String> = desc.as_array().into_iter().flatten().filter_map(|t| t.as_str().map(str::to_owned)).collect();
    // The table truncates long titles with an ellipsis: compare their beginnings.
    assert_eq!(seen_sorted.len(), 25, "{seen}");
    for (shown, title) in seen_sorted.iter().zip(&desc) {
        assert!(title.starts_with(shown.trim_end_matches('…').trim_end_matches("...")), "sorted: {shown} vs {title}");
    }
    let page_two = one(app, "SELECT json_agg(title)::text FROM (SELECT title FROM articles ORDER BY title DESC OFFSET 25 LIMIT 25) t").await;
    let first_of_two = page_two[0].as_str().unwrap_or_default();
    let seen_two = seen["page_two"][0].as_str().unwrap_or_default();
    assert!(first_of_two.starts_with(seen_two.trim_end_matches('…')), "page two: {seen_two} vs {first_of_two}");
    assert!(seen["filtered"].as_array().is_some_and(|rows| !rows.is_empty() && rows.iter().all(|s| s == "archived")), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_edited_in_the_form_is_saved_field_by_field_and_its_revision_is_listed() {
    let Some(app) = ready("edit") else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let (email, password, user) = administrator(app, "studio-edit").await;
    let id = "3";
    let before_tags =
        one(app, "SELECT json_agg(t.name ORDER BY t.name)::text FROM articles_tags j JOIN tags t ON t.id = j.tags_id WHERE j.articles_id = 3").await;
    let new_tag =
        one(app, "SELECT to_json(name)::text FROM tags WHERE id NOT IN (SELECT tags_id FROM articles_tags WHERE articles_id = 3) ORDER BY id LIMIT 1").await;
    let author = one(app, "SELECT to_json(name)::text FROM authors WHERE id <> (SELECT author FROM articles WHERE id = 3) ORDER BY id LIMIT 1").await;
    let args = [
        ("email", email.as_str()),
        ("password", password.as_str()),
        ("id", id),
        ("title", "Edited in the Studio"),
        ("body", "A body written in the Studio."),
        ("rating", "5"),
        ("day", "15"),
        ("author", author.as_str().unwrap_or_default()),
        ("tag", new_tag.as_str().unwrap_or_default()),
    ];
    let seen = tokio::task::block_in_place(|| journey(app, "edit", &args));
    let row = one(
        app,
        "SELECT json_build_object('title', a.title, 'body', a.body, 'rating', a.rating, 'featured', a.featured, \
         'day', extract(day FROM a.published_at AT TIME ZONE 'UTC')::int, 'author', au.name)::text \
         FROM articles a JOIN authors au ON au.id = a.author WHERE a.id = 3",
    )
    .await;
    assert_eq!(row["title"], "Edited in the Studio");
    assert_eq!(row["body"], "A body written in the Studio.");
    assert_eq!((row["rating"].clone(), row["featured"].clone()), (json!(5), json!(true)), "{row}");
    assert_eq!(row["author"], author, "{row}");
    // The date picker sets the day in the browser's time zone (UTC here).
    assert!(row["day"] == json!(15) || row["day"] == json!(14) || row["day"] == json!(16), "{row}");
    let after_tags =
        one(app, "SELECT json_agg(t.name ORDER BY t.name)::text FROM articles_tags j JOIN tags t ON t.id = j.tags_id WHERE j.articles_id = 3").await;
    let removed = seen["removed_tag"].as_str().unwrap_or_default();
    let after: Vec<&str> = after_tags.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(after.contains(&new_tag.as_str().unwrap_or_default()), "added tag missing: {after_tags}");
    assert!(!after.contains(&removed), "removed tag still there: {after_tags} (before {before_tags})");
    // The revision the sidebar listed is in the database, by this user.
    let revisions = one(
        app,
        &format!("SELECT count(*)::text FROM cdapi.revisions r JOIN cdapi.activity a ON a.id = r.activity WHERE r.collection = 'articles' AND r.item = '3' AND a.\"user\" = '{user}'"),
    )
    .await;
    assert!(revisions.as_i64().is_some_and(|n| n >= 1), "{revisions}");
    assert!(seen["revisions"].as_str().is_some_and(|t| t.contains(&email)), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_is_created_from_the_form_and_another_deleted_from_its_page() {
    let Some(app) = ready("create_delete") else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let (email, password, _) = administrator(app, "studio-create").await;
    let doomed = app.admin(Method::POST, "/items/articles", json!({"title": "Doomed in the Studio", "status": "draft"})).await;
    let doomed = id_of(&doomed.body["data"]);
    let args = [
        ("email", email.as_str()),
        ("password", password.as_str()),
        ("title", "Created in the Studio"),
        ("slug", "created-in-the-studio"),
        ("delete_id", &doomed),
    ];
    tokio::task::block_in_place(|| journey(app, "create_delete", &args));
    let created = one(app, "SELECT json_build_object('status', status, 'slug', slug)::text FROM articles WHERE title = 'Created in the Studio'").await;
    assert_eq!(created, json!({"status": "draft", "slug": "created-in-the-studio"}));
    let gone = one(app, &format!("SELECT count(*)::text FROM articles WHERE id = {doomed}")).await;
    assert_eq!(gone, json!(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_directory_lists_users_and_a_profile_saves() {
    let Some(app) = ready("users") else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let (email, password, id) = administrator(app, "studio-users").await;
    let args = [("email", email.as_str()), ("password", password.as_str()), ("id", id.as_str()), ("first_name", "Edith")];
    let seen = tokio::task::block_in_place(|| journey(app, "users", &args));
    // Every user is listed (a card each, showing the email when there is no name).
    let emails = one(app, "SELECT json_agg(email)::text FROM cdapi.users").await;
    let cards = seen["listed"].as_array().cloned().unwrap_or_default();
    assert_eq!(cards.len(), emails.as_array().map_or(0, Vec::len), "{seen}");
    assert!(cards.iter().any(|c| c.as_str().is_some_and(|c| c.contains(&email))), "{seen}");
    let first = one(app, &format!("SELECT to_json(first_name)::text FROM cdapi.users WHERE id = '{id}'")).await;
    assert_eq!(first, json!("Edith"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_model_lists_collections_and_a_field_added_in_it_is_a_column() {
    let Some(app) = ready("data_model") else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let (email, password, _) = administrator(app, "studio-model").await;
    let seen = tokio::task::block_in_place(|| journey(app, "data_model", &[("email", &email), ("password", &password), ("field", "subtitle")]));
    let tables = one(app, "SELECT json_agg(collection ORDER BY collection)::text FROM cdapi.collections WHERE collection NOT LIKE 'directus\\_%'").await;
    let mut listed: Vec<Value> = seen["collections"].as_array().cloned().unwrap_or_default();
    listed.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    assert_eq!(Value::Array(listed), tables, "{seen}");
    let column = one(app, "SELECT to_json(data_type)::text FROM information_schema.columns WHERE table_name = 'articles' AND column_name = 'subtitle'").await;
    assert_eq!(column, json!("character varying"));
    let meta = one(app, "SELECT to_json(meta->>'interface')::text FROM cdapi.fields WHERE collection = 'articles' AND field = 'subtitle'").await;
    assert_eq!(meta, json!("input"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_library_uploads_an_image_and_shows_its_thumbnail() {
    let Some(app) = ready("files") else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let (email, password, user) = administrator(app, "studio-files").await;
    let image = std::env::temp_dir().join(format!("studio-upload-{}.png", std::process::id()));
    let mut png = Vec::new();
    let pixels = image::RgbImage::from_fn(64, 48, |x, y| image::Rgb([(x * 4) as u8, (y * 5) as u8, 90]));
    image::DynamicImage::ImageRgb8(pixels).write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).expect("encode png");
    std::fs::write(&image, &png).expect("write the image");
    // The replacement: another size, another name.
    let replacement = std::env::temp_dir().join(format!("studio-replacement-{}.png", std::process::id()));
    let mut png = Vec::new();
    let pixels = image::RgbImage::from_fn(30, 20, |x, y| image::Rgb([90, (x * 8) as u8, (y * 12) as u8]));
    image::DynamicImage::ImageRgb8(pixels).write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).expect("encode png");
    std::fs::write(&replacement, &png).expect("write the replacement");
    let args =
        [("email", email.as_str()), ("password", password.as_str()), ("file", &image.to_string_lossy()), ("replacement", &replacement.to_string_lossy())];
    let seen = tokio::task::block_in_place(|| journey(app, "files", &args));
    let _ = std::fs::remove_file(&image);
    let _ = std::fs::remove_file(&replacement);
    let file = one(
        app,
        &format!(
            "SELECT json_build_object('id', id, 'width', width, 'height', height, 'type', type, 'name', filename_download)::text FROM cdapi.files WHERE uploaded_by = '{user}'"
        ),
    )
    .await;
    let src = seen["thumbnail"].as_str().unwrap_or_default();
    assert!(src.contains(file["id"].as_str().unwrap_or("?")) && src.contains("key=system-medium-cover"), "{seen}");
    // The uploaded image was replaced from its page: the same item, the new image.
    assert_eq!(seen["replaced"], json!(200), "{seen}");
    let name = replacement.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    assert_eq!(
        (file["width"].clone(), file["height"].clone(), file["type"].clone(), file["name"].clone()),
        (json!(30), json!(20), json!("image/png"), json!(name)),
        "{file}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limited_role_sees_only_its_collection_and_fields_and_cannot_write_past_its_policies() {
    let Some(app) = ready("limited") else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let rows = json!([
        {"collection": "articles", "action": "read", "fields": ["id", "title", "status"]},
        {"collection": "articles", "action": "update", "fields": ["title"]},
    ]);
    let (token, _, role_id) = role(app, "StudioLimited", rows).await;
    let policy = one(app, &format!("SELECT to_json(policy)::text FROM cdapi.access WHERE role = '{role_id}'")).await;
    let r = app.admin(Method::PATCH, &format!("/policies/{}", policy.as_str().unwrap_or_default()), json!({"app_access": true})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let before = one(app, "SELECT json_build_object('status', status, 'body', body)::text FROM articles WHERE id = 7").await;
    let args = [("email", "studiolimited@example.com"), ("password", "a-password-1"), ("id", "7"), ("title", "Limited edit")];
    let seen = tokio::task::block_in_place(|| journey(app, "limited", &args));
    assert_eq!(seen["collections"], json!(["Articles"]), "{seen}");
    assert_eq!(seen["labels"], json!(["ID", "Status", "Title"]), "only granted fields: {seen}");
    assert_eq!((seen["status_disabled"].clone(), seen["delete_disabled"].clone()), (json!(true), json!(true)), "{seen}");
    assert!(seen["authors_page"].as_str().is_some_and(|t| !t.contains("Sophie")), "{seen}");
    let after = one(app, "SELECT json_build_object('title', title, 'status', status, 'body', body)::text FROM articles WHERE id = 7").await;
    assert_eq!(after["title"], "Limited edit");
    assert_eq!((after["status"].clone(), after["body"].clone()), (before["status"].clone(), before["body"].clone()));
    // What the Studio would send for the refused fields, sent by hand: refused, nothing changes.
    for (method, path, body) in [
        (Method::PATCH, "/items/articles/7", json!({"status": "archived"})),
        (Method::PATCH, "/items/articles/7", json!({"title": "x", "body": "y"})),
        (Method::DELETE, "/items/articles/7", Value::Null),
        (Method::GET, "/items/authors", Value::Null),
    ] {
        let r = app.as_token(Some(&token), method.clone(), path, (!body.is_null()).then_some(body)).await;
        assert_eq!(r.status, 403, "{method} {path}: {}", r.body);
    }
    let again = one(app, "SELECT json_build_object('title', title, 'status', status, 'body', body)::text FROM articles WHERE id = 7").await;
    assert_eq!(again, after);
    // The Studio asks whether it may change the item: update yes, delete and share no.
    let r = app.as_token(Some(&token), Method::GET, "/permissions/me/articles/7", None).await;
    assert_eq!(r.body["data"], json!({"update": {"access": true}, "delete": {"access": false}, "share": {"access": false}}), "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_link_opens_its_item_read_only_without_an_account() {
    let Some(app) = ready("shared") else { return };
    let _turn = ONE_AT_A_TIME.lock().await;
    let title = one(app, "SELECT to_json(title)::text FROM articles WHERE id = 8").await;
    let title = title.as_str().expect("article 8's title").to_owned();
    // The share reads through a role that reads articles (without one it would read what the
    // public may: nothing here).
    let (_, _, viewers) = role(app, "StudioShareViewers", json!([{"collection": "articles", "action": "read", "fields": ["*"]}])).await;
    let body = json!({"collection": "articles", "item": "8", "password": "studio-share-1", "role": viewers});
    let r = app.admin(Method::POST, "/shares", body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let share = id_of(&r.body["data"]);
    let args = [("share", share.as_str()), ("password", "studio-share-1"), ("title", title.as_str())];
    let seen = tokio::task::block_in_place(|| journey(app, "shared", &args));
    assert_eq!((seen["title"].clone(), seen["disabled"].clone()), (json!(title), json!(true)), "{seen}");
    assert_eq!(one(app, &format!("SELECT times_used::text FROM cdapi.shares WHERE id = '{share}'")).await, json!(1), "one sign-in");
}
