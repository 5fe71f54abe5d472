//! Schema management routes (Directus's paths; docs/data-model.md "Modeling content through the API") → SchemaService:
//! `GET|POST /collections`, `GET|PATCH|DELETE /collections/:collection`; `GET /fields`,
//! `GET|POST /fields/:collection`, `GET|PATCH|DELETE /fields/:collection/:field`;
//! `GET|POST /relations`, `GET /relations/:collection`, `GET|PATCH|DELETE
//! /relations/:collection/:field`; `GET /schema/snapshot`, `POST /schema/diff`,
//! `POST /schema/apply`; `GET /permissions/me`, `GET /policies/me/globals`. Bodies are Directus's objects, passed to the core as they
//! are; answers are `{"data": ...}`, deletes 204.

use crate::reply;
use crate::request::{Body, EdgeState, HttpRequest, decode, json_body, url_query};
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{CallerAccessRequest, SchemaChange, SchemaTarget, SnapshotDiffRequest};
use http::Method;
use warp::reply::Response;

pub use edge_http::schema_calls::Resource;
use edge_http::schema_calls::{self, Change};

/// What the caller may do: `GET /permissions/me` (`globals` false) and
/// `GET /policies/me/globals` (`globals` true), from SchemaService's `ReadCallerPermissions` /
/// `ReadCallerGlobals`. Errors: the core's (a bad token); 405 for other methods.
pub async fn caller_access(state: &EdgeState, req: &HttpRequest, request_id: &str, globals: bool) -> Result<Response, ApiError> {
    if req.method != Method::GET {
        return Ok(reply::method_not_allowed(&req.method, "GET"));
    }
    let (_, token) = url_query(req)?;
    let call = req.caller(request_id, token)?.request(CallerAccessRequest {})?;
    let mut client = state.schema.clone();
    let res = if globals { client.read_caller_globals(call).await? } else { client.read_caller_permissions(call).await? };
    Ok(reply::data(&res.get_ref().data, b""))
}

/// `GET /schema/snapshot` (`?export=yaml` answers YAML as a download), `POST /schema/diff`
/// (`?force=true`; 204 when there is nothing to change), `POST /schema/apply` (204), both taking
/// JSON or an uploaded JSON/YAML file ([`schema_upload`]), over
/// SchemaService's `ReadSnapshot`, `DiffSnapshot`, `ApplyDiff`. Errors: the core's; 404 for
/// other paths, 405 for other methods.
pub async fn schema_transfer(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, what: &str) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    let caller = req.caller(request_id, token)?;
    let mut client = state.schema.clone();
    let param = |name: &str| form_urlencoded::parse(req.query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    match (what, req.method.clone()) {
        ("snapshot", Method::GET) => {
            let res = client.read_snapshot(caller.request(CallerAccessRequest {})?).await?;
            if param("export").as_deref() == Some("yaml") {
                let v: serde_json::Value = serde_json::from_slice(&res.get_ref().data).map_err(ApiError::internal_because)?;
                let yaml = serde_norway::to_string(&v).map_err(ApiError::internal_because)?;
                let mut r = Response::new(yaml.into());
                r.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/yaml; charset=utf-8"));
                r.headers_mut().insert(http::header::CONTENT_DISPOSITION, http::HeaderValue::from_static("attachment; filename=\"schema-snapshot.yaml\""));
                return Ok(r);
            }
            Ok(reply::data(&res.get_ref().data, b""))
        }
        ("diff", Method::POST) => {
            let snapshot = schema_upload(req, body, state.max_payload_size).await?;
            let force = param("force").is_some_and(|v| v == "true" || v == "1");
            let call = caller.request(SnapshotDiffRequest { snapshot: Bytes::from(snapshot.to_string()), force })?;
            let res = client.diff_snapshot(call).await?;
            if res.get_ref().data.as_ref() == b"null" {
                return Ok(reply::no_content());
            }
            Ok(reply::data(&res.get_ref().data, b""))
        }
        ("apply", Method::POST) => {
            let data = schema_upload(req, body, state.max_payload_size).await?;
            client.apply_diff(caller.request(SchemaChange { collection: String::new(), field: String::new(), data: Bytes::from(data.to_string()) })?).await?;
            Ok(reply::no_content())
        }
        ("snapshot", _) => Ok(reply::method_not_allowed(&req.method, "GET")),
        ("diff" | "apply", _) => Ok(reply::method_not_allowed(&req.method, "POST")),
        _ => Err(ApiError::route_not_found(&req.path)),
    }
}

