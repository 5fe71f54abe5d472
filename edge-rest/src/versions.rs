//! `/versions` (Directus's content versions API; spec: "Versioning") → VersionsService:
//! `GET /versions` (optionally `filter[collection][_eq]`, `filter[item][_eq]`), `POST /versions`
//! `{key, name?, collection, item}`, `GET|PATCH|DELETE /versions/:id`, `POST /versions/:id/save`
//! (body: the changes), `GET /versions/:id/compare`, `POST /versions/:id/promote`
//! `{mainHash?, force?}` (`force` is an extension). Reading an item in a version is
//! `GET /items/:collection/:id?version=<key>`.

use crate::reply;
use crate::request::{Body, EdgeState, HttpRequest, decode, json_body, url_query};
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{CreateVersionRequest, ListVersionsRequest, PromoteVersionRequest, SaveToVersionRequest, UpdateVersionRequest, VersionRef};
use http::Method;
use serde_json::Value;
use warp::reply::Response;

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `filter[field][_eq]=x` of the list: only `collection` and `item` are understood, alone or
/// inside `_and` (the Studio's `filter[_and][0][collection][_eq]=...`).
fn list_filter(req: &HttpRequest) -> Result<(String, String), ApiError> {
    let parsed = crate::query_string::parse(&req.query)?;
    let mut out = (String::new(), String::new());
    let Some(filter) = parsed.query.get("filter") else { return Ok(out) };
    let filter: Value = match filter {
        Value::String(s) => serde_json::from_str(s).map_err(|e| ApiError::invalid_query(format!("\"filter\" is not valid JSON: {e}")))?,
        other => other.clone(),
    };
    collect_conditions(&filter, &mut out, 0)?;
    Ok(out)
}

/// Reads the `_eq` conditions of `filter` (and of its `_and` groups, up to 3 deep) into `out`.
fn collect_conditions(filter: &Value, out: &mut (String, String), depth: usize) -> Result<(), ApiError> {
    let refuse = || ApiError::invalid_query("Versions can be filtered by collection and item with _eq only");
    for (field, cond) in filter.as_object().ok_or_else(refuse)? {
        if field == "_and" && depth < 3 {
            for part in cond.as_array().ok_or_else(refuse)? {
                collect_conditions(part, out, depth + 1)?;
            }
            continue;
        }
        let value = cond.get("_eq").and_then(|v| text(cond, "_eq").or_else(|| v.as_str().map(str::to_owned)));
        match (field.as_str(), value) {
            ("collection", Some(v)) => out.0 = v,
            ("item", Some(v)) => out.1 = v,
            _ => return Err(refuse()),
        }
    }
    Ok(())
}

/// Routes `/versions/...` (`rest` = the path segments after `versions`).
pub async fn route(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, rest: &[&str]) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    let mut client = state.versions.clone();
    let caller = req.caller(request_id, token)?;
    match (req.method.clone(), rest) {
        (Method::GET, []) => {
            let (collection, item) = list_filter(req)?;
            let res = client.list_versions(caller.request(ListVersionsRequest { collection, item })?).await?;
            Ok(reply::data(&res.get_ref().data, b""))
        }
        (Method::POST, []) => {
            let b = json_body(req, body, state.max_payload_size).await?;
            let field = |k: &str| text(&b, k).ok_or_else(|| ApiError::invalid_payload(format!("\"{k}\" is required")));
            let msg = CreateVersionRequest {
                key: field("key")?,
                name: text(&b, "name").unwrap_or_default(),
                collection: field("collection")?,
                item: text(&b, "item").unwrap_or_default(),
            };
            let res = client.create_version(caller.request(msg)?).await?;
            Ok(reply::data(&res.get_ref().data, b""))
        }
        (_, []) => Ok(reply::method_not_allowed(&req.method, "GET, POST")),
        (Method::GET, [id]) => {
            let res = client.read_version(caller.request(VersionRef { id: decode(id) })?).await?;
            Ok(reply::data(&res.get_ref().data, b""))
        }
        (Method::PATCH, [id]) => {
            let b = json_body(req, body, state.max_payload_size).await?;
            let msg = UpdateVersionRequest { id: decode(id), key: text(&b, "key"), name: text(&b, "name") };
            let res = client.update_version(caller.request(msg)?).await?;
            Ok(reply::data(&res.get_ref().data, b""))
        }
        (Method::DELETE, [id]) => {
            client.delete_version(caller.request(VersionRef { id: decode(id) })?).await?;
            Ok(reply::no_content())
        }
        (_, [_]) => Ok(reply::method_not_allowed(&req.method, "GET, PATCH, DELETE")),
        (Method::POST, [id, "save"]) => {
            let b = json_body(req, body, state.max_payload_size).await?;
            let res = client.save_to_version(caller.request(SaveToVersionRequest { id: decode(id), data: Bytes::from(b.to_string()) })?).await?;
            Ok(reply::data(&res.get_ref().data, b""))
        }
        (Method::GET, [id, "compare"]) => {
            let res = client.compare_version(caller.request(VersionRef { id: decode(id) })?).await?;
            Ok(reply::data(&res.get_ref().data, b""))
        }
        (Method::POST, [id, "promote"]) => {
            let b = json_body(req, body, state.max_payload_size).await.unwrap_or(Value::Null);
            let msg =
                PromoteVersionRequest { id: decode(id), main_hash: text(&b, "mainHash"), force: b.get("force").and_then(Value::as_bool).unwrap_or(false) };
            let res = client.promote_version(caller.request(msg)?).await?;
            Ok(reply::data(&res.get_ref().data, b""))
        }
        (_, [_, "save" | "promote"]) => Ok(reply::method_not_allowed(&req.method, "POST")),
        (_, [_, "compare"]) => Ok(reply::method_not_allowed(&req.method, "GET")),
        _ => Err(ApiError::route_not_found(&req.path)),
    }
}
