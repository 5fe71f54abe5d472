//! The API calls the Data Studio makes besides items (docs/data-studio.md), from the user's
//! and the attacker's side, without a browser: `/settings` and `/server/info`'s project,
//! `/presets`, `/translations`, `/dashboards` and `/panels`, `/roles/me`,
//! `/users/me/track/page`, `/permissions/me/:collection/:key`, `/extensions`, the `$FOLLOW`
//! filter, the `system-*` asset presets, and `/admin` itself.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{app_role, id_of, role};
use e2e_tests::{Dataset, Spec, TestApp, assert_error, start};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// A Studio directory of this test's own (an `index.html` with Directus's `<base />`, one
/// asset), so `/admin` is tested without the real app.
fn studio_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cdapi-studio-api-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("assets")).expect("studio dir");
    std::fs::write(dir.join("index.html"), "<!doctype html><html><head><base /></head><body>studio</body></html>").expect("index");
    std::fs::write(dir.join("assets/app.js"), "export default 1;").expect("asset");
    dir
}

fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| {
        let dir = studio_dir().to_string_lossy().into_owned();
        start(Spec { dataset: Dataset::DemoWrites, name: Some("studio_api".into()), edge_env: vec![("STUDIO_DIR".into(), dir)], ..Spec::default() })
            .expect("environment")
    })
}

async fn raw(app: &TestApp, path: &str) -> (u16, String, String) {
    let r = e2e_tests::http_client().build().expect("client").get(format!("{}{path}", app.rest_url)).send().await.expect("request");
    let status = r.status().as_u16();
    let ct = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    (status, ct, r.text().await.unwrap_or_default())
}

#[tokio::test]
async fn admin_serves_the_app_its_files_and_nothing_else() {
    let app = env();
    let (status, ct, body) = raw(app, "/admin").await;
    assert_eq!((status, ct.as_str()), (200, "text/html; charset=utf-8"));
    assert!(body.contains("<base href=\"/admin/\" />"), "{body}");
    let (status, ct, body) = raw(app, "/admin/assets/app.js").await;
    assert_eq!((status, ct.as_str(), body.as_str()), (200, "text/javascript", "export default 1;"));
    // Client-side routes get the app; nothing outside the directory is ever read.
    for path in ["/admin/content/articles/1", "/admin/..%2f..%2fetc%2fpasswd", "/admin/assets/..%2f..%2f..%2fetc%2fhostname"] {
        let (status, ct, body) = raw(app, path).await;
        assert_eq!((status, ct.as_str()), (200, "text/html; charset=utf-8"), "{path}");
        assert!(body.contains("studio") && !body.contains("root:"), "{path}: {body}");
    }
    let r = e2e_tests::http_client().build().expect("client").post(format!("{}/admin/assets/app.js", app.rest_url)).send().await.expect("post");
    assert_eq!(r.status().as_u16(), 405);
}

