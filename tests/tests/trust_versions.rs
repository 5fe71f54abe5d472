//! Content versions, from the attacker's side: each test reproduces one way a caller reached
//! through `/versions`, `?version=` or GraphQL what their permission rows deny them (another
//! user's version, version content without read on `directus_versions`, a delta field hidden
//! from them, a hidden field recovered from a hash, junction rows of items they cannot read),
//! and failed on the code before the fix.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{PUBLIC_POLICY, eventually, id_of, role};
use e2e_tests::{Dataset, Spec, TestApp, app, assert_error, start};
use reqwest::Method;
use serde_json::{Value, json};

/// A version `key` of the article `item` made by the admin, with `delta` saved into it; its id.
async fn admin_version(app: &TestApp, key: &str, item: i64, delta: Value) -> String {
    let r = app.admin(Method::POST, "/versions", json!({"key": key, "name": key, "collection": "articles", "item": item.to_string()})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = id_of(&r.body["data"]);
    let r = app.admin(Method::POST, &format!("/versions/{id}/save"), delta).await;
    assert_eq!(r.status, 200, "{}", r.body);
    id
}

/// The GraphQL error code of a reply's first error (`""` when there is none).
fn gql_code(r: &e2e_tests::Reply) -> String {
    r.body["errors"][0]["extensions"]["code"].as_str().unwrap_or_default().to_owned()
}

/// Reading an item in a version (`?version=`, GraphQL `<collection>_by_version`) needs read on
/// that version's `directus_versions` row, not only on the live item: the public, a role
/// without any grant on versions and a role reading only its own versions never see another
/// user's unpublished changes.
#[tokio::test]
async fn reading_the_live_item_does_not_open_its_unpublished_versions() {
    let app = app(Dataset::DemoWrites);
    let published = json!({"status": {"_eq": "published"}});
    let r = app
        .admin(
            Method::POST,
            "/permissions",
            json!({"policy": PUBLIC_POLICY, "collection": "articles", "action": "read", "permissions": published, "fields": ["*"]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    eventually("the public reads articles", || async { app.as_token(None, Method::GET, "/items/articles/1", None).await.status == 200 }).await;
    admin_version(app, "embargo", 1, json!({"title": "Embargoed title"})).await;
    let article_reader = json!({"collection": "articles", "action": "read", "permissions": published, "fields": ["*"]});
    let (plain, _, _) = role(app, "PlainReaders11", json!([article_reader])).await;
    let own = json!({"user_created": {"_eq": "$CURRENT_USER"}});
    let (own_only, _, _) =
        role(app, "OwnVersionReaders11", json!([article_reader, {"collection": "directus_versions", "action": "read", "permissions": own, "fields": ["*"]}]))
            .await;
    let (all, _, _) = role(app, "VersionReaders11", json!([article_reader, {"collection": "directus_versions", "action": "read", "fields": ["*"]}])).await;
    for (who, token) in [("the public", None), ("a role without versions", Some(plain.as_str())), ("a role reading its own versions", Some(own_only.as_str()))]
    {
        let r = app.as_token(token, Method::GET, "/items/articles/1", None).await;
        assert_eq!(r.status, 200, "{who} reads the live item: {}", r.body);
        let r = app.as_token(token, Method::GET, "/items/articles/1?version=embargo&fields=title", None).await;
        assert_error(&r, 403, "FORBIDDEN", &format!("{who} reading another's version through REST"));
        let q = "{ articles_by_version(id: 1, version: \"embargo\") { title } }";
        let g = app.graphql("/graphql", token, q, json!({})).await;
        assert_eq!(gql_code(&g), "FORBIDDEN", "{who} through GraphQL: {}", g.body);
        assert!(!g.body.to_string().contains("Embargoed"), "{who}: {}", g.body);
    }
    // With read on the version row, the preview works as before.
    let r = app.as_token(Some(&all), Method::GET, "/items/articles/1?version=embargo&fields=title", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["title"], "Embargoed title");
}

/// The item rules (row filter and fields) of the caller's permissions on `directus_versions`
/// hold on every version endpoint: a role allowed only its own versions can neither list, read,
/// rename, save into, compare, promote nor delete another user's version, and its own version
/// still goes through the whole flow.
#[tokio::test]
async fn a_role_limited_to_its_own_versions_cannot_touch_another_users_version() {
    let app = app(Dataset::DemoWrites);
    let own = json!({"user_created": {"_eq": "$CURRENT_USER"}});
    let (token, _, _) = role(
        app,
        "OwnVersionEditors7",
        json!([
            {"collection": "articles", "action": "read", "fields": ["*"]},
            {"collection": "articles", "action": "update", "fields": ["*"]},
            {"collection": "directus_versions", "action": "create", "fields": ["*"]},
            {"collection": "directus_versions", "action": "read", "permissions": own, "fields": ["*"]},
            {"collection": "directus_versions", "action": "update", "permissions": own, "fields": ["*"]},
            {"collection": "directus_versions", "action": "delete", "permissions": own},
        ]),
    )
    .await;
    let theirs = admin_version(app, "theirs7", 2, json!({"title": "The admin's draft"})).await;
    let title = || app.sql("SELECT to_json(title)::text FROM articles WHERE id = 2");
    let before = title().await;
    let stored_sql = format!("SELECT json_build_array(name, delta)::text FROM cdapi.versions WHERE id = '{theirs}'");
    let stored = || app.sql(&stored_sql);
    let kept = stored().await;
    let t = Some(token.as_str());
    let r = app.as_token(t, Method::GET, "/versions", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!r.body.to_string().contains(&theirs), "the list shows another's version: {}", r.body);
    let r = app.as_token(t, Method::GET, "/versions?filter[collection][_eq]=articles&filter[item][_eq]=2", None).await;
    assert_eq!(r.body["data"], json!([]), "{}", r.body);
    assert_error(&app.as_token(t, Method::GET, &format!("/versions/{theirs}"), None).await, 403, "FORBIDDEN", "read another's version");
    assert_error(&app.as_token(t, Method::PATCH, &format!("/versions/{theirs}"), Some(json!({"name": "Mine now"}))).await, 403, "FORBIDDEN", "rename");
    assert_error(&app.as_token(t, Method::POST, &format!("/versions/{theirs}/save"), Some(json!({"title": "Hijacked"}))).await, 403, "FORBIDDEN", "save into");
    assert_error(&app.as_token(t, Method::GET, &format!("/versions/{theirs}/compare"), None).await, 403, "FORBIDDEN", "compare");
    assert_error(&app.as_token(t, Method::POST, &format!("/versions/{theirs}/promote"), Some(json!({"force": true}))).await, 403, "FORBIDDEN", "promote");
    assert_error(&app.as_token(t, Method::DELETE, &format!("/versions/{theirs}"), None).await, 403, "FORBIDDEN", "delete");
    assert_eq!(title().await, before, "the item is unchanged");
    assert_eq!(stored().await, kept, "the version is unchanged");
    let g = app.graphql("/graphql/system", t, "{ versions { id } }", json!({})).await;
    assert!(!g.body.to_string().contains(&theirs), "GraphQL lists another's version: {}", g.body);

    // Their own version: the whole flow.
    let r = app.as_token(t, Method::POST, "/versions", Some(json!({"key": "mine7", "collection": "articles", "item": "2"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mine = id_of(&r.body["data"]);
    let r = app.as_token(t, Method::GET, "/versions", None).await;
    assert!(r.body.to_string().contains(&mine), "{}", r.body);
    let r = app.as_token(t, Method::PATCH, &format!("/versions/{mine}"), Some(json!({"name": "Mine"}))).await;
    assert_eq!(r.body["data"]["name"], "Mine", "{}", r.body);
    let r = app.as_token(t, Method::POST, &format!("/versions/{mine}/save"), Some(json!({"title": "Editor's title"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.as_token(t, Method::GET, &format!("/versions/{mine}/compare"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["outdated"], false, "{}", r.body);
    let r = app.as_token(t, Method::POST, &format!("/versions/{mine}/promote"), Some(json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(title().await, json!("Editor's title"));
    let r = app.as_token(t, Method::POST, "/versions", Some(json!({"key": "mine7b", "collection": "articles", "item": "2"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.as_token(t, Method::DELETE, &format!("/versions/{}", id_of(&r.body["data"])), None).await;
    assert_eq!(r.status, 204, "their own version: {}", r.body);
}

/// The field list of the caller's rows on `directus_versions` holds on `/versions` as on any
/// collection: fields outside their read rows are absent, and a rename writing a field outside
/// their update rows is refused.
#[tokio::test]
async fn a_version_field_outside_the_roles_field_list_stays_out_of_reach() {
    let app = app(Dataset::DemoWrites);
    let (token, _, _) = role(
        app,
        "VersionNamers7",
        json!([
            {"collection": "articles", "action": "read", "fields": ["*"]},
            {"collection": "directus_versions", "action": "read", "fields": ["id", "key", "name", "collection", "item"]},
            {"collection": "directus_versions", "action": "update", "fields": ["name"]},
        ]),
    )
    .await;
    let id = admin_version(app, "fields7", 12, json!({"title": "Not for namers"})).await;
    let t = Some(token.as_str());
    for path in [format!("/versions/{id}"), "/versions?filter[item][_eq]=12".to_owned()] {
        let r = app.as_token(t, Method::GET, &path, None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(!r.body.to_string().contains("Not for namers") && !r.body.to_string().contains("hash"), "{path}: {}", r.body);
    }
    let r = app.as_token(t, Method::PATCH, &format!("/versions/{id}"), Some(json!({"key": "renamed7"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "writing a field outside the update rows");
    let r = app.as_token(t, Method::PATCH, &format!("/versions/{id}"), Some(json!({"name": "Named"}))).await;
    assert_eq!(r.body["data"]["name"], "Named", "{}", r.body);
    assert_eq!(r.body["data"]["key"], "fields7", "{}", r.body);
    let r = app.as_token(t, Method::POST, &format!("/versions/{id}/save"), Some(json!({"title": "x"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "saving needs `delta` within the update rows");
}

/// GraphQL `versions { delta }` answers what REST `GET /versions/:id` answers: the delta cut to
/// the fields the caller may read on the versioned item, never a hidden field's saved value.
#[tokio::test]
async fn graphql_shows_no_delta_field_that_rest_hides() {
    let app = app(Dataset::DemoWrites);
    let (token, _, _) = role(
        app,
        "Critics9",
        json!([
            {"collection": "articles", "action": "read", "fields": ["id", "title", "status"]},
            {"collection": "directus_versions", "action": "read", "fields": ["*"]},
        ]),
    )
    .await;
    let id = admin_version(app, "hidden9", 4, json!({"title": "Seen", "rating": 5})).await;
    let t = Some(token.as_str());
    let rest = app.as_token(t, Method::GET, &format!("/versions/{id}"), None).await;
    assert_eq!(rest.status, 200, "{}", rest.body);
    assert_eq!(rest.body["data"]["delta"], json!({"title": "Seen"}), "{}", rest.body);
    let fields = "id key name collection item hash delta date_created date_updated";
    let q = format!("query($id: ID!) {{ versions_by_id(id: $id) {{ {fields} }} versions(filter: {{id: {{_eq: $id}}}}) {{ {fields} }} }}");
    let g = app.graphql("/graphql/system", t, &q, json!({"id": id})).await;
    assert_eq!(g.status, 200, "{}", g.body);
    assert!(g.body.get("errors").is_none(), "{}", g.body);
    for (what, v) in [("versions_by_id", &g.body["data"]["versions_by_id"]), ("versions", &g.body["data"]["versions"][0])] {
        for f in fields.split(' ') {
            assert_eq!(v[f], rest.body["data"][f], "{what}.{f}: GraphQL {} REST {}", g.body, rest.body);
        }
    }
    assert!(!g.body.to_string().contains("rating"), "{}", g.body);
}

/// A version's delta may hold a nested object in an M2O field (a related item the version
/// would create or change): a reader sees only the related key it names, never its values,
/// which belong to the related collection and may be outside what she may read there.
#[tokio::test]
async fn a_delta_shows_no_nested_values_of_a_related_collection() {
    let app = app(Dataset::DemoWrites);
    let (token, _, _) = role(
        app,
        "Linkers10",
        json!([
            {"collection": "articles", "action": "read", "fields": ["id", "title", "author"]},
            {"collection": "authors", "action": "read", "fields": ["id", "name"]},
            {"collection": "directus_versions", "action": "read", "fields": ["*"]},
        ]),
    )
    .await;
    let changed = admin_version(app, "nested10a", 5, json!({"title": "T", "author": {"id": 2, "email": "changed10@example.com"}})).await;
    let created = admin_version(app, "nested10b", 5, json!({"author": {"name": "New10", "email": "created10@example.com"}})).await;
    let t = Some(token.as_str());
    for (id, author) in [(changed, json!(2)), (created, Value::Null)] {
        let rest = app.as_token(t, Method::GET, &format!("/versions/{id}"), None).await;
        assert_eq!(rest.status, 200, "{}", rest.body);
        assert_eq!(rest.body["data"]["delta"]["author"], author, "{}", rest.body);
        let g = app.graphql("/graphql/system", t, "query($id: ID!) { versions_by_id(id: $id) { delta } }", json!({"id": id})).await;
        assert_eq!(g.body["data"]["versions_by_id"]["delta"]["author"], author, "{}", g.body);
    }
    let list = app.as_token(t, Method::GET, "/versions?filter[key][_starts_with]=nested10&fields=delta", None).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(!list.body.to_string().contains("10@example.com"), "{}", list.body);
    let admin = app.admin(Method::GET, "/versions?filter[key][_starts_with]=nested10&fields=delta", Value::Null).await;
    assert!(admin.body.to_string().contains("created10@example.com"), "admin access reads the delta as saved: {}", admin.body);
}

/// Creating a version goes through the caller's create rows on `directus_versions` as any
/// create does: a role allowed versions of headings only cannot make one of an article it may
/// read and update, nor set a field outside its create fields; nothing is left behind.
#[tokio::test]
async fn a_version_is_created_only_within_the_roles_create_rows() {
    let app = app(Dataset::DemoWrites);
    let (token, _, _) = role(
        app,
        "Versioners12",
        json!([
            {"collection": "articles", "action": "read", "fields": ["*"]},
            {"collection": "articles", "action": "update", "fields": ["*"]},
            {"collection": "headings", "action": "read", "fields": ["*"]},
            {"collection": "headings", "action": "update", "fields": ["*"]},
            {"collection": "directus_versions", "action": "read", "fields": ["*"]},
            {"collection": "directus_versions", "action": "create", "permissions": {"collection": {"_eq": "headings"}}, "fields": ["key", "collection", "item"]},
        ]),
    )
    .await;
    let heading = id_of(&app.admin(Method::POST, "/items/headings", json!({"title": "Versioned 12"})).await.body["data"]);
    let t = Some(token.as_str());
    let post = |body: Value| app.as_token(t, Method::POST, "/versions", Some(body));
    let r = post(json!({"key": "outside12", "collection": "articles", "item": "1"})).await;
    assert_error(&r, 403, "FORBIDDEN", "a version outside the create rows' filter");
    let r = post(json!({"key": "named12", "name": "Named", "collection": "headings", "item": heading})).await;
    assert_error(&r, 403, "FORBIDDEN", "a field outside the create rows' fields");
    let r = post(json!({"key": "inside12", "collection": "headings", "item": heading})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let all = app.admin(Method::GET, "/versions?filter[key][_ends_with]=12&fields=key", Value::Null).await;
    assert_eq!(all.body["data"], json!([{"key": "inside12"}]), "{}", all.body);
}

/// `POST /versions` answers the new version as the caller reads `directus_versions` (their
/// fields), and nothing (204) when they may not read it, as a create of any item does.
#[tokio::test]
async fn a_created_version_is_answered_as_the_creator_may_read_it() {
    let app = app(Dataset::DemoWrites);
    let grants = |read: bool| {
        let mut rows = vec![
            json!({"collection": "headings", "action": "read", "fields": ["*"]}),
            json!({"collection": "headings", "action": "update", "fields": ["*"]}),
            json!({"collection": "directus_versions", "action": "create", "fields": ["*"]}),
        ];
        if read {
            rows.push(json!({"collection": "directus_versions", "action": "read", "fields": ["id", "key"]}));
        }
        Value::from(rows)
    };
    let (narrow, _, _) = role(app, "Versioners14", grants(true)).await;
    let (blind, _, _) = role(app, "BlindVersioners14", grants(false)).await;
    let heading = id_of(&app.admin(Method::POST, "/items/headings", json!({"title": "Versioned 14"})).await.body["data"]);
    let r = app.as_token(Some(&narrow), Method::POST, "/versions", Some(json!({"key": "narrow14", "collection": "headings", "item": heading}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let fields: Vec<&String> = r.body["data"].as_object().map(|o| o.keys().collect()).unwrap_or_default();
    assert_eq!(fields, ["id", "key"], "only the fields it may read: {}", r.body);
    let r = app.as_token(Some(&blind), Method::POST, "/versions", Some(json!({"key": "blind14", "collection": "headings", "item": heading}))).await;
    assert_eq!((r.status, r.body.clone()), (204, Value::Null), "created, not readable by its creator");
    let all = app.admin(Method::GET, "/versions?filter[key][_ends_with]=14&fields=key&sort=key", Value::Null).await;
    assert_eq!(all.body["data"], json!([{"key": "blind14"}, {"key": "narrow14"}]), "{}", all.body);
}

/// Saving and previewing a version are rolled back: a delta that would suspend a related user
/// (an M2O to `directus_users`) must not end that user's sessions each time someone saves or
/// reads the version; promoting it, a real write, does.
#[tokio::test]
async fn saving_or_previewing_a_version_ends_no_sessions() {
    let app = app(Dataset::DemoWrites);
    let user = e2e_tests::create_user(app, "kept13@example.com", "kept-13-password").await;
    e2e_tests::exec(
        app,
        &format!("CREATE TABLE owned_notes (id serial PRIMARY KEY, owner uuid REFERENCES cdapi.users(id)); INSERT INTO owned_notes (owner) VALUES ('{user}')"),
    )
    .await;
    eventually("owned_notes is served", || async { app.admin(Method::GET, "/items/owned_notes/1?fields=owner.email", Value::Null).await.status == 200 }).await;
    let login = e2e_tests::post_json(app, "/auth/login", json!({"email": "kept13@example.com", "password": "kept-13-password"}), &[]).await;
    assert_eq!(login.status, 200, "{}", login.body);
    let mut refresh = login.body["data"]["refresh_token"].as_str().expect("refresh token").to_owned();
    let r = app.admin(Method::PATCH, "/collections/owned_notes", json!({"meta": {"versioning": true}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::POST, "/versions", json!({"key": "suspend13", "collection": "owned_notes", "item": "1"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = id_of(&r.body["data"]);
    let r = app.admin(Method::POST, &format!("/versions/{id}/save"), json!({"owner": {"id": user, "status": "suspended"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::GET, "/items/owned_notes/1?version=suspend13&fields=owner.status", Value::Null).await;
    assert_eq!(r.body["data"]["owner"]["status"], "suspended", "{}", r.body);
    let r = e2e_tests::post_json(app, "/auth/refresh", json!({"refresh_token": refresh, "mode": "json"}), &[]).await;
    assert_eq!(r.status, 200, "the session outlives the save and the preview: {}", r.body);
    refresh = r.body["data"]["refresh_token"].as_str().expect("refresh token").to_owned();
    let r = app.admin(Method::POST, &format!("/versions/{id}/promote"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = e2e_tests::post_json(app, "/auth/refresh", json!({"refresh_token": refresh, "mode": "json"}), &[]).await;
    assert_eq!(r.status, 401, "the promotion suspends the user and ends the session: {}", r.body);
}

/// A version's `hash` and compare's `mainHash` are keyed: from every value she can read, a
/// caller cannot test guesses of a field hidden from her against them; the hash stays stable,
/// so compare and promote with `mainHash` still work.
#[tokio::test]
async fn a_version_hash_does_not_confirm_guesses_of_a_hidden_field() {
    let app = app(Dataset::DemoWrites);
    let visible = ["id", "status", "title", "slug", "body", "published_at", "word_count", "author", "created_at"];
    let (token, _, _) = role(
        app,
        "Critics10",
        json!([
            {"collection": "articles", "action": "read", "fields": visible},
            {"collection": "articles", "action": "update", "fields": ["title"]},
            {"collection": "directus_versions", "action": "create", "fields": ["*"]},
            {"collection": "directus_versions", "action": "read", "fields": ["*"]},
            {"collection": "directus_versions", "action": "update", "fields": ["*"]},
        ]),
    )
    .await;
    let t = Some(token.as_str());
    let r = app.as_token(t, Method::POST, "/versions", Some(json!({"key": "guess10", "collection": "articles", "item": "5"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = id_of(&r.body["data"]);
    let hash = r.body["data"]["hash"].as_str().expect("hash").to_owned();
    let r = app.as_token(t, Method::GET, &format!("/versions/{id}/compare"), None).await;
    assert_eq!(r.body["data"]["outdated"], false, "stable for the same item state: {}", r.body);
    let main_hash = r.body["data"]["mainHash"].as_str().expect("mainHash").to_owned();
    assert_eq!(main_hash, hash);
    // The attacker's offline search, done here in SQL on the row she reads with each guess of
    // `rating` put in: no guess may reproduce either hash.
    let guesses = app
        .sql(&format!(
            "SELECT coalesce(json_agg(g), '[]')::text FROM (SELECT NULL::int AS g UNION ALL SELECT generate_series(0, 6)) gs, \
             LATERAL (SELECT a.id, a.status, a.title, a.slug, a.body, a.published_at, gs.g AS rating, a.word_count, a.author, a.created_at \
                      FROM articles a WHERE a.id = 5) t \
             WHERE encode(sha256(convert_to(row_to_json(t)::text, 'UTF8')), 'hex') IN ('{hash}', '{main_hash}')"
        ))
        .await;
    assert_eq!(guesses, json!([]), "a guess of the hidden rating matches the hash");
    // The flow still works: the item changes, compare gives the new hash, promote accepts it.
    let r = app.admin(Method::PATCH, "/items/articles/5", json!({"rating": 2})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.as_token(t, Method::POST, &format!("/versions/{id}/save"), Some(json!({"title": "Guessed"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.as_token(t, Method::GET, &format!("/versions/{id}/compare"), None).await;
    assert_eq!(r.body["data"]["outdated"], true, "{}", r.body);
    let main_hash = r.body["data"]["mainHash"].as_str().expect("mainHash").to_owned();
    let r = app.as_token(t, Method::POST, &format!("/versions/{id}/promote"), Some(json!({}))).await;
    assert_error(&r, 422, "UNPROCESSABLE_CONTENT", "promote an outdated version");
    let r = app.as_token(t, Method::POST, &format!("/versions/{id}/promote"), Some(json!({"mainHash": main_hash}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql("SELECT to_json(title)::text FROM articles WHERE id = 5").await, json!("Guessed"));
}

/// Saving into a version checks nested (relational) data as a write would: an editor who may
/// not read or update the junction rows of draft articles cannot pull one into her version of
/// a published article, and the version preview never shows it to her.
#[tokio::test]
async fn a_version_save_cannot_pull_in_junction_rows_the_editor_cannot_read() {
    let app = app(Dataset::DemoWrites);
    let published = json!({"status": {"_eq": "published"}});
    let junction_of_published = json!({"articles_id": {"status": {"_eq": "published"}}});
    let (token, _, _) = role(
        app,
        "TagEditors8",
        json!([
            {"collection": "articles", "action": "read", "permissions": published, "fields": ["*"]},
            {"collection": "articles", "action": "update", "permissions": published, "fields": ["*"]},
            {"collection": "articles_tags", "action": "read", "permissions": junction_of_published, "fields": ["*"]},
            {"collection": "articles_tags", "action": "update", "permissions": junction_of_published, "fields": ["*"]},
            {"collection": "articles_tags", "action": "delete", "permissions": junction_of_published},
            {"collection": "tags", "action": "read", "fields": ["*"]},
            {"collection": "directus_versions", "action": "create", "fields": ["*"]},
            {"collection": "directus_versions", "action": "read", "fields": ["*"]},
            {"collection": "directus_versions", "action": "update", "fields": ["*"]},
        ]),
    )
    .await;
    let t = Some(token.as_str());
    let hidden = app.sql("SELECT to_json(min(j.id))::text FROM articles_tags j JOIN articles a ON a.id = j.articles_id WHERE a.status = 'draft'").await;
    let own = app.sql("SELECT json_agg(id ORDER BY id)::text FROM articles_tags WHERE articles_id = 3").await;
    let mut tags = own.as_array().cloned().unwrap_or_default();
    tags.push(hidden.clone());
    // A direct write of the same payload is refused.
    let r = app.as_token(t, Method::PATCH, "/items/articles/3", Some(json!({"tags": tags}))).await;
    assert_error(&r, 403, "FORBIDDEN", "a direct write pulling in a draft's junction row");
    let r = app.as_token(t, Method::POST, "/versions", Some(json!({"key": "tags8", "collection": "articles", "item": "3"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = id_of(&r.body["data"]);
    let r = app.as_token(t, Method::POST, &format!("/versions/{id}/save"), Some(json!({"tags": tags}))).await;
    assert_error(&r, 403, "FORBIDDEN", "saving the same payload into a version");
    let r = app.as_token(t, Method::GET, "/items/articles/3?version=tags8&fields=tags.id,tags.articles_id,tags.tags_id.name", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let seen: Vec<Value> = r.body["data"]["tags"].as_array().cloned().unwrap_or_default().iter().map(|j| j["id"].clone()).collect();
    assert!(!seen.contains(&hidden), "the preview shows a draft's junction row {hidden}: {}", r.body);
    // Her own junction rows can be written, and so saved into the version.
    let r = app.as_token(t, Method::PATCH, "/items/articles/3", Some(json!({"tags": own}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.as_token(t, Method::POST, &format!("/versions/{id}/save"), Some(json!({"tags": own}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql("SELECT json_agg(id ORDER BY id)::text FROM articles_tags WHERE articles_id = 3").await, own, "nothing moved");
}

/// Listing versions is a read like any other, within its budgets: without `limit`, at most
/// QUERY_LIMIT_DEFAULT of them (it was every version, whatever their number); a reply over
/// RESPONSE_MAX_BYTES is refused, not sent.
#[tokio::test(flavor = "multi_thread")]
async fn listing_versions_stays_within_the_read_budgets() {
    let spec = Spec {
        dataset: Dataset::Demo,
        name: Some("versions_budgets".into()),
        core_env: vec![("QUERY_LIMIT_DEFAULT".into(), "2".into()), ("RESPONSE_MAX_BYTES".into(), "600".into())],
        ..Spec::default()
    };
    let app = tokio::task::spawn_blocking(move || start(spec)).await.expect("join").expect("environment");
    for key in ["budget-a", "budget-b", "budget-c"] {
        let r = app.admin(Method::POST, "/versions", json!({"key": key, "collection": "articles", "item": "1"})).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let r = app.admin(Method::GET, "/versions?fields=key", Value::Null).await;
    assert_eq!(r.body["data"], json!([{"key": "budget-a"}, {"key": "budget-b"}]), "QUERY_LIMIT_DEFAULT applies: {}", r.body);
    let r = app.admin(Method::GET, "/versions?fields=key&limit=-1", Value::Null).await;
    assert_eq!(r.body["data"].as_array().map(Vec::len), Some(3), "{}", r.body);
    let r = app.admin(Method::GET, "/versions?limit=-1", Value::Null).await;
    assert_error(&r, 400, "INVALID_QUERY", "three whole versions are over RESPONSE_MAX_BYTES");
    assert!(r.body["errors"][0]["message"].as_str().is_some_and(|m| m.contains("RESPONSE_MAX_BYTES")), "{}", r.body);
}

/// A version is made only of an item of a collection with Content Versioning on (Directus's
/// `meta.versioning`; docs/security.md "Content versions"): a role that may read and update its
/// own user, a junction row or a share could make versions of them, system items included,
/// which nobody can see through the Data Studio and which only an admin could clean up. A role
/// without read on the item learns nothing of the collection's setting (403 first).
#[tokio::test]
async fn a_version_is_made_only_where_content_versioning_is_on() {
    let app = app(Dataset::DemoWrites);
    let me = json!({"id": {"_eq": "$CURRENT_USER"}});
    let (token, user, _) = role(
        app,
        "VersionMakers14",
        json!([
            {"collection": "articles", "action": "read", "fields": ["*"]},
            {"collection": "articles", "action": "update", "fields": ["*"]},
            {"collection": "articles_tags", "action": "read", "fields": ["*"]},
            {"collection": "articles_tags", "action": "update", "fields": ["*"]},
            {"collection": "directus_users", "action": "read", "permissions": me, "fields": ["*"]},
            {"collection": "directus_users", "action": "update", "permissions": me, "fields": ["first_name"]},
            {"collection": "directus_versions", "action": "create", "fields": ["*"]},
            {"collection": "directus_versions", "action": "read", "fields": ["*"]},
        ]),
    )
    .await;
    let t = Some(token.as_str());
    let made = || app.sql("SELECT count(*)::text FROM cdapi.versions WHERE key LIKE 'made14%'");
    let r = app.as_token(t, Method::POST, "/versions", Some(json!({"key": "made14-user", "collection": "directus_users", "item": user}))).await;
    assert_error(&r, 422, "UNPROCESSABLE_CONTENT", "a version of the caller's own user");
    let r = app.as_token(t, Method::POST, "/versions", Some(json!({"key": "made14-link", "collection": "articles_tags", "item": "1"}))).await;
    assert_error(&r, 422, "UNPROCESSABLE_CONTENT", "a version of a junction row");
    let r = app.as_token(t, Method::POST, "/versions", Some(json!({"key": "made14-block", "collection": "articles_blocks", "item": "1"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "a version of an item the role cannot read");
    let r = app.admin(Method::POST, "/versions", json!({"key": "made14-admin", "collection": "directus_users", "item": user})).await;
    assert_error(&r, 422, "UNPROCESSABLE_CONTENT", "the admin's version of a user");
    assert_eq!(made().await, json!(0), "no version was made");
    let r = app.admin(Method::PATCH, "/collections/directus_users", json!({"meta": {"versioning": true}})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "versioning cannot be turned on for a system collection");

    // Where the admin turns it on, the same request makes the version.
    let r = app.admin(Method::PATCH, "/collections/articles_tags", json!({"meta": {"versioning": true}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.as_token(t, Method::POST, "/versions", Some(json!({"key": "made14-link", "collection": "articles_tags", "item": "1"}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["collection"], "articles_tags");
    assert_eq!(made().await, json!(1));
}
