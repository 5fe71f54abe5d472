//! Shares (docs/shares.md; Directus 11's `directus_shares`): a share signs in without an account
//! and reads its item and what relates to it, within what both its role and its creator may read;
//! from the attacker's side: a share session reaching for another item (directly, by list, nested,
//! through GraphQL), writing, outliving its share; signing in with a wrong or missing password,
//! past `max_uses` or the share's dates; a user sharing an item they may not share, forging the
//! creator or moving a share to another item.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, id_of, role};
use e2e_tests::{Dataset, Spec, TestApp, assert_error, exec, start, wait_mail};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// This file's environment: the demo schema, for writes, with mail. Token lookups are cached for
/// the default 30 s (STATIC_TOKEN_CACHE_TTL): a deleted share's sessions must end at once, from
/// the announcement of its delete, within the test's patience.
fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| start(Spec { dataset: Dataset::DemoWrites, name: Some("shares".into()), mail: true, ..Spec::default() }).expect("environment"))
}

/// Creates an item as the admin; returns its id.
async fn created(app: &TestApp, path: &str, body: Value) -> String {
    let r = app.admin(Method::POST, path, body.clone()).await;
    assert_eq!(r.status, 200, "POST {path} {body}: {}", r.body);
    id_of(&r.body["data"])
}

/// An author with a published and a draft article, each with a comment, and another author's
/// article. Returns (author, published, draft, other article).
async fn authors_and_articles(app: &TestApp, tag: &str) -> (String, String, String, String) {
    let author = created(app, "/items/authors", json!({"name": format!("Shared author {tag}")})).await;
    let other = created(app, "/items/authors", json!({"name": format!("Other author {tag}")})).await;
    let published = created(app, "/items/articles", json!({"title": format!("Shared {tag}"), "status": "published", "author": author})).await;
    let draft = created(app, "/items/articles", json!({"title": format!("Draft {tag}"), "status": "draft", "author": author})).await;
    let elsewhere = created(app, "/items/articles", json!({"title": format!("Elsewhere {tag}"), "status": "published", "author": other})).await;
    for article in [&published, &draft] {
        created(app, "/items/comments", json!({"article": article, "body": format!("On {article}")})).await;
    }
    (author, published, draft, elsewhere)
}

/// Signs in to `share` (with `password` when given); returns the reply.
async fn sign_in(app: &TestApp, share: &str, password: Option<&str>) -> e2e_tests::Reply {
    let mut body = json!({"share": share});
    if let Some(p) = password {
        body["password"] = json!(p);
    }
    app.as_token(None, Method::POST, "/shares/auth", Some(body)).await
}

/// A share session's access token.
async fn session(app: &TestApp, share: &str, password: Option<&str>) -> (String, String) {
    let r = sign_in(app, share, password).await;
    assert_eq!(r.status, 200, "signing in to {share}: {}", r.body);
    let data = &r.body["data"];
    (data["access_token"].as_str().expect("access_token").to_owned(), data["refresh_token"].as_str().expect("refresh_token").to_owned())
}

/// The `id`s of a list reply, as text, sorted.
fn ids(r: &e2e_tests::Reply) -> Vec<String> {
    let mut out: Vec<String> = r.body["data"].as_array().map(|a| a.iter().map(id_of).collect()).unwrap_or_default();
    out.sort();
    out
}

