//! Who may share what (docs/shares.md; Directus 11's SharesService): a share of an item is
//! created by the admin, or by a caller with a `share` permission on the item's collection
//! whose filter the item matches (it must exist); the `create` permission on
//! `directus_shares` applies besides, as to any item. Directus checks this on create only;
//! here every payload of a share a non-admin writes passes [`check`] (from the writer's one
//! choke point, so nested writes and version promotions too):
//! - a change of `collection` or `item` names both and is checked as a create;
//! - a change of what the share opens to whom (`collection`, `item`, `role`, `password`, its
//!   dates and uses) is made on one's own shares only (`user_created` is the caller): what a
//!   share reads is bounded by its creator, so nobody else may widen it.

use crate::permissions::Action;
use crate::write::Writer;
use cdapi_proto::ApiError;
use cdapi_proto::v1::Filter;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The collection of shares.
pub const SHARES: &str = "directus_shares";

/// The fields that decide what a share opens to whom.
const GOVERNING: &[&str] = &["collection", "item", "role", "password", "date_start", "date_end", "max_uses"];

/// Checks one payload of `action` on shares by a non-admin (module docs); returns the
/// condition the changed rows must meet besides the caller's permissions (their own shares).
/// Errors: FORBIDDEN (Directus's wording) when the caller may not share the item,
/// INVALID_PAYLOAD for a create without `collection` and `item` or a change of only one.
pub async fn check(w: &mut Writer<'_>, action: Action, obj: &Map<String, Value>) -> Result<Option<Arc<Filter>>, ApiError> {
    let moves = obj.contains_key("collection") || obj.contains_key("item");
    if action == Action::Create || moves {
        let (c, key) = target(obj).ok_or_else(|| ApiError::invalid_payload("A share needs its \"collection\" and \"item\" together"))?;
        // A key read as a dynamic variable would name another item than the one checked.
        if key.starts_with('$') {
            return Err(ApiError::invalid_payload("A shared item's key cannot start with \"$\""));
        }
        shareable(w, &c, &key).await?;
    }
    if action == Action::Update && GOVERNING.iter().any(|f| obj.contains_key(*f)) {
        let own = query_language::query_json::filter_from_json(&json!({"user_created": {"_eq": "$CURRENT_USER"}}), 0)?;
        return Ok(own.map(Arc::new));
    }
    Ok(None)
}

/// A share payload's `collection` and `item` (a number is taken as its text).
fn target(o: &Map<String, Value>) -> Option<(String, String)> {
    let collection = o.get("collection")?.as_str().filter(|s| !s.is_empty())?.to_owned();
    let item = match o.get("item")? {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    Some((collection, item))
}

/// FORBIDDEN unless `item` of `collection` exists and one of the caller's `share` rows on that
/// collection matches it ([`Writer::may`], the question `/permissions/me/:collection/:key` asks).
async fn shareable(w: &mut Writer<'_>, collection: &str, item: &str) -> Result<(), ApiError> {
    // Directus's wording.
    let refused = || {
        let mut e = ApiError::forbidden();
        e.message = format!("You don't have permission to perform \"share\" for collection \"{collection}\" or it does not exist.");
        e.extensions.insert("reason".into(), e.message.clone().into());
        e
    };
    let c = w.schema.collection(collection).cloned().ok_or_else(refused)?;
    if !w.may(&c, Action::Share, Some(item)).await? {
        return Err(refused());
    }
    Ok(())
}
