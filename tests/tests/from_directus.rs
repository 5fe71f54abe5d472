//! Coming from Directus (docs/coming-from-directus.md): a Directus 11.3.5 project made through
//! Directus's own API — two roles with policies and permissions (a row rule, a field list, a
//! validation rule, a preset), three users (one with TOTP, one with a static token), relations,
//! a file in a folder and one in an S3 bucket (a second storage location), settings, a preset, a content version, activity and revisions, a comment,
//! a share with a password (and a `share` permission), fields added to `directus_users` (a text
//! and an M2O), content versions current and outdated,
//! a notification — is imported by `core-service import-directus` into ours on the same
//! database and storage. Then the same requests, as each user, go to Directus (its tables left
//! as they were) and to us through the differential harness, and must answer alike. When the
//! peer is not installed the test says so on stderr (`SKIPPED ...`) and does nothing else.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::differential::{Auth, Differential, Req};
use e2e_tests::directus_peer::{self, ADMIN_TOKEN as PEER_TOKEN};

use e2e_tests::{Spec, http_client, repo_root, start, totp_code};
use reqwest::Method;
use serde_json::{Value, json};
use std::io::Write as _;

/// The id of a user of the Directus project who signed in and was deleted there.
const LEAVER: &str = "00000000-0000-4000-8000-0000000000d2";

/// A Directus peer call as `token`: the body's `data`. Panics on a failure status.
async fn directus(url: &str, token: &str, method: Method, path: &str, body: Value) -> Value {
    let c = http_client().build().expect("client");
    let mut req = c.request(method.clone(), format!("{url}{path}")).bearer_auth(token);
    if !body.is_null() {
        req = req.json(&body);
    }
    let r = req.send().await.expect("peer answered");
    let status = r.status();
    let text = r.text().await.unwrap_or_default();
    assert!(status.is_success(), "{method} {path}: {status} {text}");
    serde_json::from_str::<Value>(&text).map(|v| v["data"].clone()).unwrap_or(Value::Null)
}

/// Signs in at `base` (either side) and returns the access token.
async fn sign_in(base: &str, email: &str, password: &str, otp: Option<String>) -> String {
    let mut body = json!({"email": email, "password": password});
    if let Some(otp) = otp {
        body["otp"] = json!(otp);
    }
    let r = http_client().build().expect("client").post(format!("{base}/auth/login")).json(&body).send().await.expect("login answered");
    let status = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "sign-in of {email} at {base}: {status} {v}");
    v["data"]["access_token"].as_str().expect("access token").to_owned()
}

/// Signs in to `share` at `base` (either side) with its password; the access token.
async fn share_session(base: &str, share: &str) -> String {
    let body = json!({"share": share, "password": "share-password-1"});
    let r = http_client().build().expect("client").post(format!("{base}/shares/auth")).json(&body).send().await.expect("share sign-in answered");
    let status = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "share sign-in at {base}: {status} {v}");
    v["data"]["access_token"].as_str().expect("access token").to_owned()
}

