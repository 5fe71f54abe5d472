//! Comments and notifications (docs/history.md "Comments and notifications"): a user comments on items
//! they can read; a mention notifies the mentioned user when they can read the item too, in
//! their inbox and by real mail (aiosmtpd); from the attacker's side, nobody comments on an item
//! they cannot read, reads or archives another user's notifications, or edits another's comment;
//! a user without app access has neither (Directus's app minimum).

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{app_role, id_of, role};
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, TestApp, assert_error, start, wait_mail};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// This file's environment: the demo data, with mail.
fn env() -> &'static TestApp {
    static APP: OnceLock<TestApp> = OnceLock::new();
    APP.get_or_init(|| start(Spec { dataset: Dataset::DemoWrites, name: Some("comments".into()), mail: true, ..Spec::default() }).expect("environment"))
}

/// An article with this status; returns its id.
async fn article(app: &TestApp, title: &str, status: &str) -> String {
    let r = app.admin(Method::POST, "/items/articles", json!({"title": title, "status": status})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    id_of(&r.body["data"])
}

#[tokio::test]
async fn a_mention_notifies_whoever_can_read_the_item_in_the_inbox_and_by_mail() {
    let app = env();
    let published = json!({"status": {"_eq": "published"}});
    let read = |rule: Value| json!([{"collection": "articles", "action": "read", "permissions": rule, "fields": ["*"]}]);
    let (author, author_id, _) = app_role(app, "Commenters33", read(published.clone())).await;
    let (reader, reader_id, _) = app_role(app, "Mentioned33", read(Value::Null)).await;
    let (_, blind_id, _) = app_role(app, "Blind33", json!([])).await;
    let public = article(app, "Commented 33", "published").await;

    let text = format!("Look, @{reader_id} and @{}:\n\nthe intro is long", blind_id.to_uppercase());
    let r = app.as_token(Some(&author), Method::POST, "/comments", Some(json!({"collection": "articles", "item": public, "comment": text}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let comment = &r.body["data"];
    assert_eq!((comment["user_created"].clone(), comment["comment"].clone()), (json!(author_id), json!(text)), "{comment}");
    assert!(comment["date_created"].is_string() && comment["id"].is_string(), "{comment}");

    // The reader is notified, in the inbox and by mail; the user who cannot read it is not.
    let r = app.as_token(Some(&reader), Method::GET, "/notifications?fields=*", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let inbox = r.body["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    let n = &inbox[0];
    assert_eq!(n["subject"], "You were mentioned in articles");
    assert_eq!((n["sender"].clone(), n["recipient"].clone()), (json!(author_id), json!(reader_id)));
    assert_eq!((n["collection"].clone(), n["item"].clone(), n["status"].clone()), (json!("articles"), json!(public), json!("inbox")));
    let message = n["message"].as_str().unwrap_or_default();
    assert!(message.contains("has mentioned you in a comment") && message.contains("<em>") && message.contains("> Look,"), "{message}");
    let mail = wait_mail(app, "mentioned33@example.com", 15).await.expect("the mention's mail");
    assert_eq!(mail["subject"], "You were mentioned in articles");
    assert!(mail["body"].as_str().is_some_and(|b| b.contains(&format!("/admin/content/articles/{public}"))), "{mail}");
    let r = app.admin(Method::GET, &format!("/notifications?filter[recipient][_eq]={blind_id}"), Value::Null).await;
    assert_eq!(r.body["data"], json!([]), "a user who cannot read the item was notified: {}", r.body);
    assert!(wait_mail(app, "blind33@example.com", 2).await.is_none(), "a mail to a user who cannot read the item");

    // Only the recipient reads and archives a notification, and only its status.
    let id = n["id"].to_string();
    let r = app.as_token(Some(&author), Method::GET, "/notifications", None).await;
    assert_eq!(r.body["data"], json!([]), "another user's inbox: {}", r.body);
    let r = app.as_token(Some(&author), Method::PATCH, &format!("/notifications/{id}"), Some(json!({"status": "archived"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "archiving another user's notification");
    let r = app.as_token(Some(&reader), Method::PATCH, &format!("/notifications/{id}"), Some(json!({"subject": "forged"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "changing a notification's subject");
    let r = app.as_token(Some(&reader), Method::PATCH, &format!("/notifications/{id}"), Some(json!({"status": "archived"}))).await;
    assert_eq!((r.status, r.body["data"]["status"].clone()), (200, json!("archived")), "{}", r.body);
    let g = app.graphql("/graphql/system", Some(&reader), "{ notifications { subject status } }", json!({})).await;
    assert_eq!(g.body["data"]["notifications"], json!([{"subject": "You were mentioned in articles", "status": "archived"}]), "{}", g.body);
}

#[tokio::test]
async fn comments_are_made_on_readable_items_and_edited_by_their_authors() {
    let app = env();
    let published = json!({"status": {"_eq": "published"}});
    let rows = json!([{"collection": "articles", "action": "read", "permissions": published, "fields": ["*"]}]);
    let (author, _, _) = app_role(app, "Authors33", rows.clone()).await;
    let (other, _, _) = app_role(app, "Others33", rows).await;
    let public = article(app, "Open 33", "published").await;
    let draft = article(app, "Hidden 33", "draft").await;
    let comment = |item: &str, text: &str| Some(json!({"collection": "articles", "item": item, "comment": text}));

    for (token, body, status, code, what) in [
        (Some(author.as_str()), comment(&draft, "seen?"), 403, "FORBIDDEN", "an item outside the read rule"),
        (Some(author.as_str()), comment("999999", "seen?"), 403, "FORBIDDEN", "a missing item"),
        (Some(author.as_str()), Some(json!({"collection": "nope", "item": "1", "comment": "x"})), 403, "FORBIDDEN", "an unknown collection"),
        (Some(author.as_str()), Some(json!({"collection": "articles", "item": public})), 400, "INVALID_PAYLOAD", "no comment"),
        (Some(author.as_str()), Some(json!({"item": public, "comment": "x"})), 400, "INVALID_PAYLOAD", "no collection"),
        (None, comment(&public, "anonymous"), 403, "FORBIDDEN", "the public"),
    ] {
        let r = app.as_token(token, Method::POST, "/comments", body).await;
        assert_error(&r, status, code, what);
    }
    let r = app.as_token(Some(&author), Method::POST, "/comments", comment(&public, "first")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = id_of(&r.body["data"]);
    // Its author edits its text only; another user neither reads nor edits nor deletes it.
    let r = app.as_token(Some(&author), Method::PATCH, &format!("/comments/{id}"), Some(json!({"comment": "first, edited"}))).await;
    assert_eq!(r.body["data"]["comment"], "first, edited", "{}", r.body);
    assert!(r.body["data"]["user_updated"].is_string() && r.body["data"]["date_updated"].is_string(), "{}", r.body);
    let r = app.as_token(Some(&author), Method::PATCH, &format!("/comments/{id}"), Some(json!({"item": draft}))).await;
    assert_error(&r, 403, "FORBIDDEN", "moving a comment to another item");
    let r = app.as_token(Some(&other), Method::GET, &format!("/comments?filter[item][_eq]={public}"), None).await;
    assert_eq!(r.body["data"], json!([]), "{}", r.body);
    for (method, body) in [(Method::PATCH, Some(json!({"comment": "defaced"}))), (Method::DELETE, None)] {
        let r = app.as_token(Some(&other), method, &format!("/comments/{id}"), body).await;
        assert_error(&r, 403, "FORBIDDEN", "another user's comment");
    }
    // The admin sees them all; the history records them.
    let r = app.admin(Method::GET, &format!("/comments?filter[item][_eq]={public}&fields=comment"), Value::Null).await;
    assert_eq!(r.body["data"], json!([{"comment": "first, edited"}]), "{}", r.body);
    let g =
        app.graphql("/graphql/system", Some(ADMIN_TOKEN), &format!("{{ comments(filter: {{item: {{_eq: \"{public}\"}}}}) {{ comment }} }}"), json!({})).await;
    assert_eq!(g.body["data"]["comments"], json!([{"comment": "first, edited"}]), "{}", g.body);
    let r = app.admin(Method::GET, &format!("/activity?filter[collection][_eq]=directus_comments&filter[item][_eq]={id}&fields=action"), Value::Null).await;
    assert_eq!(r.body["data"], json!([{"action": "create"}, {"action": "update"}]), "{}", r.body);
    let r = app.as_token(Some(&author), Method::DELETE, &format!("/comments/{id}"), None).await;
    assert_eq!(r.status, 204, "{}", r.body);
}

#[tokio::test]
async fn notifications_made_through_the_api_are_mailed_unless_the_user_opted_out() {
    let app = env();
    let (_, mailed, _) = app_role(app, "Mailed33", json!([])).await;
    let (_, quiet, _) = app_role(app, "Quiet33", json!([])).await;
    let r = app.admin(Method::PATCH, &format!("/users/{quiet}"), json!({"email_notifications": false})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    for (recipient, subject) in [(&quiet, "Quiet news 33"), (&mailed, "News 33")] {
        let r = app.admin(Method::POST, "/notifications", json!({"recipient": recipient, "subject": subject, "message": "Hello **there**"})).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let mail = wait_mail(app, "mailed33@example.com", 15).await.expect("the notification's mail");
    assert_eq!(mail["subject"], "News 33");
    assert!(mail["body"].as_str().is_some_and(|b| b.contains("Hello **there**")), "{mail}");
    assert!(wait_mail(app, "quiet33@example.com", 2).await.is_none(), "mailed a user who opted out");
    // A user may not notify others without a grant.
    let (token, _, _) = app_role(app, "Notifiers33", json!([])).await;
    let r = app.as_token(Some(&token), Method::POST, "/notifications", Some(json!({"recipient": mailed, "subject": "spam"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "notifying without a grant");
}

#[tokio::test]
async fn without_app_access_a_user_neither_comments_nor_reads_notifications() {
    let app = env();
    let rows = json!([{"collection": "articles", "action": "read", "fields": ["*"]}]);
    let (token, user, _) = role(app, "ApiOnly33", rows).await;
    let public = article(app, "Api only 33", "published").await;
    let r = app.as_token(Some(&token), Method::GET, &format!("/items/articles/{public}?fields=id"), None).await;
    assert_eq!(r.status, 200, "the item is readable: {}", r.body);
    let r = app.as_token(Some(&token), Method::POST, "/comments", Some(json!({"collection": "articles", "item": public, "comment": "hi"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "a comment without app access");
    let r = app.admin(Method::POST, "/notifications", json!({"recipient": user, "subject": "For an API user 33"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    for path in ["/notifications", "/comments"] {
        let r = app.as_token(Some(&token), Method::GET, path, None).await;
        assert_error(&r, 403, "FORBIDDEN", "forbidden");
    }
    let g = app.graphql("/graphql/system", Some(&token), "{ notifications { subject } }", json!({})).await;
    assert!(g.body["data"]["notifications"].is_null() && g.body["errors"].is_array(), "{}", g.body);
    // Their own user stays theirs (docs/directus-compatibility.md `own-user`).
    let r = app.as_token(Some(&token), Method::GET, "/users/me?fields=id", None).await;
    assert_eq!(r.body["data"]["id"], json!(user), "{}", r.body);
}
