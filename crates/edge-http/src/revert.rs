//! Reverting an item to a revision (Directus's `POST /utils/revert/:revision` and GraphQL
//! `utils_revert`), for both edges: the revision is read with the caller's rights on
//! `directus_revisions` (only a revision of an item they can read, with the fields they may
//! read: docs/history.md "Activity and revisions") and the item updated with their update rights
//! (FORBIDDEN without them), which records the revert as one more update. The item's own
//! fields are set back; its to-many lists (O2M, M2M, M2A alias fields, which `data` lists as a
//! read with `fields=*` does, cut at the nested default limit) are not re-applied: a cut list
//! would unlink or delete the related items past it, and each related item's own revisions
//! revert it (docs/directus-compatibility.md "Activity and revisions").

use crate::balance::Balanced;
use crate::caller::Caller;
use crate::schema_calls::Resource;
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::schema_service_client::SchemaServiceClient;
use cdapi_proto::v1::{ReadRequest, SchemaTarget, UpdateItemRequest};
use serde_json::{Value, json};

/// Reverts the item of `revision` to its `data`. Errors: FORBIDDEN (a revision the caller
/// cannot read, or an item they may not update with its values), INVALID_PAYLOAD (a revision
/// without data, as Directus words it), and the errors of the three calls (revision, fields,
/// update).
pub async fn revert(items: &ItemsServiceClient<Balanced>, schema: &SchemaServiceClient<Balanced>, caller: &Caller, revision: String) -> Result<(), ApiError> {
    let fields = json!({"fields": ["collection", "item", "data"]});
    let query =
        query_language::query_json::query_from_json(fields.as_object().ok_or_else(|| ApiError::internal_because("the revision query is not a JSON object"))?)?;
    let call = caller.request(ReadRequest { collection: "directus_revisions".into(), key: Some(revision), query: Some(query) })?;
    let res = items.clone().read(call).await?;
    let read: Value = serde_json::from_slice(&res.get_ref().data).map_err(ApiError::internal_because)?;
    let (Some(collection), Some(item)) = (read["collection"].as_str(), read["item"].as_str()) else {
        return Err(ApiError::forbidden());
    };
    let mut data = match &read["data"] {
        Value::Object(o) => o.clone(),
        _ => return Err(ApiError::invalid_payload("Revision doesn't contain data to revert to")),
    };
    let target = caller.request(SchemaTarget { collection: collection.to_owned(), field: String::new() })?;
    let fields: Value =
        serde_json::from_slice(&crate::schema_calls::read(&mut schema.clone(), Resource::Fields, target).await?).map_err(ApiError::internal_because)?;
    for alias in alias_fields(&fields) {
        data.remove(alias);
    }
    let call = caller.request(UpdateItemRequest {
        collection: collection.to_owned(),
        key: item.to_owned(),
        data: Bytes::from(Value::Object(data).to_string()),
        query: None,
    })?;
    items.clone().update_item(call).await?;
    Ok(())
}

/// The names of the alias fields (no column: to-many relations, presentation fields) in a
/// `/fields/:collection` answer (an array of Directus field objects, or `{"data": [...]}`).
fn alias_fields(fields: &Value) -> impl Iterator<Item = &str> {
    let list = fields.get("data").unwrap_or(fields).as_array().into_iter().flatten();
    list.filter(|f| f["type"] == "alias").filter_map(|f| f["field"].as_str())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn only_alias_fields_are_named() {
        let fields = json!([{"field": "id", "type": "integer"}, {"field": "articles", "type": "alias"}, {"field": "doc", "type": "json"}]);
        assert_eq!(super::alias_fields(&fields).collect::<Vec<_>>(), ["articles"]);
        assert_eq!(super::alias_fields(&json!({"data": fields})).collect::<Vec<_>>(), ["articles"]);
        assert_eq!(super::alias_fields(&json!({"errors": []})).count(), 0);
    }
}
