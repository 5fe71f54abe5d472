//! The caller's own routes the Data Studio calls (Directus 11): `GET /roles/me` (the caller's
//! role and the roles above it), `PATCH /users/me/track/page` (`{last_page}`, the page the
//! Studio reopens) and `GET /permissions/me/:collection/:key?` (whether the caller may update,
//! delete or share that item).

use crate::reply;
use crate::request::{Body, EdgeState, HttpRequest, json_body, url_query};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{Filter, FilterGroup, ItemAccessRequest, ReadRequest, TrackPageRequest, filter};
use http::Method;
use warp::reply::Response;

/// `GET /roles/me`: the roles in `$CURRENT_ROLES` read with the request's query (any limit:
/// `-1`), under the caller's read permissions (every signed-in user may read their own roles).
/// Errors: FORBIDDEN for the public, as Directus; the core's.
pub async fn roles(state: &EdgeState, req: &HttpRequest, request_id: &str) -> Result<Response, ApiError> {
    if req.method != Method::GET {
        return Ok(reply::method_not_allowed(&req.method, "GET"));
    }
    let (mut query, token) = url_query(req)?;
    let own = query_language::query_json::filter_from_json(&serde_json::json!({"id": {"_in": "$CURRENT_ROLES"}}), 0)?
        .ok_or_else(|| ApiError::internal_because("the own-roles filter is empty"))?;
    query.filter = Some(match query.filter.take() {
        Some(asked) => Filter { node: Some(filter::Node::And(FilterGroup { filters: vec![own, asked] })) },
        None => own,
    });
    query.limit = Some(-1);
    let call = req.grpc(request_id, token, ReadRequest { collection: "directus_roles".into(), key: None, query: Some(query) })?;
    let res = state.items.clone().read(call).await?;
    Ok(reply::data(&res.get_ref().data, b""))
}

/// `PATCH /users/me/track/page` with `{"last_page": "<path>"}`: 204. Errors: INVALID_PAYLOAD
/// without a `last_page` string; the auth service's (INVALID_CREDENTIALS for the public).
pub async fn track_page(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str) -> Result<Response, ApiError> {
    if req.method != Method::PATCH {
        return Ok(reply::method_not_allowed(&req.method, "PATCH"));
    }
    let (_, token) = url_query(req)?;
    let body = json_body(req, body, state.max_payload_size).await?;
    let last_page = body.get("last_page").and_then(|v| v.as_str()).ok_or_else(|| ApiError::invalid_payload("\"last_page\" key is required"))?;
    let call = req.grpc(request_id, token, TrackPageRequest { last_page: last_page.to_owned() })?;
    state.auth.clone().track_page(call).await?;
    Ok(reply::no_content())
}

/// `GET /permissions/me/:collection/:key?`: `{data: {update: {access}, delete: {access},
/// share: {access}}}` (SchemaService `ReadItemAccess`). Errors: the core's (FORBIDDEN for the
/// public).
pub async fn item_access(state: &EdgeState, req: &HttpRequest, request_id: &str, collection: String, key: String) -> Result<Response, ApiError> {
    if req.method != Method::GET {
        return Ok(reply::method_not_allowed(&req.method, "GET"));
    }
    let (_, token) = url_query(req)?;
    let call = req.caller(request_id, token)?.request(ItemAccessRequest { collection, key })?;
    let res = state.schema.clone().read_item_access(call).await?;
    Ok(reply::data(&res.get_ref().data, b""))
}