/// The body of `POST /schema/diff` and `/schema/apply`, as Directus takes it: a JSON body, or a
/// `multipart/form-data` body with one file part, JSON when its type is `application/json`,
/// else YAML (what `GET /schema/snapshot?export=yaml` gives). At most `max` bytes either way
/// (MAX_PAYLOAD_SIZE). Errors: INVALID_PAYLOAD (no file, two files, JSON or YAML that does not
/// parse), CONTENT_TOO_LARGE, UNSUPPORTED_MEDIA_TYPE for other body types.
async fn schema_upload(req: &HttpRequest, body: Body, max: u64) -> Result<serde_json::Value, ApiError> {
    if !crate::files::is_multipart(req) {
        return json_body(req, body, max).await;
    }
    let content_type = req.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let boundary = multer::parse_boundary(content_type).map_err(|e| ApiError::invalid_payload(format!("The multipart body has no boundary: {e}")))?;
    let limits = multer::Constraints::new().size_limit(multer::SizeLimit::new().whole_stream(max));
    let mut parts = multer::Multipart::with_constraints(body, boundary, limits);
    let broken = |e: multer::Error| match e {
        multer::Error::StreamSizeExceeded { .. } => ApiError::new(cdapi_proto::ErrorCode::ContentTooLarge, format!("The body is larger than {max} bytes")),
        e => ApiError::invalid_payload(format!("The multipart body could not be read: {e}")),
    };
    let mut upload = None;
    while let Some(part) = parts.next_field().await.map_err(broken)? {
        if part.file_name().is_none() {
            continue;
        }
        if upload.is_some() {
            return Err(ApiError::invalid_payload("More than one file was included in the body"));
        }
        let json = part.content_type().is_some_and(|m| m.essence_str() == "application/json");
        let text = part.bytes().await.map_err(broken)?;
        let value: serde_json::Value = if json {
            serde_json::from_slice(&text).map_err(|_| ApiError::invalid_payload("The provided JSON is invalid"))?
        } else {
            serde_norway::from_slice(&text).map_err(|_| ApiError::invalid_payload("The provided YAML is invalid"))?
        };
        upload = Some(value);
    }
    upload.filter(|v| !v.is_null()).ok_or_else(|| ApiError::invalid_payload("No file was included in the body"))
}

/// Routes `/<resource>/...` (`rest`: the path segments after the resource name).
pub async fn route(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, resource: Resource, rest: &[&str]) -> Result<Response, ApiError> {
    let (_, token) = url_query(req)?;
    let caller = req.caller(request_id, token)?;
    let mut client = state.schema.clone();
    let names: Vec<String> = rest.iter().map(|s| decode(s)).collect();
    let target = |names: &[String]| SchemaTarget { collection: names.first().cloned().unwrap_or_default(), field: names.get(1).cloned().unwrap_or_default() };
    // How many path segments after the resource each method takes.
    let (read_depth, create_depth) = match resource {
        Resource::Collections => (0..=1, 0),
        Resource::Fields => (0..=2, 1),
        Resource::Relations => (0..=2, 0),
    };
    let item_depth = if resource == Resource::Collections { 1 } else { 2 };
    if names.len() > 2 || names.iter().any(String::is_empty) {
        return Err(ApiError::route_not_found(&req.path));
    }
    let depth = names.len();
    // `PATCH` where objects are created is Directus's batch update (an array body), for
    // collections and fields (`PATCH /collections`, `PATCH /fields/:collection`).
    let batch_depth = if resource == Resource::Relations { None } else { Some(create_depth) };
    let allowed = match (depth == create_depth, depth == item_depth) {
        (true, _) if batch_depth.is_some() => "GET, POST, PATCH",
        (true, _) => "GET, POST",
        (false, true) => "GET, PATCH, DELETE",
        (false, false) => "GET",
    };
    match req.method.clone() {
        Method::GET if read_depth.contains(&depth) => {
            let data = schema_calls::read(&mut client, resource, caller.request(target(&names))?).await?;
            Ok(reply::data(&data, b""))
        }
        ref m @ (Method::POST | Method::PATCH)
            if (*m == Method::POST && depth == create_depth) || (*m == Method::PATCH && (depth == item_depth || Some(depth) == batch_depth)) =>
        {
            let data = json_body(req, body, state.max_payload_size).await?;
            let t = target(&names);
            let change = caller.request(SchemaChange { collection: t.collection, field: t.field, data: Bytes::from(data.to_string()) })?;
            let kind = if *m == Method::POST { Change::Create } else { Change::Update };
            let data = schema_calls::change(&mut client, resource, kind, change).await?;
            Ok(reply::data(&data, b""))
        }
        Method::DELETE if depth == item_depth => {
            schema_calls::delete(&mut client, resource, caller.request(target(&names))?).await?;
            Ok(reply::no_content())
        }
        _ if read_depth.contains(&depth) => Ok(reply::method_not_allowed(&req.method, allowed)),
        _ => Err(ApiError::route_not_found(&req.path)),
    }
}
