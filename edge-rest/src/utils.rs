//! `/utils` (Directus's utility endpoints). `POST /utils/revert/:revision`: the item of a
//! revision set back to the revision's `data` with the caller's rights ([`edge_http::revert`]);
//! answers 204 as Directus.

use crate::reply;
use crate::request::{EdgeState, HttpRequest, url_query};
use cdapi_proto::ApiError;
use http::Method;
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

/// `POST /utils/revert/:revision` ([`edge_http::revert`]).
async fn revert(state: &EdgeState, req: &HttpRequest, request_id: &str, revision: String) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    edge_http::revert::revert(&state.items, &req.caller(request_id, token)?, revision).await?;
    Ok(reply::no_content())
}