#[tokio::test]
async fn settings_are_a_singleton_that_feeds_the_project_and_only_admins_change() {
    let app = env();
    let r = app.admin(Method::PATCH, "/settings", json!({"project_name": "Newsroom", "project_color": "#112233"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["project_name"], "Newsroom");
    let r = app.as_token(None, Method::GET, "/server/info", None).await;
    assert_eq!((r.body["data"]["project"]["project_name"].clone(), r.body["data"]["project"]["project_color"].clone()), (json!("Newsroom"), json!("#112233")));
    assert!(r.body["data"]["project"].get("mapbox_key").is_none(), "a setting that is not public: {}", r.body);

    // The public reads none of it, nor a user without app access (Directus's app minimum); a
    // user with app access reads it but does not change it.
    let r = app.as_token(None, Method::GET, "/settings", None).await;
    assert_error(&r, 403, "FORBIDDEN", "forbidden");
    let (api_only, _, _) = role(app, "SettingsApiOnly", json!([])).await;
    for path in ["/settings", "/translations", "/presets"] {
        let r = app.as_token(Some(&api_only), Method::GET, path, None).await;
        assert_error(&r, 403, "FORBIDDEN", "forbidden");
    }
    let r = app.as_token(Some(&api_only), Method::POST, "/presets", Some(json!({"collection": "articles", "layout": "tabular"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "forbidden");
    let g = app.graphql("/graphql/system", Some(&api_only), "{ settings { project_name } }", json!({})).await;
    assert!(g.body["data"]["settings"].is_null() && g.body["errors"].is_array(), "settings over GraphQL without app access: {}", g.body);
    let (token, _, _) = app_role(app, "SettingsReader", json!([])).await;
    let r = app.as_token(Some(&token), Method::GET, "/settings", None).await;
    assert_eq!((r.status, r.body["data"]["project_name"].clone()), (200, json!("Newsroom")), "{}", r.body);
    let r = app.as_token(Some(&token), Method::PATCH, "/settings", Some(json!({"project_name": "Owned"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "forbidden");
    assert_eq!(app.sql("SELECT to_json(project_name)::text FROM cdapi.settings").await, json!("Newsroom"));
}

#[tokio::test]
async fn presets_are_read_by_who_they_are_for_and_kept_by_their_owner_only() {
    let app = env();
    let (alice, alice_id, role_id) = app_role(app, "PresetsAlice", json!([])).await;
    let (bob, bob_id, _) = app_role(app, "PresetsBob", json!([])).await;
    let mine = json!({"user": alice_id, "collection": "articles", "layout": "tabular", "layout_query": {"tabular": {"sort": ["-title"]}}});
    let r = app.as_token(Some(&alice), Method::POST, "/presets", Some(mine)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let preset = id_of(&r.body["data"]);
    // Nobody creates a preset for someone else.
    let r = app.as_token(Some(&alice), Method::POST, "/presets", Some(json!({"user": bob_id, "collection": "articles"}))).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "failed_validation");
    // A role's preset and a global one are read by its users; another user's is not.
    for (user, role) in [(Value::Null, json!(role_id)), (Value::Null, Value::Null)] {
        let r = app.admin(Method::POST, "/presets", json!({"user": user, "role": role, "collection": "tags", "bookmark": "shared"})).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let r = app.as_token(Some(&alice), Method::GET, "/presets?fields=id,user,role&limit=-1", None).await;
    let seen = r.body["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(seen.len(), 3, "{}", r.body);
    let r = app.as_token(Some(&bob), Method::GET, "/presets?fields=id,user,role&limit=-1", None).await;
    let seen = r.body["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(seen.len(), 1, "bob reads only the global preset: {}", r.body);
    for (method, body) in [(Method::PATCH, Some(json!({"bookmark": "taken"}))), (Method::DELETE, None)] {
        let r = app.as_token(Some(&bob), method, &format!("/presets/{preset}"), body).await;
        assert_error(&r, 403, "FORBIDDEN", "forbidden");
    }
    let r = app.as_token(Some(&alice), Method::PATCH, &format!("/presets/{preset}"), Some(json!({"user": bob_id}))).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "failed_validation");
    assert_eq!(app.sql(&format!("SELECT to_json(\"user\")::text FROM cdapi.presets WHERE id = {preset}")).await, json!(alice_id));
}

#[tokio::test]
async fn translations_dashboards_and_panels_are_stored_system_collections() {
    let app = env();
    let r = app.admin(Method::POST, "/translations", json!({"language": "en-US", "key": "greeting", "value": "Hello"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::POST, "/dashboards", json!({"name": "Traffic", "panels": [{"type": "metric", "position_x": 1, "position_y": 1, "width": 6, "height": 4, "options": {"collection": "articles"}}]})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let dashboard = id_of(&r.body["data"]);
    let r = app.admin(Method::GET, &format!("/dashboards/{dashboard}?fields=name,user_created,panels.type,panels.options"), Value::Null).await;
    assert_eq!(r.body["data"]["panels"], json!([{"type": "metric", "options": {"collection": "articles"}}]), "{}", r.body);
    assert!(r.body["data"]["user_created"].is_string(), "{}", r.body);

    let (token, _, _) = app_role(app, "InsightsOutsider", json!([])).await;
    let r = app.as_token(Some(&token), Method::GET, "/translations?filter[key][_eq]=greeting&fields=value", None).await;
    assert_eq!(r.body["data"], json!([{"value": "Hello"}]), "every user with app access reads translations: {}", r.body);
    for path in ["/dashboards", "/panels"] {
        let r = app.as_token(Some(&token), Method::GET, path, None).await;
        assert_error(&r, 403, "FORBIDDEN", "forbidden");
    }
    let r = app.as_token(Some(&token), Method::POST, "/translations", Some(json!({"language": "en-US", "key": "x", "value": "y"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "forbidden");
}

#[tokio::test]
async fn roles_me_tracks_and_item_access_answer_for_the_caller_only() {
    let app = env();
    let rows = json!([
        {"collection": "articles", "action": "read", "fields": ["*"]},
        {"collection": "articles", "action": "update", "fields": ["title"], "permissions": {"status": {"_eq": "draft"}}},
    ]);
    let (token, user, role_id) = role(app, "StudioCaller", rows).await;
    // `/roles/me`: the caller's role, whatever filter they add.
    let r = app.as_token(Some(&token), Method::GET, "/roles/me?fields=id,name", None).await;
    assert_eq!(r.body["data"], json!([{"id": role_id, "name": "StudioCaller"}]), "{}", r.body);
    let r = app.as_token(Some(&token), Method::GET, "/roles/me?fields=id&filter[name][_eq]=Administrator", None).await;
    assert_eq!(r.body["data"], json!([]), "{}", r.body);
    let r = app.as_token(None, Method::GET, "/roles/me", None).await;
    assert_error(&r, 403, "FORBIDDEN", "forbidden");

    let r = app.as_token(Some(&token), Method::PATCH, "/users/me/track/page", Some(json!({"last_page": "/content/articles"}))).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(app.sql(&format!("SELECT to_json(last_page)::text FROM cdapi.users WHERE id = '{user}'")).await, json!("/content/articles"));
    let r = app.as_token(None, Method::PATCH, "/users/me/track/page", Some(json!({"last_page": "/x"}))).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "invalid_credentials");
    for bad in [json!({}), json!({"last_page": ""}), json!({"last_page": "x".repeat(256)})] {
        let r = app.as_token(Some(&token), Method::PATCH, "/users/me/track/page", Some(bad)).await;
        assert_error(&r, 400, "INVALID_PAYLOAD", "invalid_payload");
    }

    // Item access follows the rows' filters: a draft may be updated, a published one not.
    let draft = app.sql("SELECT to_json(min(id)::text)::text FROM articles WHERE status = 'draft'").await;
    let published = app.sql("SELECT to_json(min(id)::text)::text FROM articles WHERE status = 'published'").await;
    let access = |key: &Value| format!("/permissions/me/articles/{}", key.as_str().unwrap_or_default());
    let r = app.as_token(Some(&token), Method::GET, &access(&draft), None).await;
    assert_eq!(r.body["data"], json!({"update": {"access": true}, "delete": {"access": false}, "share": {"access": false}}), "{}", r.body);
    let r = app.as_token(Some(&token), Method::GET, &access(&published), None).await;
    assert_eq!(r.body["data"]["update"], json!({"access": false}), "{}", r.body);
    for path in ["/permissions/me/authors/1", "/permissions/me/directus_users/1", "/permissions/me/articles/999999", "/permissions/me/articles/not-a-key"] {
        let r = app.as_token(Some(&token), Method::GET, path, None).await;
        assert_eq!(r.body["data"]["update"], json!({"access": false}), "{path}: {}", r.body);
    }
    let r = app.as_token(None, Method::GET, &access(&draft), None).await;
    assert_error(&r, 403, "FORBIDDEN", "forbidden");
    let r = app.admin(Method::GET, "/permissions/me/settings", Value::Null).await;
    assert_eq!(r.body["data"]["delete"], json!({"access": true}), "{}", r.body);
}

#[tokio::test]
async fn follow_filters_reverse_relations_the_caller_can_read_only() {
    let app = env();
    let path = "/items/tags?filter[$FOLLOW(articles_tags,tags_id)][_none][articles_id][_eq]=1&aggregate[countDistinct]=id";
    let r = app.admin(Method::GET, path, Value::Null).await;
    let expected = app
        .sql("SELECT to_json(count(*)::text)::text FROM tags WHERE id NOT IN (SELECT tags_id FROM articles_tags WHERE articles_id = 1 AND tags_id IS NOT NULL)")
        .await;
    assert_eq!(r.body["data"], json!([{"countDistinct": {"id": expected}}]), "{}", r.body);
    let r = app.admin(Method::GET, "/items/tags?filter[$FOLLOW(articles_tags,articles_id)][_some][id][_nnull]=true", Value::Null).await;
    assert_error(&r, 400, "INVALID_QUERY", "invalid_query");
    // A role that reads tags but not the junction cannot reach through it.
    let (token, _, _) = role(app, "FollowTags", json!([{"collection": "tags", "action": "read", "fields": ["*"]}])).await;
    let r = app.as_token(Some(&token), Method::GET, "/items/tags?filter[$FOLLOW(articles_tags,tags_id)][_some][articles_id][_eq]=1", None).await;
    assert_error(&r, 403, "FORBIDDEN", "forbidden");
}

/// `GET /assets/<id>?<query>` as the admin: the status and the image's width, if one came.
async fn asset_as_admin(app: &TestApp, id: &str, query: String) -> (u16, Option<u32>) {
    let url = format!("{}/assets/{id}?{query}", app.rest_url);
    let r = e2e_tests::http_client().build().expect("client").get(url).bearer_auth(e2e_tests::ADMIN_TOKEN).send().await.expect("asset");
    let status = r.status().as_u16();
    let bytes = r.bytes().await.unwrap_or_default();
    (status, image::load_from_memory(&bytes).map(|i| i.width()).ok())
}

/// [`asset_as_admin`] asked again (for up to 5 s) until `done` holds: a settings change reaches
/// the snapshot on its NOTIFY. Returns the last answer.
async fn settled(app: &TestApp, id: &str, query: &str, done: impl Fn((u16, Option<u32>)) -> bool) -> (u16, Option<u32>) {
    let mut seen = asset_as_admin(app, id, query.to_owned()).await;
    for _ in 0..50 {
        if done(seen) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        seen = asset_as_admin(app, id, query.to_owned()).await;
    }
    seen
}

#[tokio::test]
async fn the_settings_asset_rules_decide_which_transformations_run() {
    let app = env();
    let mut png = Vec::new();
    let pixels = image::RgbImage::from_fn(120, 80, |x, y| image::Rgb([x as u8, y as u8, 7]));
    image::DynamicImage::ImageRgb8(pixels).write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).expect("png");
    let (status, file) = e2e_tests::upload_file(app, Some(e2e_tests::ADMIN_TOKEN), &[], "rules.png", "image/png", png).await;
    assert_eq!(status, 200, "{file}");
    let id = id_of(&file["data"]);
    let asset = |query: &str| asset_as_admin(app, &id, query.to_owned());
    // A preset stored in the settings serves at once (the snapshot reloads on the change).
    let r = app
        .admin(Method::PATCH, "/settings", json!({"storage_asset_presets": [{"key": "card", "width": 30, "fit": "contain"}], "storage_asset_transform": "all"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(settled(app, &id, "key=card", |s| s == (200, Some(30))).await, (200, Some(30)));
    assert_eq!(asset("width=50").await, (200, Some(50)));
    // `presets`: only a preset's key, alone.
    app.admin(Method::PATCH, "/settings", json!({"storage_asset_transform": "presets"})).await;
    assert_eq!(settled(app, &id, "width=50", |s| s.0 == 400).await.0, 400);
    assert_eq!(asset("key=card&width=60").await.0, 400);
    assert_eq!(asset("key=card").await, (200, Some(30)));
    // `none`: the Studio's own thumbnails only; the original always.
    app.admin(Method::PATCH, "/settings", json!({"storage_asset_transform": "none"})).await;
    assert_eq!(settled(app, &id, "key=card", |s| s.0 == 400).await.0, 400);
    assert_eq!(asset("key=system-small-contain").await, (200, Some(64)));
    assert_eq!(asset("").await, (200, Some(120)));
    app.admin(Method::PATCH, "/settings", json!({"storage_asset_transform": "all", "storage_asset_presets": null})).await;
}

#[tokio::test]
async fn extensions_are_none_and_the_studio_bundle_exports_empty_lists() {
    let app = env();
    let r = app.admin(Method::GET, "/extensions", Value::Null).await;
    assert_eq!(r.body, json!({"data": []}));
    let (status, ct, body) = raw(app, "/extensions/sources/index.js").await;
    assert_eq!((status, ct.as_str()), (200, "application/javascript; charset=UTF-8"));
    for kind in ["interfaces", "displays", "layouts", "modules", "panels", "themes", "operations"] {
        assert!(body.contains(&format!("export const {kind} = [];")), "{body}");
    }
    let (status, _, _) = raw(app, "/extensions/sources/other.js").await;
    assert_eq!(status, 404);
}

/// The Data Model's drag and drop: `PATCH /fields/:collection` and `PATCH /collections` with an
/// array of changes, all or nothing, admin only.
#[tokio::test]
async fn batch_schema_updates_apply_all_or_nothing_for_admins_only() {
    let app = env();
    let sorts = || app.sql("SELECT json_object_agg(field, meta->'sort')::text FROM cdapi.fields WHERE collection = 'authors' AND field IN ('name', 'email')");
    let r = app.admin(Method::PATCH, "/fields/authors", json!([{"field": "email", "meta": {"sort": 1}}, {"field": "name", "meta": {"sort": 2}}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let answered: Vec<(Value, Value)> = r.body["data"].as_array().expect("array").iter().map(|f| (f["field"].clone(), f["meta"]["sort"].clone())).collect();
    assert_eq!(answered, vec![(json!("email"), json!(1)), (json!("name"), json!(2))], "{}", r.body);
    assert_eq!(sorts().await, json!({"email": 1, "name": 2}));

    // One bad element (a field that does not exist, a field named twice) changes nothing.
    let r = app.admin(Method::PATCH, "/fields/authors", json!([{"field": "name", "meta": {"sort": 9}}, {"field": "nope", "meta": {"sort": 1}}])).await;
    assert_error(&r, 403, "FORBIDDEN", "an unknown field");
    let r = app.admin(Method::PATCH, "/fields/authors", json!([{"field": "name", "meta": {"sort": 9}}, {"field": "name", "meta": {"sort": 1}}])).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a field twice");
    for bad in [json!({"field": "name"}), json!([{"meta": {"sort": 1}}]), json!([3])] {
        let r = app.admin(Method::PATCH, "/fields/authors", bad.clone()).await;
        assert_error(&r, 400, "INVALID_PAYLOAD", &bad.to_string());
    }
    assert_eq!(sorts().await, json!({"email": 1, "name": 2}));

    let r = app
        .admin(
            Method::PATCH,
            "/collections",
            json!([{"collection": "tags", "meta": {"sort": 1}}, {"collection": "authors", "meta": {"sort": 2, "group": null}}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!((r.body["data"][0]["collection"].clone(), r.body["data"][1]["meta"]["sort"].clone()), (json!("tags"), json!(2)), "{}", r.body);
    let collection_sorts = || app.sql("SELECT json_object_agg(collection, meta->'sort')::text FROM cdapi.collections WHERE collection IN ('tags', 'authors')");
    assert_eq!(collection_sorts().await, json!({"tags": 1, "authors": 2}));
    let r = app.admin(Method::PATCH, "/collections", json!([{"collection": "tags", "meta": {"sort": 5}}, {"collection": "ghosts", "meta": {"sort": 1}}])).await;
    assert_error(&r, 403, "FORBIDDEN", "an unknown collection");
    assert_eq!(collection_sorts().await, json!({"tags": 1, "authors": 2}));

    // A user with every item permission still changes no schema; relations have no batch form.
    let (token, _, _) = role(app, "SchemaReorderer", json!([{"collection": "authors", "action": "update", "fields": ["*"]}])).await;
    let r = app.as_token(Some(&token), Method::PATCH, "/fields/authors", Some(json!([{"field": "name", "meta": {"sort": 7}}]))).await;
    assert_error(&r, 403, "FORBIDDEN", "a non-admin's field batch");
    let r = app.as_token(Some(&token), Method::PATCH, "/collections", Some(json!([{"collection": "authors", "meta": {"hidden": true}}]))).await;
    assert_error(&r, 403, "FORBIDDEN", "a non-admin's collection batch");
    assert_eq!(sorts().await, json!({"email": 1, "name": 2}));
    let r = app.admin(Method::PATCH, "/relations", json!([])).await;
    assert_eq!(r.status, 405, "{}", r.body);
}

/// `/access` (the Studio's role and user pages): the rows that give roles and users their
/// policies. Admins create and list them and the policy applies at once; a user can neither
/// grant themselves a policy nor move or remove one.
#[tokio::test]
async fn access_rows_grant_policies_and_only_admins_write_them() {
    let app = env();
    let (token, user, _) = role(app, "AccessSeeker", json!([])).await;
    let rows = json!([{"collection": "authors", "action": "read", "fields": ["id", "name"]}]);
    let r = app.admin(Method::POST, "/policies", json!({"name": "AuthorsReaders", "app_access": true, "permissions": rows})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let policy = id_of(&r.body["data"]);
    let admin_policy = app.sql("SELECT to_json(min(id::text))::text FROM cdapi.policies WHERE admin_access").await;
    let admin_policy = admin_policy.as_str().expect("an admin policy").to_owned();
    let r = app.as_token(Some(&token), Method::GET, "/items/authors?limit=1", None).await;
    assert_error(&r, 403, "FORBIDDEN", "before the grant");
    for p in [&policy, &admin_policy] {
        let r = app.as_token(Some(&token), Method::POST, "/access", Some(json!({"user": user, "policy": p}))).await;
        assert_error(&r, 403, "FORBIDDEN", "granting oneself a policy");
    }

    let r = app.admin(Method::POST, "/access", json!({"user": user, "policy": policy})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let access = id_of(&r.body["data"]);
    let r = app.admin(Method::GET, &format!("/access?filter[user][_eq]={user}&fields=policy.name"), Value::Null).await;
    assert_eq!(r.body["data"], json!([{"policy": {"name": "AuthorsReaders"}}]), "{}", r.body);
    e2e_tests::fixture::eventually("the granted policy applies", || async {
        app.as_token(Some(&token), Method::GET, "/items/authors?limit=1&fields=name", None).await.status == 200
    })
    .await;

    let r = app.as_token(Some(&token), Method::PATCH, &format!("/access/{access}"), Some(json!({"policy": admin_policy}))).await;
    assert_error(&r, 403, "FORBIDDEN", "moving one's access row to the admin policy");
    let r = app.as_token(Some(&token), Method::DELETE, &format!("/access/{access}"), None).await;
    assert_error(&r, 403, "FORBIDDEN", "removing an access row");
    // Directus's minimal app permissions hold no `directus_access` row: users list none.
    let r = app.as_token(Some(&token), Method::GET, "/access", None).await;
    assert_error(&r, 403, "FORBIDDEN", "listing access rows");
    let held = app.sql(&format!("SELECT json_agg(policy::text)::text FROM cdapi.access WHERE \"user\" = '{user}'")).await;
    assert_eq!(held, json!([policy]));
    let r = app.as_token(Some(&token), Method::GET, "/policies/me/globals", None).await;
    assert_eq!(r.body["data"]["admin_access"], json!(false), "{}", r.body);
}
