//! Reverting an item to a revision (Directus's `POST /utils/revert/:revision` and GraphQL
//! `utils_revert`), for both edges: the revision is read with the caller's rights on
//! `directus_revisions` (only a revision of an item they can read, with the fields they may
//! read: docs/history.md "Activity and revisions") and the item updated with their update rights
//! (FORBIDDEN without them), which records the revert as one more update.

use crate::balance::Balanced;
use crate::caller::Caller;
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::{ReadRequest, UpdateItemRequest};
use serde_json::{Value, json};

/// Reverts the item of `revision` to its `data`. Errors: FORBIDDEN (a revision the caller
/// cannot read, or an item they may not update with its values), INVALID_PAYLOAD (a revision
/// without data, as Directus words it), and the errors of the two calls.
pub async fn revert(items: &ItemsServiceClient<Balanced>, caller: &Caller, revision: String) -> Result<(), ApiError> {
    let fields = json!({"fields": ["collection", "item", "data"]});
    let query = query_language::query_json::query_from_json(fields.as_object().ok_or_else(ApiError::internal)?)?;
    let call = caller.request(ReadRequest { collection: "directus_revisions".into(), key: Some(revision), query: Some(query) })?;
    let res = items.clone().read(call).await?;
    let read: Value = serde_json::from_slice(&res.get_ref().data).map_err(|_| ApiError::internal())?;
    let (Some(collection), Some(item)) = (read["collection"].as_str(), read["item"].as_str()) else {
        return Err(ApiError::forbidden());
    };
    let data = match &read["data"] {
        Value::Object(o) => o.clone(),
        _ => return Err(ApiError::invalid_payload("Revision doesn't contain data to revert to")),
    };
    let call = caller.request(UpdateItemRequest {
        collection: collection.to_owned(),
        key: item.to_owned(),
        data: Bytes::from(Value::Object(data).to_string()),
        query: None,
    })?;
    items.clone().update_item(call).await?;
    Ok(())
}
