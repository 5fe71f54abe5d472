//! `/versions` (Directus's content versions API; Directus docs "Content Versioning") → VersionsService:
//! `GET /versions` (any items query: `fields`, `filter`, `sort`, `limit`, ...), `POST /versions`
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

/// Routes `/versions/...` (`rest` = the path segments after `versions`).
pub async fn route(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, rest: &[&str]) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    let mut client = state.versions.clone();
    let caller = req.caller(request_id, token)?;
    match (req.method.clone(), rest) {
        (Method::GET, []) => {
            // The whole query, checked here as an items query is, read there as one.
            let parsed = crate::query_string::parse(&req.query)?;
            crate::request::typed_query(&parsed.query)?;
            let query = Bytes::from(serde_json::Value::Object(parsed.query).to_string());
            let msg = ListVersionsRequest { collection: String::new(), item: String::new(), query };
            let res = client.list_versions(caller.request(msg)?).await?;
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
            Ok(reply::written(&res.get_ref().data))
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