/// One JSON value computed by `sql` on the database at `url`.
async fn sql_at(url: &str, sql: &str) -> Value {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap_or_else(|e| panic!("connect: {e}"));
    let text: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    serde_json::from_str(&text.unwrap_or_else(|| "null".into())).unwrap_or(Value::Null)
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The time now, once at least 10 s of the current 30 s TOTP step are left: a code is then
/// still current when the server checks it, after its password hash (Directus accepts no
/// code of a step that has passed).
async fn early_in_a_step() -> u64 {
    let left = 30 - now() % 30;
    if left < 10 {
        tokio::time::sleep(std::time::Duration::from_secs(left)).await;
    }
    now()
}

/// A digest of every `directus_*` table's rows, to show the import leaves them as they were.
const DIRECTUS_TABLES_DIGEST: &str = "SELECT to_json(md5(string_agg(t, '|' ORDER BY t)))::text FROM ( \
     SELECT 'u' || md5(string_agg(x::text, ',' ORDER BY x::text)) AS t FROM directus_users x UNION ALL \
     SELECT 'r' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM directus_roles x UNION ALL \
     SELECT 'p' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM directus_permissions x UNION ALL \
     SELECT 'f' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM directus_files x UNION ALL \
     SELECT 'a' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM directus_activity x UNION ALL \
     SELECT 's' || md5(string_agg(x::text, ',' ORDER BY x::text)) FROM directus_settings x) d";

/// The Directus project of the module docs, made through Directus's API.
async fn model_project(url: &str) -> Project {
    let admin = |method: Method, path: &'static str, body: Value| directus(url, PEER_TOKEN, method, path, body);
    // Relations as a Directus team registers them: an O2M alias and an M2M through the junction.
    for (collection, field, special) in [("authors", "articles", "o2m"), ("articles", "tags", "m2m"), ("tags", "articles", "m2m")] {
        directus(url, PEER_TOKEN, Method::POST, &format!("/fields/{collection}"), json!({"field": field, "type": "alias", "meta": {"special": [special]}}))
            .await;
    }
    for (collection, field, related, one_field, junction, on_delete) in [
        ("articles", "author", "authors", "articles", None, "NO ACTION"),
        ("articles_tags", "articles_id", "articles", "tags", Some("tags_id"), "CASCADE"),
        ("articles_tags", "tags_id", "tags", "articles", Some("articles_id"), "CASCADE"),
    ] {
        let body = json!({"collection": collection, "field": field, "related_collection": related, "schema": {"on_delete": on_delete},
                          "meta": {"one_field": one_field, "junction_field": junction}});
        directus(url, PEER_TOKEN, Method::PATCH, &format!("/relations/{collection}/{field}"), body).await;
    }
    // An M2A: articles.blocks through articles_blocks to text_blocks, made as the Data Model makes it.
    let key = json!({"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}, "meta": {"hidden": true}});
    admin(Method::POST, "/collections", json!({"collection": "text_blocks", "meta": {}, "schema": {}, "fields": [key, {"field": "body", "type": "text"}]}))
        .await;
    let junction_fields =
        json!([key, {"field": "articles_id", "type": "integer"}, {"field": "item", "type": "string"}, {"field": "collection", "type": "string"}]);
    admin(Method::POST, "/collections", json!({"collection": "articles_blocks", "meta": {"hidden": true}, "schema": {}, "fields": junction_fields})).await;
    admin(Method::POST, "/fields/articles", json!({"field": "blocks", "type": "alias", "meta": {"special": ["m2a"], "interface": "list-m2a"}})).await;
    let any = json!({"collection": "articles_blocks", "field": "item", "related_collection": null, "schema": null,
                     "meta": {"one_allowed_collections": ["text_blocks"], "one_collection_field": "collection", "junction_field": "articles_id"}});
    admin(Method::POST, "/relations", any).await;
    let back = json!({"collection": "articles_blocks", "field": "articles_id", "related_collection": "articles", "schema": {"on_delete": "SET NULL"},
                      "meta": {"one_field": "blocks", "junction_field": "item", "one_deselect_action": "nullify"}});
    admin(Method::POST, "/relations", back).await;
    admin(Method::PATCH, "/items/articles/1", json!({"blocks": [{"collection": "text_blocks", "item": {"body": "Intro"}}]})).await;
    // Collection and field metadata as the Data Model writes it.
    let articles_meta = json!({"versioning": true, "icon": "article", "accountability": "activity", "sort_field": "rating",
                               "translations": [{"language": "en-US", "translation": "Stories", "singular": "Story", "plural": "Stories"}]});
    admin(Method::PATCH, "/collections/articles", json!({"meta": articles_meta})).await;
    admin(Method::PATCH, "/collections/tags", json!({"meta": {"hidden": true, "note": "Labels"}})).await;
    let title_meta = json!({"note": "The headline", "required": true, "width": "half", "interface": "input",
                            "translations": [{"language": "en-US", "translation": "Headline"}]});
    admin(Method::PATCH, "/fields/articles/title", json!({"meta": title_meta})).await;
    // Fields added to a system collection, as the Data Model adds them: a text and an M2O.
    admin(Method::POST, "/fields/directus_users", json!({"field": "department", "type": "string", "meta": {"interface": "input"}})).await;
    let m2o = json!({"field": "favorite_article", "type": "integer", "meta": {"special": ["m2o"], "interface": "select-dropdown-m2o"}});
    admin(Method::POST, "/fields/directus_users", m2o).await;
    let favorite = json!({"collection": "directus_users", "field": "favorite_article", "related_collection": "articles", "schema": {"on_delete": "SET NULL"}});
    admin(Method::POST, "/relations", favorite).await;

    let editors = json!([
        {"collection": "articles", "action": "read", "permissions": {"status": {"_eq": "published"}}, "fields": ["id", "title", "status", "author"]},
        {"collection": "articles", "action": "create", "fields": ["title", "status", "body"], "validation": {"title": {"_nnull": true}}, "presets": {"status": "draft"}},
        {"collection": "authors", "action": "read", "fields": ["id", "name"]},
        {"collection": "articles", "action": "share", "permissions": {"status": {"_eq": "published"}}, "fields": ["*"]},
    ]);
    let policy = admin(Method::POST, "/policies", json!({"name": "Editors", "app_access": true, "admin_access": false, "permissions": editors})).await;
    let role = admin(Method::POST, "/roles", json!({"name": "Editors", "policies": [{"policy": policy["id"]}]})).await;
    let reviewers = json!([{"collection": "articles", "action": "read", "fields": ["*"]}]);
    let policy = admin(Method::POST, "/policies", json!({"name": "Reviewers", "app_access": true, "admin_access": false, "permissions": reviewers})).await;
    let reviewer_role = admin(Method::POST, "/roles", json!({"name": "Reviewers", "policies": [{"policy": policy["id"]}]})).await;
    let editor = admin(
        Method::POST,
        "/users",
        json!({"email": "editor@example.com", "password": "editor-password-1", "first_name": "Edith", "role": role["id"],
               "token": "editor-static-token", "email_notifications": false, "department": "News", "favorite_article": 2}),
    )
    .await;
    // TOTP with a secret as Directus makes them (80 bits, otplib's default), set by the admin
    // (enrolling through `/users/me/tfa/*` needs a permission on `directus_users` the role lacks).
    let secret = "KRUGS4ZANFZSA5DF".to_owned();
    let reviewer = json!({"email": "reviewer@example.com", "password": "reviewer-password-1", "role": reviewer_role["id"],
                          "email_notifications": false, "tfa_secret": secret});
    admin(Method::POST, "/users", reviewer).await;
    admin(Method::POST, "/users", json!({"email": "plain@example.com", "password": "plain-password-1", "email_notifications": false})).await;
    // A user who signed in and was deleted: Directus keeps their id on their activity (no
    // foreign key there, nor here).
    admin(Method::POST, "/users", json!({"id": LEAVER, "email": "leaver@example.com", "password": "leaver-password-1"})).await;
    sign_in(url, "leaver@example.com", "leaver-password-1", None).await;
    directus(url, PEER_TOKEN, Method::DELETE, &format!("/users/{LEAVER}"), Value::Null).await;

    // A file in a folder, settings, a preset, a version, a revision, a comment, a notification.
    let folder = admin(Method::POST, "/folders", json!({"name": "Covers"})).await;
    let file_id = upload(url, &[("folder", folder["id"].as_str().expect("folder id"))], "cover.txt", b"cover bytes from directus").await;
    // And one in the S3 location (the project's second storage location).
    let bucket_file = upload(url, &[("storage", "s3")], "in-bucket.txt", b"bytes kept in a bucket").await;
    // Content pointing at users and files, as the Data Model makes it: foreign keys naming
    // directus_users and directus_files.
    let photo_fields = json!([key, {"field": "caption", "type": "string"},
        {"field": "owner", "type": "uuid", "meta": {"special": ["m2o"], "interface": "select-dropdown-m2o"}},
        {"field": "picture", "type": "uuid", "meta": {"special": ["file"], "interface": "file"}}]);
    admin(Method::POST, "/collections", json!({"collection": "photos", "meta": {}, "schema": {}, "fields": photo_fields})).await;
    for (field, related) in [("owner", "directus_users"), ("picture", "directus_files")] {
        admin(Method::POST, "/relations", json!({"collection": "photos", "field": field, "related_collection": related, "schema": {"on_delete": "SET NULL"}}))
            .await;
    }
    admin(Method::POST, "/items/photos", json!({"caption": "Cover", "owner": editor["id"], "picture": file_id})).await;
    admin(Method::PATCH, "/settings", json!({"project_name": "Newsroom", "auth_login_attempts": 7})).await;
    admin(
        Method::POST,
        "/presets",
        json!({"collection": "articles", "user": editor["id"], "layout": "tabular", "layout_query": {"tabular": {"sort": ["-id"]}}}),
    )
    .await;
    admin(Method::POST, "/versions", json!({"key": "draft-2", "name": "Draft 2", "collection": "articles", "item": "1"})).await;
    admin(Method::PATCH, "/items/articles/1", json!({"title": "Edited in Directus"})).await;
    // A version made after that edit: current, where draft-2 is outdated.
    admin(Method::POST, "/versions", json!({"key": "draft-3", "name": "Draft 3", "collection": "articles", "item": "3"})).await;
    admin(Method::POST, "/comments", json!({"collection": "articles", "item": "1", "comment": "Looks good"})).await;
    admin(Method::POST, "/notifications", json!({"recipient": editor["id"], "subject": "Welcome", "message": "Hello"})).await;
    // A share of an article with a password, read through the Reviewers' role.
    let share = admin(
        Method::POST,
        "/shares",
        json!({"name": "For review", "collection": "articles", "item": "1", "role": reviewer_role["id"], "password": "share-password-1"}),
    )
    .await;
    let editor = editor["id"].as_str().expect("editor id").to_owned();
    Project { editor, secret, files: [file_id, bucket_file], share: share["id"].as_str().expect("share id").to_owned() }
}

/// What the tests need to know of [`model_project`]'s project.
struct Project {
    /// The editor's user id.
    editor: String,
    /// The reviewer's TOTP secret.
    secret: String,
    /// The file in the local location, and the one in the S3 location.
    files: [String; 2],
    /// The share's id.
    share: String,
}

/// Uploads `bytes` as `name` to Directus at `url` with the form `fields` before the file (as
/// Directus reads them); the file's id.
async fn upload(url: &str, fields: &[(&str, &str)], name: &str, bytes: &[u8]) -> String {
    let mut form = reqwest::multipart::Form::new();
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    let part = reqwest::multipart::Part::bytes(bytes.to_vec()).file_name(name.to_owned()).mime_str("text/plain").expect("mime");
    let r = http_client()
        .build()
        .expect("client")
        .post(format!("{url}/files"))
        .bearer_auth(PEER_TOKEN)
        .multipart(form.part("file", part))
        .send()
        .await
        .expect("upload");
    let status = r.status();
    let file: Value = r.json().await.expect("file json");
    assert!(status.is_success(), "upload {name}: {file}");
    file["data"]["id"].as_str().expect("file id").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_directus_project_is_served_alike_after_the_import() {
    if let Some(why) = directus_peer::unavailable() {
        // Written past the test harness's capture, so the run shows it (deploy/local/test counts it).
        let _ = writeln!(std::io::stderr(), "SKIPPED a_directus_project_is_served_alike_after_the_import: {why}");
        return;
    }
    let blog = repo_root().join("../shared/bench/blog.sql");
    // Files in two locations, as on a Directus whose storage moved to a bucket: `local` (the
    // default) and `s3` (an S3 server of this test's own, read by both sides).
    let s3 = test_harness::s3_server(&std::env::temp_dir().join(format!("from_directus_s3_{}.log", std::process::id())))
        .unwrap_or_else(|e| panic!("S3 server: {e:#}"));
    let mut storage = vec![("STORAGE_LOCATIONS".to_owned(), "local,s3".to_owned())];
    storage.extend(test_harness::s3_location_env("S3", &s3.url));
    let peer_storage = storage.clone();
    let peer = tokio::task::spawn_blocking(move || directus_peer::start_with("from_directus", &[&blog], peer_storage))
        .await
        .expect("join")
        .unwrap_or_else(|e| panic!("the installed Directus peer did not start: {e}"));
    let Project { editor: editor_id, secret, files: [file_id, bucket_file], share } = model_project(&peer.url).await;
    // Directus's snapshot of the project, before the import points the content's keys at our
    // tables (Directus, reading the same database, would see them there afterwards).
    let their_snapshot = directus(&peer.url, PEER_TOKEN, Method::GET, "/schema/snapshot", json!(null)).await;

    // The dry run says what will and will not move, and changes nothing.
    let db_url = test_harness::database_url(&peer.database);
    let digest = || sql_at(&db_url, DIRECTUS_TABLES_DIGEST);
    let before = digest().await;
    let core = test_harness::binary("core-service").expect("core-service");
    let dry = std::process::Command::new(&core).args(["import-directus", "--dry-run"]).env("DATABASE_URL", &db_url).output().expect("dry run");
    let out = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "{out}{}", String::from_utf8_lossy(&dry.stderr));
    for line in [
        "carried over: directus_users → cdapi.users: 4 row(s)",
        "carried over: custom field directus_users.department (column)",
        "carried over: custom field directus_users.favorite_article (column)",
        "pointed at ours: the foreign key of photos.owner (directus_users → cdapi.users)",
        "pointed at ours: the foreign key of photos.picture (directus_files → cdapi.files)",
        "versions: 1 of 2 current in Directus were hashed here",
        "not carried over: directus_flows: 0 row(s)",
        "dry run: nothing was changed",
    ] {
        assert!(out.contains(line), "{line:?} in:\n{out}");
    }
    assert!(out.contains("the empty cdapi schema made for it was removed again"), "{out}");
    let schema_here = sql_at(&db_url, "SELECT to_json(to_regnamespace('cdapi') IS NOT NULL)::text").await;
    assert_eq!(schema_here, json!(false), "the dry run left our system tables behind");
    let triggers = sql_at(&db_url, "SELECT to_json(count(*))::text FROM pg_event_trigger WHERE evtname LIKE 'cdapi%'").await;
    assert_eq!(triggers, json!(0), "the dry run left our event trigger behind");

    let uploads = peer.uploads.to_string_lossy().into_owned();
    let database = peer.database.clone();
    let app = tokio::task::spawn_blocking(move || {
        start(Spec {
            name: Some("from_directus".into()),
            directus_database: Some(database),
            core_env: [
                ("ADMIN_PASSWORD".to_owned(), directus_peer::ADMIN_PASSWORD.to_owned()),
                ("ADMIN_TOKEN".to_owned(), PEER_TOKEN.to_owned()),
                ("STORAGE_LOCAL_ROOT".to_owned(), uploads),
            ]
            .into_iter()
            .chain(storage)
            .collect(),
            ..Spec::default()
        })
    })
    .await
    .expect("join")
    .expect("our environment on the Directus database");
    // (Before anyone signs in on Directus again, which it records in its tables.)
    assert_eq!(digest().await, before, "the import left the Directus tables as they were");

    let mut d = Differential::new((app.rest_url.clone(), PEER_TOKEN.into()), (peer.url.clone(), PEER_TOKEN.into()));
    // The same passwords sign in on both; the reviewer needs the same TOTP secret.
    let editor = Auth::Tokens(
        sign_in(&app.rest_url, "editor@example.com", "editor-password-1", None).await,
        sign_in(&peer.url, "editor@example.com", "editor-password-1", None).await,
    );
    let reviewer = Auth::Tokens(
        sign_in(&app.rest_url, "reviewer@example.com", "reviewer-password-1", Some(totp_code(&secret, early_in_a_step().await))).await,
        sign_in(&peer.url, "reviewer@example.com", "reviewer-password-1", Some(totp_code(&secret, early_in_a_step().await))).await,
    );
    let plain = Auth::Tokens(
        sign_in(&app.rest_url, "plain@example.com", "plain-password-1", None).await,
        sign_in(&peer.url, "plain@example.com", "plain-password-1", None).await,
    );
    let static_token = Auth::Tokens("editor-static-token".into(), "editor-static-token".into());
    let r = http_client()
        .build()
        .expect("client")
        .post(format!("{}/auth/login", app.rest_url))
        .json(&json!({"email": "reviewer@example.com", "password": "reviewer-password-1"}))
        .send()
        .await
        .expect("login");
    assert_eq!(r.status().as_u16(), 401, "the TOTP secret came along: a password alone is not enough");

    // Who is who, and what each may read.
    for (who, auth) in [("editor", &editor), ("static token", &static_token), ("reviewer", &reviewer), ("plain", &plain)] {
        let me = Req::get("/users/me?fields=email,first_name,status,role.name").auth(auth.clone());
        if who == "plain" {
            // No policy with app access: Directus answers only the id (docs/directus-compatibility.md).
            d.deviates("plain: me", "own-user", me).await;
        } else {
            d.check(&format!("{who}: me"), me).await;
        }
        d.check(&format!("{who}: articles"), Req::get("/items/articles?fields=id,title,status,author&sort=id&limit=3").auth(auth.clone())).await;
        d.check(&format!("{who}: a field outside the list"), Req::get("/items/articles?fields=body&limit=1").auth(auth.clone())).await;
        d.check(&format!("{who}: authors"), Req::get("/items/authors?fields=id,name&sort=id&limit=2").auth(auth.clone())).await;
        d.check(&format!("{who}: policies"), Req::get("/policies/me/globals").auth(auth.clone())).await;
    }
    d.check("editor: the published count", Req::get("/items/articles?aggregate[count]=*").auth(editor.clone())).await;
    // Relations and metadata.
    d.check("admin: an article with its author and tags", Req::get("/items/articles/1?fields=id,title,author.name,tags.tags_id.name")).await;
    d.check("admin: the M2A", Req::get("/items/articles/1?fields=id,blocks.collection,blocks.item:text_blocks.body")).await;
    let m2a = Req::get("/items/articles?fields=id,blocks.collection&limit=1").auth(editor.clone());
    d.deviates("editor: the M2A is not theirs", "alias-outside-the-list", m2a).await;
    d.check("admin: the O2M alias", Req::get("/items/authors/1?fields=id,articles&deep[articles][_limit]=3&deep[articles][_sort]=id")).await;
    d.check("admin: roles", Req::get("/roles?fields=name,policies.policy.name&sort=name")).await;
    d.check("admin: policies", Req::get("/policies?fields=name,admin_access,app_access&sort=name")).await;
    d.check(
        "admin: the Editors' permissions",
        Req::get("/permissions?fields=collection,action,permissions,validation,presets,fields&filter[policy][name][_eq]=Editors&sort=id"),
    )
    .await;
    // Files, settings, presets, versions, history, comments, notifications.
    d.check("admin: files", Req::get("/files?fields=id,storage,filename_download,title,type,filesize,folder.name&sort=filename_download")).await;
    d.check("admin: the file's bytes", Req::get(&format!("/assets/{file_id}"))).await;
    d.check("admin: the bucket file's bytes", Req::get(&format!("/assets/{bucket_file}"))).await;
    d.check("admin: settings", Req::get("/settings?fields=project_name,auth_login_attempts")).await;
    d.check("editor: presets", Req::get("/presets?fields=collection,layout,layout_query&filter[user][_eq]=$CURRENT_USER").auth(editor.clone())).await;
    d.check("admin: versions", Req::get("/versions?fields=key,name,collection,item&sort=key")).await;
    let versions = directus(&peer.url, PEER_TOKEN, Method::GET, "/versions?fields=id,key&sort=key", json!(null)).await;
    for v in versions.as_array().expect("versions") {
        let compare = format!("/versions/{}/compare", v["id"].as_str().expect("version id"));
        let (ours, theirs) = d.both(&Req::get(&compare), &Req::get(&compare)).await;
        let (ours, theirs) = (ours.json()["data"]["outdated"].clone(), theirs.json()["data"]["outdated"].clone());
        assert_eq!(ours, theirs, "{}: outdated here and in Directus", v["key"]);
    }
    // Fields added to directus_users, their values and their relation.
    d.check("admin: custom user fields", Req::get("/users?fields=email,department,favorite_article.title&sort=email")).await;
    d.check("admin: filtered by a custom field", Req::get("/users?fields=email&filter[department][_eq]=News")).await;
    d.check("editor: a custom field of their own", Req::get("/users/me?fields=email,department").auth(editor.clone())).await;
    d.check("admin: activity", Req::get("/activity?fields=action,collection,item&filter[collection][_eq]=articles&sort=id")).await;
    // Carried over with the deleted user's id, as Directus keeps it (docs/coming-from-directus.md).
    let path = format!("/activity?fields=action,collection,item,user&filter[item][_eq]={LEAVER}&filter[action][_eq]=login");
    let (ours, _) = d.check("admin: a deleted user's activity", Req::get(&path)).await;
    assert_eq!(ours.json()["data"][0]["action"], "login", "the leaver's sign-in came along: {}", ours.json());
    d.check("admin: revisions", Req::get("/revisions?fields=collection,item,delta&filter[collection][_eq]=articles&sort=id")).await;
    d.check("admin: comments", Req::get("/comments?fields=collection,item,comment")).await;
    d.check("editor: notifications", Req::get("/notifications?fields=subject,message,status").auth(editor.clone())).await;
    // Shares: the same link and password open the same item.
    d.check("admin: shares", Req::get("/shares?fields=name,collection,item,role.name,password,times_used")).await;
    d.check("public: the share's facts", Req::get(&format!("/shares/info/{share}")).auth(Auth::Public)).await;
    d.check("editor: the share permission", Req::get("/permissions/me/articles/1").auth(editor.clone())).await;
    let shared = Auth::Tokens(share_session(&app.rest_url, &share).await, share_session(&peer.url, &share).await);
    d.check("share: its article", Req::get("/items/articles/1?fields=id,title,status").auth(shared.clone())).await;
    d.check("share: another article", Req::get("/items/articles/2?fields=id").auth(shared.clone())).await;
    d.check("share: the list", Req::get("/items/articles?fields=id&sort=id").auth(shared)).await;
    // The metadata came along whole: Directus's own snapshot has nothing to change here.
    let r = http_client()
        .build()
        .expect("client")
        .post(format!("{}/schema/diff", app.rest_url))
        .bearer_auth(PEER_TOKEN)
        .json(&their_snapshot)
        .send()
        .await
        .expect("diff");
    let status = r.status().as_u16();
    assert_eq!(status, 204, "metadata left to change: {}", r.text().await.unwrap_or_default());
    let failures = d.failures();
    assert!(failures.is_empty(), "answers differ:\n{failures}");

    // Writes here follow Directus's rules: the validation rule and the preset.
    let r = app.as_token(Some("editor-static-token"), Method::POST, "/items/articles", Some(json!({"body": "no title"}))).await;
    assert_eq!((r.status, r.body["errors"][0]["extensions"]["code"].clone()), (400, json!("FAILED_VALIDATION")), "{}", r.body);
    let r = app.as_token(Some("editor-static-token"), Method::POST, "/items/articles", Some(json!({"title": "Written here"}))).await;
    assert!(r.status == 200 || r.status == 204, "{}", r.body);
    let status = app.sql("SELECT to_json(status)::text FROM articles WHERE title = 'Written here'").await;
    assert_eq!(status, json!("draft"), "the policy's preset applies");
    let notified = app.sql(&format!("SELECT to_json(count(*))::text FROM cdapi.notifications WHERE recipient = '{editor_id}'")).await;
    assert_eq!(notified, json!(1));

    // Users made here own content: the content's keys into Directus's users and files name ours.
    let keys = app
        .sql("SELECT json_agg(confrelid::regclass::text ORDER BY conname)::text FROM pg_constraint WHERE conrelid = 'photos'::regclass AND contype = 'f'")
        .await;
    assert_eq!(keys, json!(["cdapi.users", "cdapi.files"]));
    let r = app.as_token(Some(PEER_TOKEN), Method::POST, "/users", Some(json!({"email": "made-here@example.com", "password": "made-here-password-1"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let photo = json!({"caption": "Made here", "owner": r.body["data"]["id"], "picture": file_id});
    let r = app.as_token(Some(PEER_TOKEN), Method::POST, "/items/photos?fields=owner.email", Some(photo)).await;
    assert_eq!((r.status, r.body["data"]["owner"]["email"].clone()), (200, json!("made-here@example.com")), "{}", r.body);
    let nested = json!({"caption": "Nested", "owner": {"email": "nested-here@example.com", "password": "nested-here-password-1"}});
    let r = app.as_token(Some(PEER_TOKEN), Method::POST, "/items/photos?fields=owner.email", Some(nested)).await;
    assert_eq!((r.status, r.body["data"]["owner"]["email"].clone()), (200, json!("nested-here@example.com")), "{}", r.body);

    // Live now (sign-ins and writes recorded here): importing again would undo what changed
    // here, so it is refused and changes nothing, unless forced.
    let r = app.as_token(Some(PEER_TOKEN), Method::PATCH, "/settings", Some(json!({"project_name": "Renamed here"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let project = || app.sql("SELECT to_json(project_name)::text FROM cdapi.settings");
    let again = |args: &'static [&'static str]| {
        let (core, db_url) = (core.clone(), db_url.clone());
        std::process::Command::new(core).arg("import-directus").args(args).env("DATABASE_URL", db_url).output().expect("import again")
    };
    let refused = again(&[]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("since the import of") && err.contains("--force"), "{err}");
    assert_eq!(project().await, json!("Renamed here"), "a refused re-run changed nothing");
    let dry = again(&["--dry-run"]);
    assert!(!dry.status.success(), "the dry run says the same: {}", String::from_utf8_lossy(&dry.stdout));
    let forced = again(&["--force"]);
    assert!(forced.status.success(), "{}", String::from_utf8_lossy(&forced.stderr));
    // The photos of the users made here stay, naming users the run replaced.
    let out = String::from_utf8_lossy(&forced.stdout);
    assert!(out.contains("kept: 2 row(s) of photos.owner name no row of cdapi.users"), "{out}");
    let photos = app.sql("SELECT to_json(count(*))::text FROM photos WHERE owner IS NOT NULL").await;
    assert_eq!(photos, json!(3), "no cascade or null into the content");
    assert_eq!(project().await, json!("Newsroom"), "forced: Directus's settings again");

    // An import made before imports were noted (no note) is recognised by Directus's users
    // being ours already: activity recorded here since refuses a re-run all the same.
    let cleared = sql_at(&db_url, "WITH d AS (DELETE FROM cdapi.directus_imports RETURNING 1) SELECT to_json(count(*))::text FROM d").await;
    assert_eq!(cleared, json!(2));
    let unnoted = again(&[]);
    assert!(unnoted.status.success(), "nothing recorded here since the forced import: {}", String::from_utf8_lossy(&unnoted.stderr));
    let r = app.as_token(Some(PEER_TOKEN), Method::PATCH, "/items/articles/2", Some(json!({"title": "Changed here"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sql = "WITH d AS (DELETE FROM cdapi.directus_imports RETURNING 1) SELECT to_json(count(*))::text FROM d";
    assert_eq!(sql_at(&db_url, sql).await, json!(1));
    let refused = again(&[]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("since the import of an earlier version"), "{err}");
}
