//! `/utils` (Directus's utility endpoints). `POST /utils/revert/:revision`: the item of a
//! revision set back to the revision's `data`, as the caller — the revision is read under their
//! read rights on `directus_revisions` (so only a revision of an item they can read, with the
//! fields they may read: README "Activity and revisions") and the item updated under their
//! update rights (FORBIDDEN without them), which records the revert as an update. Answers 204
//! as Directus.

use crate::reply;
use crate::request::{EdgeState, HttpRequest, typed_query, url_query};
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{ReadRequest, UpdateItemRequest};
use http::Method;
use serde_json::{Value, json};
use warp::reply::Response;

/// Routes `/utils/<rest>`.
pub async fn route(state: &EdgeState, req: &HttpRequest, request_id: &str, rest: &[&str]) -> Result<Response, ApiError> {
    match rest {
        ["revert", revision] if !revision.is_empty() => match req.method {
            Method::POST => revert(state, req, request_id, crate::request::decode(revision)).await,
            _ => Ok(reply::method_not_allowed(&req.method, "POST")),
        },
        _ => Err(ApiError::route_not_found(&req.path)),
    }
}

/// `POST /utils/revert/:revision`. Errors: FORBIDDEN (a revision the caller cannot read, or
/// an item they may not update with its values), INVALID_PAYLOAD (a revision without data:
/// the record of a collection whose accountability kept none).
async fn revert(state: &EdgeState, req: &HttpRequest, request_id: &str, revision: String) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    let fields = json!({"fields": ["collection", "item", "data"]});
    let query = typed_query(fields.as_object().ok_or_else(ApiError::internal)?)?;
    let call = req.grpc(request_id, token.clone(), ReadRequest { collection: "directus_revisions".into(), key: Some(revision), query: Some(query) })?;
    let res = state.items.clone().read(call).await?;
    let read: Value = serde_json::from_slice(&res.get_ref().data).map_err(|_| ApiError::internal())?;
    let (Some(collection), Some(item)) = (read["collection"].as_str(), read["item"].as_str()) else {
        return Err(ApiError::forbidden());
    };
    let data = match &read["data"] {
        Value::Object(o) => o.clone(),
        _ => return Err(ApiError::invalid_payload("This revision holds no data to revert to")),
    };
    let call = req.grpc(
        request_id,
        token,
        UpdateItemRequest { collection: collection.to_owned(), key: item.to_owned(), data: Bytes::from(Value::Object(data).to_string()), query: None },
    )?;
    state.items.clone().update_item(call).await?;
    Ok(reply::no_content())
}
