//! `/utils` (Directus's utility endpoints; docs/history.md "Utilities"), over [`edge_http::utils`] and
//! [`edge_http::revert`]:
//! - `GET /utils/random/string?length=` → `{"data": "<string>"}`;
//! - `POST /utils/hash/generate` `{string}` → `{"data": "<argon2 hash>"}`;
//! - `POST /utils/hash/verify` `{string, hash}` → `{"data": true|false}`;
//! - `POST /utils/sort/:collection` `{item, to}` → 200 with no body;
//! - `POST /utils/revert/:revision` → 204;
//! - `POST /utils/import/:collection` (a CSV or JSON file, multipart) → 200 with no body
//!   ([`crate::import`]);
//! - `POST /utils/export/:collection` `{query, format, file?}` → 204, the file made in the
//!   background ([`crate::export_file`]);
//! - `POST /utils/cache/clear` (admin) → 200 with no body.

use crate::reply;
use crate::request::{Body, EdgeState, HttpRequest, decode, json_body, url_query};
use cdapi_proto::ApiError;
use edge_http::utils;
use http::{Method, StatusCode};
use serde_json::Value;
use warp::reply::Response;

/// Routes `/utils/<rest>`.
pub async fn route(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, rest: &[&str]) -> Result<Response, ApiError> {
    let post = |req: &HttpRequest| req.method == Method::POST;
    match rest {
        ["random", "string"] if req.method == Method::GET => random_string(req),
        ["hash", action @ ("generate" | "verify")] if post(req) => hash(state, req, body, request_id, action).await,
        ["sort", collection] if post(req) && !collection.is_empty() => sort(state, req, body, request_id, decode(collection)).await,
        ["revert", revision] if post(req) && !revision.is_empty() => revert(state, req, request_id, decode(revision)).await,
        ["import", collection] if post(req) && !collection.is_empty() => crate::import::import(state, req, body, request_id, decode(collection)).await,
        ["export", collection] if post(req) && !collection.is_empty() => crate::export_file::export(state, req, body, request_id, decode(collection)).await,
        ["cache", "clear"] if post(req) => {
            let (_, token) = url_query(req)?;
            utils::clear_cache(&state.schema, &req.caller(request_id, token)?).await?;
            Ok(empty_ok())
        }
        ["random", "string"] => Ok(reply::method_not_allowed(&req.method, "GET")),
        ["hash", "generate" | "verify"] | ["sort", _] | ["revert", _] | ["import", _] | ["export", _] | ["cache", "clear"] => {
            Ok(reply::method_not_allowed(&req.method, "POST"))
        }
        _ => Err(ApiError::route_not_found(&req.path)),
    }
}

/// 200 with no body (Directus's `res.status(200).end()`).
fn empty_ok() -> Response {
    let mut res = reply::no_content();
    *res.status_mut() = StatusCode::OK;
    res
}

/// `{"data": <value>}`.
fn data(value: &Value) -> Response {
    reply::data(value.to_string().as_bytes(), b"")
}

/// `GET /utils/random/string?length=`. Errors: INVALID_QUERY (not an integer, outside 1..=500).
fn random_string(req: &HttpRequest) -> Result<Response, ApiError> {
    let length = form_urlencoded::parse(req.query.as_bytes()).find(|(k, _)| k == "length").map(|(_, v)| v.into_owned());
    let length = match length {
        None => None,
        Some(v) => Some(v.trim().parse::<i64>().map_err(|_| ApiError::invalid_query("\"length\" must be an integer"))?),
    };
    Ok(data(&Value::String(utils::random_string(length)?)))
}

/// A JSON object body's string member; absent, null or empty: INVALID_PAYLOAD `"<name>" is
/// required` (Directus's wording), another type: INVALID_PAYLOAD.
fn required_text(body: &Value, name: &str) -> Result<String, ApiError> {
    match body.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        None | Some(Value::Null) | Some(Value::String(_)) => Err(ApiError::invalid_payload(format!("\"{name}\" is required"))),
        Some(_) => Err(ApiError::invalid_payload(format!("\"{name}\" must be a string"))),
    }
}

/// `POST /utils/hash/generate` and `/utils/hash/verify`.
async fn hash(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, action: &str) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    let caller = req.caller(request_id, token)?;
    let body = json_body(req, body, state.max_payload_size).await?;
    let string = required_text(&body, "string")?;
    let out = if action == "generate" {
        Value::String(utils::generate_hash(&state.auth, &caller, string).await?)
    } else {
        let hash = required_text(&body, "hash")?;
        Value::Bool(utils::verify_hash(&state.auth, &caller, string, hash).await?)
    };
    Ok(data(&out))
}

/// `POST /utils/sort/:collection` `{item, to}`.
async fn sort(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, collection: String) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    let caller = req.caller(request_id, token)?;
    let body = json_body(req, body, state.max_payload_size).await?;
    let (item, to) = (utils::key_text(body.get("item"), "item")?, utils::key_text(body.get("to"), "to")?);
    utils::sort(&state.items, &caller, collection, item, to).await?;
    Ok(empty_ok())
}

/// `POST /utils/revert/:revision` ([`edge_http::revert`]).
async fn revert(state: &EdgeState, req: &HttpRequest, request_id: &str, revision: String) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    edge_http::revert::revert(&state.items, &state.schema, &req.caller(request_id, token)?, revision).await?;
    Ok(reply::no_content())
}
