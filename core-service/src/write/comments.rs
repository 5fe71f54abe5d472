//! Comments and mentions (Directus 11's `directus_comments` and its CommentsService, checked
//! against 11.3.5; docs/history.md "Comments and notifications"):
//! - a comment needs a signed-in user (FORBIDDEN for the public) and non-empty `comment`,
//!   `collection` and `item` (INVALID_PAYLOAD `"comment" is required`, ...), and the item must be
//!   one the commenter can read (FORBIDDEN otherwise, as for an unknown collection or item; the
//!   admin's item is not looked up, as in Directus);
//! - each `@<user id>` in its text (a version-4 UUID, any case; at most [`MAX_MENTIONS`] distinct
//!   ones per comment) notifies that user in `directus_notifications` when they are active and
//!   can read the item themselves (others are skipped), with Directus's subject and message;
//!   the notification is mailed by auth-service (migration 0015).
//!
//! Who may read, edit and delete comments and notifications is the permissions' question
//! (`crate::policies`' built-in rows: every user with app access reads and edits their own).

use crate::activity::Change;
use crate::permissions::{Access, view};
use crate::query::{Planner, Variables};
use crate::schema::{Collection, Schema};
use crate::write::Writer;
use cdapi_proto::ApiError;
use regex::Regex;
use serde_json::{Map, Value, json};
use sqlx::Row;
use std::sync::{Arc, LazyLock};

/// The collection of comments.
pub const COMMENTS: &str = "directus_comments";

/// The collection of notifications.
pub const NOTIFICATIONS: &str = "directus_notifications";

/// The most distinct users one comment notifies (a budget: each costs a permission check and
/// a notification with its mail).
pub const MAX_MENTIONS: usize = 50;

/// A mention: `@` and a version-4 UUID (Directus's pattern).
static MENTION: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?i)@([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})").ok());

/// Line breaks, each run of them one quote break of the notification's message.
static LINE_BREAKS: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\n+").ok());

/// Creates the items of `data` in `c`; for comments, checks them first and notifies the users
/// they mention after. Returns the keys. Errors: as [`crate::write::users::create`], and for comments
/// FORBIDDEN (the public, an item the commenter cannot read) and INVALID_PAYLOAD.
pub async fn create(w: &mut Writer<'_>, c: &Collection, data: Value) -> Result<Vec<String>, ApiError> {
    if c.name != COMMENTS {
        return crate::write::users::create(w, c, data).await;
    }
    let user = w.vars.user.clone().ok_or_else(ApiError::forbidden)?;
    let comments: Vec<(String, String, String)> = match &data {
        Value::Array(items) => items.iter().map(fields).collect::<Result<_, _>>()?,
        other => vec![fields(other)?],
    };
    for (collection, item, _) in &comments {
        if w.read.collection(collection).is_none() {
            return Err(ApiError::forbidden_collection(collection));
        }
        // As Directus, the admin's item is not looked up.
        if !matches!(w.access, Access::Admin) && !readable(&mut *w.conn, w.read, w.limits, w.vars, collection, item).await? {
            // Directus's wording.
            let mut e = ApiError::forbidden();
            e.message = format!("You don't have permission to perform \"read\" for collection \"{collection}\" or it does not exist.");
            e.extensions.insert("reason".into(), e.message.clone().into());
            return Err(e);
        }
    }
    let keys = crate::write::users::create(w, c, data).await?;
    for (collection, item, text) in &comments {
        notify_mentions(w, &user, collection, item, text).await?;
    }
    Ok(keys)
}

/// A comment's `collection`, `item` (a number is taken as its text) and `comment`. Errors:
/// INVALID_PAYLOAD as Directus words it.
fn fields(v: &Value) -> Result<(String, String, String), ApiError> {
    let o = v.as_object().ok_or_else(|| ApiError::invalid_payload("Every comment must be an object"))?;
    let text = |name: &str| match o.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) if name == "item" => Ok(n.to_string()),
        _ => Err(ApiError::invalid_payload(format!("\"{name}\" is required"))),
    };
    let comment = text("comment")?;
    Ok((text("collection")?, text("item")?, comment))
}

/// Whether `item` of `collection` is readable through `read` (a caller's view) with `vars`.
async fn readable(
    conn: &mut sqlx::PgConnection,
    read: &Schema,
    limits: crate::query::Limits,
    vars: &Variables,
    collection: &str,
    item: &str,
) -> Result<bool, ApiError> {
    let Some(c) = read.collection(collection) else { return Ok(false) };
    let Some(pk) = c.primary_key.first() else { return Ok(false) };
    let q = query_language::query_json::query_from_json(&Map::from_iter([("fields".to_owned(), json!([pk]))]))?;
    let Ok(st) = Planner::new(read, limits, vars).read_one(c, item, &q) else { return Ok(false) };
    let row = st
        .sql
        .query()
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| if crate::db::is_data_exception(&e) { ApiError::forbidden() } else { crate::db::map_error(e) })?;
    Ok(row.try_get::<Option<String>, _>("data").map_err(crate::db::map_error)?.is_some())
}

