//! How long history is kept (docs/history.md "Activity and revisions"): retention prunes old
//! activity and revisions, an activity row's revisions go with it, and a deleted user's
//! activity keeps their id, as in Directus.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{eventually, id_of, item_history, role};
use e2e_tests::{Dataset, TestApp, app};
use reqwest::Method;
use serde_json::json;

/// An app pruning every second, in batches of 2, with these ages (named `name`).
fn pruning_app(name: &str, activity: &str, revisions: &str) -> TestApp {
    let env = [
        ("RETENTION_ENABLED", "true"),
        ("ACTIVITY_RETENTION", activity),
        ("REVISIONS_RETENTION", revisions),
        ("RETENTION_BATCH", "2"),
        ("RETENTION_INTERVAL", "1s"),
    ];
    e2e_tests::start(e2e_tests::Spec {
        dataset: Dataset::DemoWrites,
        name: Some(name.into()),
        core_env: env.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
        ..e2e_tests::Spec::default()
    })
    .unwrap_or_else(|e| panic!("environment: {e:#}"))
}

/// Creates five tags (recorded with revisions) and ages their activity: the first three by 2
/// hours, the fourth by 45 minutes, the fifth not at all. Returns their keys.
async fn aged_tags(app: &TestApp, prefix: &str) -> Vec<String> {
    let tags: Vec<_> = (0..5).map(|i| json!({"name": format!("{prefix}-{i}")})).collect();
    let r = app.admin(Method::POST, "/items/tags", json!(tags)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let keys: Vec<String> = r.body["data"].as_array().expect("tags").iter().map(id_of).collect();
    let age = |keys: &[String], by: &str| {
        format!("UPDATE cdapi.activity SET timestamp = now() - interval '{by}' WHERE collection = 'tags' AND item IN ({})", quoted(keys))
    };
    e2e_tests::exec(app, &age(&keys[..3], "2 hours")).await;
    e2e_tests::exec(app, &age(&keys[3..4], "45 minutes")).await;
    keys
}

/// The keys as an SQL list of text literals (they are the tags' integer keys).
fn quoted(keys: &[String]) -> String {
    keys.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(",")
}

/// How many `table` rows name these tags.
async fn count(app: &TestApp, table: &str, keys: &[String]) -> serde_json::Value {
    app.sql(&format!("SELECT count(*)::text FROM cdapi.{table} WHERE collection = 'tags' AND item IN ({})", quoted(keys))).await
}

/// RETENTION_ENABLED prunes activity rows older than ACTIVITY_RETENTION and revisions older
/// than REVISIONS_RETENTION (their activity's time), every RETENTION_INTERVAL, in batches of
/// RETENTION_BATCH; newer rows stay.
#[tokio::test]
async fn retention_prunes_old_activity_and_revisions_in_batches() {
    let app = tokio::task::spawn_blocking(|| pruning_app("activity_retention", "1h", "30m")).await.expect("environment");
    let keys = aged_tags(&app, "r-32").await;
    // Three 2 hours old: activity and revisions go; 45 minutes old: only its revision goes.
    eventually("old activity pruned", || async { count(&app, "activity", &keys).await == json!(2) && count(&app, "revisions", &keys).await == json!(1) }).await;
    assert_eq!(item_history(&app, "tags", &keys[4]).await[0]["revisions"][0]["data"]["name"], "r-32-4");
    assert_eq!(item_history(&app, "tags", &keys[3]).await[0]["revisions"], json!([]));
}

/// Revisions kept longer than their activity still go with it (as Directus's cascading
/// foreign key does; here the pruning statement deletes them): no revision outlives its
/// activity row.
#[tokio::test]
async fn pruned_activity_takes_its_revisions_along() {
    let app = tokio::task::spawn_blocking(|| pruning_app("activity_retention_along", "1h", "3h")).await.expect("environment");
    let keys = aged_tags(&app, "r-along").await;
    eventually("old activity pruned", || async { count(&app, "activity", &keys).await == json!(2) }).await;
    assert_eq!(count(&app, "revisions", &keys).await, json!(2), "the pruned activity's revisions went with it");
    let orphans = app.sql("SELECT count(*)::text FROM cdapi.revisions r WHERE NOT EXISTS (SELECT 1 FROM cdapi.activity a WHERE a.id = r.activity)").await;
    assert_eq!(orphans, json!(0));
    assert_eq!(item_history(&app, "tags", &keys[3]).await[0]["revisions"][0]["data"]["name"], "r-along-3");
}

/// Deleting a user keeps their id on the activity they left (Directus keeps it: its
/// `directus_activity.user` has no foreign key), so who did what survives the account; the
/// user no longer resolves when nested.
#[tokio::test]
async fn a_deleted_users_activity_keeps_their_id() {
    let app = app(Dataset::DemoWrites);
    let (token, user, _) = role(app, "Leavers32", json!([{"collection": "tags", "action": "create", "fields": ["*"]}])).await;
    let r = app.as_token(Some(&token), Method::POST, "/items/tags", Some(json!({"name": "left behind"}))).await;
    assert!(matches!(r.status, 200 | 204), "{}", r.body);
    let r = app.admin(Method::GET, "/items/tags?filter[name][_eq]=left behind&fields=id", json!(null)).await;
    let tag = id_of(&r.body["data"][0]);
    let r = app.admin(Method::DELETE, &format!("/users/{user}"), json!(null)).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let rows = item_history(app, "tags", &tag).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["user"], json!(user), "the deleted user's id stays");
    let path = format!("/activity?filter[collection][_eq]=tags&filter[item][_eq]={tag}&fields=user.email,user.id");
    let r = app.admin(Method::GET, &path, json!(null)).await;
    assert_eq!(r.body["data"], json!([{"user": null}]), "{}", r.body);
}