#[tokio::test]
async fn a_share_reads_its_item_and_what_relates_to_it_and_nothing_else() {
    let app = env();
    let (author, published, draft, elsewhere) = authors_and_articles(app, "one").await;
    let everything = |c: &str| json!({"collection": c, "action": "read", "permissions": null, "fields": ["*"]});
    let (_, _, viewers) = role(app, "ShareViewers", json!([everything("articles"), everything("authors"), everything("comments")])).await;
    let share = created(app, "/shares", json!({"name": "Look", "collection": "articles", "item": published, "role": viewers})).await;

    // The public facts, for anyone; no password.
    let r = app.as_token(None, Method::GET, &format!("/shares/info/{share}"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let info = &r.body["data"];
    assert_eq!((info["id"].clone(), info["collection"].clone(), info["item"].clone()), (json!(share), json!("articles"), json!(published)));
    assert_eq!((info["password"].clone(), info["times_used"].clone()), (Value::Null, json!(0)), "{info}");

    let (token, refresh) = session(app, &share, None).await;
    let get = |path: String| {
        let token = token.clone();
        async move { app.as_token(Some(&token), Method::GET, &path, None).await }
    };
    // The item, its author and its comments.
    let r = get(format!("/items/articles/{published}?fields=id,title,author.name,comments.body")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["author"]["name"], "Shared author one", "{}", r.body);
    assert_eq!(r.body["data"]["comments"], json!([{"body": format!("On {published}")}]), "{}", r.body);
    assert_eq!(ids(&get("/items/articles".into()).await), vec![published.clone()], "the list holds the shared item only");
    assert_eq!(ids(&get("/items/authors".into()).await), vec![author.clone()], "only the shared item's author");
    let r = get("/items/comments?fields=body".into()).await;
    assert_eq!(r.body["data"], json!([{"body": format!("On {published}")}]), "only the shared item's comments: {}", r.body);

    // Nothing else: another article by id, the author's other articles nested, another
    // collection, GraphQL.
    for other in [&draft, &elsewhere] {
        assert_error(&get(format!("/items/articles/{other}")).await, 403, "FORBIDDEN", "an article the share does not reach");
    }
    let r = get(format!("/items/authors/{author}?fields=articles.id")).await;
    assert_eq!(r.body["data"]["articles"], json!([{"id": published.parse::<i64>().expect("a serial id")}]), "the draft through the author: {}", r.body);
    assert_error(&get("/items/tags".into()).await, 403, "FORBIDDEN", "a collection the share's role cannot read");
    let g = app.graphql("/graphql", Some(&token), "{ articles { id } comments { body } }", json!({})).await;
    assert_eq!(g.body["data"]["articles"], json!([{"id": published}]), "{}", g.body);
    assert_eq!(g.body["data"]["comments"], json!([{"body": format!("On {published}")}]), "{}", g.body);

    // It writes nothing (the public may not), and it is no user.
    let r = app.as_token(Some(&token), Method::PATCH, &format!("/items/articles/{published}"), Some(json!({"title": "Defaced"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "a share session writing its item");
    assert_eq!(get("/users/me".into()).await.body, json!({"data": {"share": share}}));

    // A refresh keeps it going; the use was counted once.
    let r = app.as_token(None, Method::POST, "/auth/refresh", Some(json!({"refresh_token": refresh}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let refreshed = r.body["data"]["access_token"].as_str().expect("access_token").to_owned();
    let refresh = r.body["data"]["refresh_token"].as_str().expect("refresh_token").to_owned();
    assert_eq!(ids(&app.as_token(Some(&refreshed), Method::GET, "/items/articles", None).await), vec![published.clone()]);
    assert_eq!(app.sql(&format!("SELECT times_used::text FROM cdapi.shares WHERE id = '{share}'")).await, json!(1));

    // An invitation mails the link; only a user who may read the share sends one.
    let invite = |to: &str| json!({"share": share, "emails": [to]});
    let r = app.admin(Method::POST, "/shares/invite", invite("friend@example.com")).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let mail = wait_mail(app, "friend@example.com", 15).await.expect("the invitation");
    assert_eq!(mail["subject"], "Admin User has shared an item with you", "{mail}");
    assert!(mail["body"].as_str().is_some_and(|b| b.contains(&format!("/admin/shared/{share}")) && b.contains("an item in articles")), "{mail}");
    let (stranger, _, _) = role(app, "ShareStrangers", json!([everything("articles")])).await;
    for (who, token) in [("the share session", Some(refreshed.as_str())), ("the public", None), ("a user who cannot read the share", Some(stranger.as_str()))] {
        let r = app.as_token(token, Method::POST, "/shares/invite", Some(invite("victim@example.com"))).await;
        assert_eq!(r.status, 403, "{who} invited: {}", r.body);
    }
    let r = app.admin(Method::POST, "/shares/invite", json!({"share": share, "emails": ["not an address"]})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "an invitation to a non-address");
    assert!(wait_mail(app, "victim@example.com", 2).await.is_none(), "a refused invitation was mailed");

    // Deleting the share ends its sessions at once, not after the token cache's 30 s: its tokens
    // are refused, its refresh token too.
    let r = app.admin(Method::DELETE, &format!("/shares/{share}"), Value::Null).await;
    assert_eq!(r.status, 204, "{}", r.body);
    eventually("the deleted share's token is refused", || {
        let refreshed = refreshed.clone();
        async move { app.as_token(Some(&refreshed), Method::GET, "/items/articles", None).await.status == 401 }
    })
    .await;
    let r = app.as_token(None, Method::POST, "/auth/refresh", Some(json!({"refresh_token": refresh}))).await;
    assert_error(&r, 401, "INVALID_CREDENTIALS", "refreshing a deleted share's session");
}

#[tokio::test]
async fn signing_in_needs_the_password_an_open_share_and_uses_left() {
    let app = env();
    let (_, published, _, _) = authors_and_articles(app, "two").await;
    let share = created(app, "/shares", json!({"collection": "articles", "item": published, "password": "open sesame", "max_uses": 1})).await;
    let r = app.as_token(None, Method::GET, &format!("/shares/info/{share}"), None).await;
    assert_eq!(r.body["data"]["password"], "**********", "{}", r.body);
    let r = app.admin(Method::GET, &format!("/shares/{share}?fields=password"), Value::Null).await;
    assert_eq!(r.body["data"]["password"], "**********", "the hash is never read: {}", r.body);

    for (password, what) in [(None, "no password"), (Some("open sesame!"), "a wrong password"), (Some(""), "an empty password")] {
        assert_error(&sign_in(app, &share, password).await, 401, "INVALID_CREDENTIALS", what);
    }
    session(app, &share, Some("open sesame")).await;
    assert_error(&sign_in(app, &share, Some("open sesame")).await, 401, "INVALID_CREDENTIALS", "a share used up");
    assert_eq!(app.sql(&format!("SELECT times_used::text FROM cdapi.shares WHERE id = '{share}'")).await, json!(1));

    // Closed: ended or not started yet; unknown or malformed ids.
    let ended = created(app, "/shares", json!({"collection": "articles", "item": published, "date_end": "2020-01-01T00:00:00Z"})).await;
    let later = created(app, "/shares", json!({"collection": "articles", "item": published, "date_start": "2999-01-01T00:00:00Z"})).await;
    for closed in [&ended, &later] {
        assert_error(&sign_in(app, closed, None).await, 401, "INVALID_CREDENTIALS", "a closed share");
        assert_error(&app.as_token(None, Method::GET, &format!("/shares/info/{closed}"), None).await, 403, "FORBIDDEN", "a closed share's facts");
    }
    for unknown in ["0b8a7c1e-1d2f-4e3a-9b8c-7d6e5f4a3b2c", "not-a-share", "' OR 1=1 --"] {
        assert_error(&sign_in(app, unknown, None).await, 401, "INVALID_CREDENTIALS", "an unknown share");
    }
    assert_error(&sign_in(app, &"x".repeat(100), None).await, 400, "INVALID_PAYLOAD", "an over-long share id");
}

#[tokio::test]
async fn a_share_never_reads_more_than_its_creator_and_only_shareable_items_are_shared() {
    let app = env();
    let (_, published, draft, _) = authors_and_articles(app, "three").await;
    let on_published = json!({"status": {"_eq": "published"}});
    // The creator reads and shares published articles only, and no authors.
    let (sharer, sharer_id, _) = role(
        app,
        "Sharers",
        json!([
            {"collection": "articles", "action": "read", "permissions": on_published, "fields": ["id", "title", "status", "author"]},
            {"collection": "articles", "action": "share", "permissions": on_published, "fields": ["*"]},
            {"collection": "directus_shares", "action": "create", "permissions": null, "fields": ["*"]},
            {"collection": "directus_shares", "action": "read", "permissions": {"user_created": {"_eq": "$CURRENT_USER"}}, "fields": ["*"]},
            {"collection": "directus_shares", "action": "update", "permissions": {"user_created": {"_eq": "$CURRENT_USER"}}, "fields": ["*"]},
            {"collection": "directus_versions", "action": "create", "permissions": null, "fields": ["*"]},
            {"collection": "directus_versions", "action": "read", "permissions": null, "fields": ["*"]},
            {"collection": "directus_versions", "action": "update", "permissions": null, "fields": ["*"]},
        ]),
    )
    .await;
    let (not_sharer, _, _) =
        role(app, "NotSharers", json!([{"collection": "directus_shares", "action": "create", "permissions": null, "fields": ["*"]}])).await;
    // The share's role reads everything of articles and authors.
    let everything = |c: &str| json!({"collection": c, "action": "read", "permissions": null, "fields": ["*"]});
    let (_, _, broad) = role(app, "BroadViewers", json!([everything("articles"), everything("authors")])).await;

    // Only an item the caller may share, and the creator cannot be forged.
    let share = |item: &str| json!({"collection": "articles", "item": item, "role": broad, "user_created": author_forgery()});
    let r = app.as_token(Some(&not_sharer), Method::POST, "/shares", Some(share(&published))).await;
    assert_error(&r, 403, "FORBIDDEN", "sharing without a share permission");
    let r = app.as_token(Some(&sharer), Method::POST, "/shares", Some(share(&draft))).await;
    assert_error(&r, 403, "FORBIDDEN", "sharing an item outside the share permission's filter");
    let r = app.as_token(Some(&sharer), Method::POST, "/shares", Some(json!({"collection": "articles", "item": "999999"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "sharing an item that does not exist");
    let r = app.as_token(Some(&sharer), Method::POST, "/shares", Some(share(&published))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["user_created"], json!(sharer_id), "the creator is the caller: {}", r.body);
    let id = id_of(&r.body["data"]);
    let r = app.as_token(Some(&sharer), Method::GET, &format!("/permissions/me/articles/{published}"), None).await;
    assert_eq!(r.body["data"]["share"]["access"], json!(true), "{}", r.body);
    let r = app.as_token(Some(&sharer), Method::GET, &format!("/permissions/me/articles/{draft}"), None).await;
    assert_eq!(r.body["data"]["share"]["access"], json!(false), "{}", r.body);

    // Moving the share to an item the creator may not share is refused.
    let r = app.as_token(Some(&sharer), Method::PATCH, &format!("/shares/{id}"), Some(json!({"collection": "articles", "item": draft}))).await;
    assert_error(&r, 403, "FORBIDDEN", "moving a share to an unshareable item");
    let r = app.as_token(Some(&sharer), Method::PATCH, &format!("/shares/{id}"), Some(json!({"item": draft}))).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "moving a share by its item alone");
    // Nor through a content version of the share: a system collection has no Content
    // Versioning (Directus docs "Content Versioning"), so no version of it can be made.
    let r = app.as_token(Some(&sharer), Method::POST, "/versions", Some(json!({"key": "move", "collection": "directus_shares", "item": id}))).await;
    assert_error(&r, 422, "UNPROCESSABLE_CONTENT", "a version of a share");
    let versions = app.sql(&format!("SELECT count(*)::text FROM cdapi.versions WHERE item = '{id}'")).await;
    assert_eq!(versions, json!(0), "no version of the share was made");
    let item = app.sql(&format!("SELECT to_json(item)::text FROM cdapi.shares WHERE id = '{id}'")).await;
    assert_eq!(item, json!(published), "the share still points at the published article");

    // The session reads the item's fields the creator may read, and not its author, whatever
    // the share's role allows.
    let (token, _) = session(app, &id, None).await;
    let r = app.as_token(Some(&token), Method::GET, &format!("/items/articles/{published}"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut keys: Vec<&String> = r.body["data"].as_object().map(|o| o.keys().collect()).unwrap_or_default();
    keys.sort();
    assert_eq!(keys, ["author", "id", "status", "title"], "{}", r.body);
    assert_error(&app.as_token(Some(&token), Method::GET, "/items/authors", None).await, 403, "FORBIDDEN", "authors the creator cannot read");
    // The creator loses the right to read published articles: the share reads nothing more.
    exec(
        app,
        r#"UPDATE cdapi.permissions SET permissions = '{"status": {"_eq": "archived"}}'
           WHERE collection = 'articles' AND action = 'read' AND policy = (SELECT id FROM cdapi.policies WHERE name = 'Sharers')"#,
    )
    .await;
    let path = format!("/items/articles/{published}");
    eventually("the creator's narrower rule reaches the share", || {
        let (token, path) = (token.clone(), path.clone());
        async move { app.as_token(Some(&token), Method::GET, &path, None).await.status == 403 }
    })
    .await;
}

/// A user id that is not the caller's, for forging `user_created`.
fn author_forgery() -> &'static str {
    "0b8a7c1e-1d2f-4e3a-9b8c-7d6e5f4a3b2c"
}