/// A user as a notification names them.
struct Person {
    id: String,
    name: String,
    role: Option<String>,
    active: bool,
}

/// Directus's `userName`: "first last", else the first name, else the email, else "Unknown User".
async fn person(conn: &mut sqlx::PgConnection, id: &str) -> Result<Option<Person>, ApiError> {
    let row = sqlx::query("SELECT first_name, last_name, email, role::text, status FROM cdapi.users WHERE id = $1::uuid")
        .bind(id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(crate::db::map_write_error)?;
    let Some(r) = row else { return Ok(None) };
    let get = |i: usize| r.try_get::<Option<String>, _>(i).ok().flatten().filter(|s| !s.is_empty());
    let name = match (get(0), get(1), get(2)) {
        (Some(first), Some(last), _) => format!("{first} {last}"),
        (Some(first), None, _) => first,
        (None, _, Some(email)) => email,
        _ => "Unknown User".to_owned(),
    };
    Ok(Some(Person { id: id.to_owned(), name, role: get(3), active: get(4).as_deref() == Some("active") }))
}

/// Notifies each user `text` mentions who can read the item (see the module docs).
async fn notify_mentions(w: &mut Writer<'_>, sender: &str, collection: &str, item: &str, text: &str) -> Result<(), ApiError> {
    let Some(pattern) = MENTION.as_ref() else { return Ok(()) };
    let mut ids: Vec<String> = Vec::new();
    for m in pattern.captures_iter(text).filter_map(|c| c.get(1)) {
        let id = m.as_str().to_ascii_lowercase();
        if !ids.contains(&id) && ids.len() < MAX_MENTIONS {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    let from = person(&mut *w.conn, sender).await?.map_or_else(|| "Unknown User".to_owned(), |p| p.name);
    let mut people = Vec::new();
    for id in &ids {
        people.push(person(&mut *w.conn, id).await?);
    }
    // The text quoted, each mention as the name it stands for.
    let quoted = pattern.replace_all(text, |c: &regex::Captures<'_>| {
        let id = c.get(1).map(|m| m.as_str().to_ascii_lowercase()).unwrap_or_default();
        match people.iter().flatten().find(|p| p.id == id) {
            Some(p) => format!("<em>{}</em>", p.name),
            None => "@Unknown User".to_owned(),
        }
    });
    let quoted = format!("> {}", LINE_BREAKS.as_ref().map_or_else(|| quoted.clone().into_owned(), |r| r.replace_all(&quoted, "\n> ").into_owned()));
    let Some(notifications) = w.schema.collection(NOTIFICATIONS).cloned() else { return Ok(()) };
    let base = Arc::new(w.schema.clone());
    let mut created = Vec::new();
    for p in people.into_iter().flatten().filter(|p| p.active) {
        if !may_read(w, &base, &p, collection, item).await? {
            tracing::info!(user = %p.id, collection, "a mentioned user cannot read the item; not notified");
            continue;
        }
        let message = format!(
            "\nHello {},\n\n{from} has mentioned you in a comment:\n\n{quoted}\n\n<a href=\"/admin/content/{collection}/{item}\">Click here to view.</a>\n",
            p.name
        );
        let id: String = sqlx::query_scalar(
            "INSERT INTO cdapi.notifications (recipient, sender, subject, message, collection, item) \
             VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6) RETURNING id::text",
        )
        .bind(&p.id)
        .bind(sender)
        .bind(format!("You were mentioned in {collection}"))
        .bind(message)
        .bind(collection)
        .bind(item)
        .fetch_one(&mut *w.conn)
        .await
        .map_err(crate::db::map_write_error)?;
        created.push(id);
    }
    let set = vec!["recipient", "sender", "subject", "message", "collection", "item"];
    w.record(&notifications, Change::Create, &created, &[set]).await
}

/// Whether user `p` (their policies as they stand, without an address: IP-limited policies do
/// not count) can read `item` of `collection`.
async fn may_read(w: &mut Writer<'_>, base: &Arc<Schema>, p: &Person, collection: &str, item: &str) -> Result<bool, ApiError> {
    let rules = &base.permissions;
    let roles = rules.role_chain(p.role.as_deref());
    let policies = rules.admitted(Some(&p.id), &roles, None);
    let vars = Variables { user: Some(p.id.clone()), role: p.role.clone(), roles, policies: policies.clone() };
    match rules.access(&policies, true) {
        Access::Admin => readable(&mut *w.conn, base, w.limits, &vars, collection, item).await,
        Access::Subject(subject) => {
            let view = view::read_view(base, &subject);
            readable(&mut *w.conn, &view, w.limits, &vars, collection, item).await
        }
    }
}
