//! The REST routes (Directus docs "Items"; Directus paths) and their translation into
//! gRPC calls. One catch-all warp filter hands every request to [`handle`], so unknown routes
//! get ROUTE_NOT_FOUND and wrong methods 405 with `Allow`, in Directus's error body.

use crate::reply;
use crate::request::{Body, EdgeState, HttpRequest, decode, json_body, typed_query, url_query};
use bytes::Bytes;
use cdapi_proto::ApiError;
use cdapi_proto::system_collections;
use cdapi_proto::v1::{
    CreateItemRequest, CreateItemsRequest, DeleteItemRequest, DeleteItemsRequest, ExportFormat, ExportItemsRequest, KeyList, Query, ReadRequest,
    UpdateBatchRequest, UpdateItemRequest, UpdateItemsRequest, UpdateSingletonRequest, delete_items_request, update_items_request,
};
use http::{Method, StatusCode};
use std::sync::Arc;
use warp::reply::Response;

/// Routes one request and always answers: span, error body, `x-request-id` and metrics by
/// [`edge_http::observe::answer`].
pub async fn handle(state: Arc<EdgeState>, req: HttpRequest, body: Body) -> Response {
    let request_id = state.request_id(&req.headers);
    let work = async {
        edge_http::settings::check_query_string(&req.query, state.max_query_string_size)?;
        if let (Some(limiter), Some(ip)) = (&state.limiter, req.client_ip) {
            limiter.check(ip).inspect_err(|_| service_runtime::metrics::global().rate_limited("edge-rest"))?;
        }
        // File uploads stream past MAX_PAYLOAD_SIZE: the core bounds each file
        // (FILES_MAX_UPLOAD_SIZE), and imports have IMPORT_MAX_SIZE.
        let path = req.path.trim_matches('/');
        let replacing = req.method == Method::PATCH && path.strip_prefix("files/").is_some_and(|id| !id.is_empty() && !id.contains('/'));
        let upload = ((req.method == Method::POST && (path == "files" || path.starts_with("utils/import/"))) || replacing) && crate::files::is_multipart(&req);
        let body = if upload { body } else { edge_http::body::refuse_oversized(&req.headers, body, state.max_payload_size)? };
        route(&state, &req, body, &request_id).await
    };
    edge_http::observe::answer(&req.method, &req.path, &req.headers, &request_id, work).await
}

/// A WebSocket handshake on WEBSOCKETS_REST_PATH ([`crate::realtime`]) or on `/graphql`
/// (tunnelled to edge-graphql, [`crate::graphql_proxy`]), answered as any request when it is
/// refused.
pub async fn websocket(state: Arc<EdgeState>, req: HttpRequest, handshake: edge_http::upgrade::Handshake) -> Response {
    let request_id = state.request_id(&req.headers);
    let work = async {
        if let (Some(limiter), Some(ip)) = (&state.limiter, req.client_ip) {
            limiter.check(ip).inspect_err(|_| service_runtime::metrics::global().rate_limited("edge-rest"))?;
        }
        match &state.graphql {
            Some(proxy) if req.path.trim_end_matches('/') == "/graphql" => {
                let forwarded = crate::graphql_proxy::Forwarded {
                    method: &req.method,
                    path: &req.path,
                    query: &req.query,
                    headers: &req.headers,
                    client_ip: req.client_ip,
                };
                proxy.tunnel(forwarded, handshake, state.max_payload_size).await
            }
            _ => crate::realtime::upgrade(state.clone(), &req, handshake, &request_id).await,
        }
    };
    edge_http::observe::answer(&req.method, &req.path, &req.headers, &request_id, work).await
}

async fn route(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str) -> Result<Response, ApiError> {
    let segments: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["admin", rest @ ..] if let Some(studio) = &state.studio => Ok(studio.serve(&req.method, rest).await),
        ["server", "ping"] => match req.method {
            // Directus sends it as Express sends a string: text/html.
            Method::GET => Ok(reply::with_body(StatusCode::OK, "text/html; charset=utf-8", "pong")),
            _ => Ok(reply::method_not_allowed(&req.method, "GET")),
        },
        ["server", "info"] => match req.method {
            Method::GET => crate::server::info(state, req, request_id).await,
            _ => Ok(reply::method_not_allowed(&req.method, "GET")),
        },
        ["server", "specs", "oas"] => match req.method {
            Method::GET => crate::server::openapi(state, req, request_id).await,
            _ => Ok(reply::method_not_allowed(&req.method, "GET")),
        },
        ["server", "health"] => match req.method {
            Method::GET => Ok(health(state).await),
            _ => Ok(reply::method_not_allowed(&req.method, "GET")),
        },
        // System collections are served on their own paths (Directus answers 403 here too).
        ["items", collection] | ["items", collection, ..] if decode(collection).starts_with("directus_") => Err(ApiError::forbidden()),
        ["items", collection] if !collection.is_empty() => collection_route(state, req, body, request_id, decode(collection)).await,
        ["items", collection, key] if !collection.is_empty() && !key.is_empty() => {
            item_route(state, req, body, request_id, decode(collection), decode(key)).await
        }
        ["users", "me", "tfa", action] => crate::auth::tfa(state, req, body, request_id, action).await,
        ["users", "me", "track", "page"] => crate::me::track_page(state, req, body, request_id).await,
        ["roles", "me"] => crate::me::roles(state, req, request_id).await,
        ["permissions", "me"] => crate::schema_routes::caller_access(state, req, request_id, false).await,
        ["permissions", "me", collection] if !collection.is_empty() => crate::me::item_access(state, req, request_id, decode(collection), String::new()).await,
        ["permissions", "me", collection, key] if !collection.is_empty() => {
            crate::me::item_access(state, req, request_id, decode(collection), decode(key)).await
        }
        ["extensions", rest @ ..] => crate::extensions::route(&req.method, rest),
        ["policies", "me", "globals"] => crate::schema_routes::caller_access(state, req, request_id, true).await,
        ["files"] if req.method == Method::POST && crate::files::is_multipart(req) => crate::files::upload(state, req, body, request_id, None).await,
        ["files", id] if !id.is_empty() && *id != "import" && req.method == Method::PATCH && crate::files::is_multipart(req) => {
            crate::files::upload(state, req, body, request_id, Some(decode(id))).await
        }
        ["files", "import"] => match req.method {
            Method::POST => crate::files::import(state, req, body, request_id).await,
            _ => Ok(reply::method_not_allowed(&req.method, "POST")),
        },
        ["shares", "auth"] => match req.method {
            Method::POST => crate::auth::share_login(state, req, body, request_id).await,
            _ => Ok(reply::method_not_allowed(&req.method, "POST")),
        },
        ["shares", "invite"] => match req.method {
            Method::POST => crate::auth::share_invite(state, req, body, request_id).await,
            _ => Ok(reply::method_not_allowed(&req.method, "POST")),
        },
        ["shares", "info", id] if !id.is_empty() => match req.method {
            Method::GET => crate::auth::share_info(state, req, request_id, &decode(id)).await,
            _ => Ok(reply::method_not_allowed(&req.method, "GET")),
        },
        // `/assets/:id/:filename`: the name is for the reader (Directus ignores it too).
        ["assets", id] | ["assets", id, _] if !id.is_empty() => crate::files::asset(state, req, request_id, decode(id)).await,
        [system] if let Some(collection) = system_collections::rest_items_collection(system) => {
            collection_route(state, req, body, request_id, collection).await
        }
        [system, key]
            if !key.is_empty()
                && let Some(collection) = system_collections::rest_items_collection(system) =>
        {
            item_route(state, req, body, request_id, collection, decode(key)).await
        }
        ["graphql"] | ["graphql", "system"] | ["server", "specs", "graphql"] | ["server", "specs", "graphql", "system"] if state.graphql.is_some() => {
            match &state.graphql {
                Some(proxy) => {
                    let forwarded = crate::graphql_proxy::Forwarded {
                        method: &req.method,
                        path: &req.path,
                        query: &req.query,
                        headers: &req.headers,
                        client_ip: req.client_ip,
                    };
                    proxy.forward(forwarded, body, state.max_payload_size).await
                }
                None => Err(ApiError::internal_because("no proxy is configured for a proxied route")),
            }
        }
        ["collections", rest @ ..] => crate::schema_routes::route(state, req, body, request_id, crate::schema_routes::Resource::Collections, rest).await,
        ["fields", rest @ ..] => crate::schema_routes::route(state, req, body, request_id, crate::schema_routes::Resource::Fields, rest).await,
        ["relations", rest @ ..] => crate::schema_routes::route(state, req, body, request_id, crate::schema_routes::Resource::Relations, rest).await,
        ["schema", what] => crate::schema_routes::schema_transfer(state, req, body, request_id, what).await,
        ["utils", rest @ ..] => crate::utils::route(state, req, body, request_id, rest).await,
        ["versions", rest @ ..] => crate::versions::route(state, req, body, request_id, rest).await,
        ["auth", rest @ ..] => crate::auth::route(state, req, body, request_id, rest).await,
        _ => Err(ApiError::route_not_found(&req.path)),
    }
}

/// `/items/:collection` and the system collections' list paths (`/users`, `/roles`,
/// `/permissions`, `/policies`): list (GET, SEARCH), create (POST), update many or the singleton (PATCH),
/// delete many (DELETE).
async fn collection_route(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, collection: String) -> Result<Response, ApiError> {
    let search = Method::from_bytes(b"SEARCH").map_err(ApiError::internal_because)?;
    let (query, token) = url_query(req)?;
    match req.method.clone() {
        Method::GET => read_items(state, req, request_id, collection, query, token).await,
        m if m == search => {
            let body = edge_http::body::read_json_query(&req.headers, body, state.max_payload_size, state.max_query_nodes).await?;
            let query = search_query(&body)?;
            read_items(state, req, request_id, collection, query, token).await
        }
        Method::POST => {
            let data = json_body(req, body, state.max_payload_size).await?;
            let bytes = Bytes::from(data.to_string());
            let mut items = state.items.clone();
            if data.is_array() {
                let call = req.grpc(request_id, token, CreateItemsRequest { collection, data: bytes, query: Some(query) })?;
                let res = items.create_items(call).await?;
                Ok(reply::written(&res.get_ref().data))
            } else {
                let call = req.grpc(request_id, token, CreateItemRequest { collection, data: bytes, query: Some(query) })?;
                let res = items.create_item(call).await?;
                Ok(reply::written(&res.get_ref().data))
            }
        }
        Method::PATCH => {
            let body = json_body(req, body, state.max_payload_size).await?;
            let mut items = state.items.clone();
            match selector(&body)? {
                Some(selector) => {
                    let data = body
                        .get("data")
                        .filter(|d| d.is_object())
                        .ok_or_else(|| ApiError::invalid_payload("\"data\" (an object of values to set) is required with \"keys\" or \"query\""))?;
                    let msg = UpdateItemsRequest {
                        collection,
                        selector: Some(match selector {
                            Selector::Keys(keys) => update_items_request::Selector::Keys(KeyList { keys }),
                            Selector::Query(q) => update_items_request::Selector::SelectorQuery(*q),
                        }),
                        data: Bytes::from(data.to_string()),
                        query: Some(query),
                    };
                    let res = items.update_items(req.grpc(request_id, token, msg)?).await?;
                    Ok(reply::written(&res.get_ref().data))
                }
                None if body.is_array() => {
                    let call = req.grpc(request_id, token, UpdateBatchRequest { collection, data: Bytes::from(body.to_string()), query: Some(query) })?;
                    let res = items.update_batch(call).await?;
                    Ok(reply::written(&res.get_ref().data))
                }
                None => {
                    let call = req.grpc(request_id, token, UpdateSingletonRequest { collection, data: Bytes::from(body.to_string()), query: Some(query) })?;
                    let res = items.update_singleton(call).await?;
                    Ok(reply::written(&res.get_ref().data))
                }
            }
        }
        Method::DELETE => {
            let body = json_body(req, body, state.max_payload_size).await?;
            let selector = match body {
                serde_json::Value::Array(ref items) => Selector::Keys(key_list(items)?),
                _ => selector(&body)?
                    .ok_or_else(|| ApiError::invalid_payload("Deleting items requires an array of keys, {\"keys\": [...]} or {\"query\": {...}}"))?,
            };
            let msg = DeleteItemsRequest {
                collection,
                selector: Some(match selector {
                    Selector::Keys(keys) => delete_items_request::Selector::Keys(KeyList { keys }),
                    Selector::Query(q) => delete_items_request::Selector::SelectorQuery(*q),
                }),
            };
            state.items.clone().delete_items(req.grpc(request_id, token, msg)?).await?;
            Ok(reply::no_content())
        }
        _ => Ok(reply::method_not_allowed(&req.method, "GET, SEARCH, POST, PATCH, DELETE")),
    }
}

/// `/items/:collection/:id` and the system collections' item paths (`/users/:id`,
/// `/users/me`, `/roles/:id`, `/permissions/:id`): read, update, delete one item.
async fn item_route(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, collection: String, key: String) -> Result<Response, ApiError> {
    let (query, token) = url_query(req)?;
    let mut items = state.items.clone();
    match req.method {
        Method::GET => {
            crate::cached_read::read(state, req, req.caller(request_id, token)?, ReadRequest { collection, key: Some(key), query: Some(query) }).await
        }
        Method::PATCH => {
            let data = json_body(req, body, state.max_payload_size).await?;
            let call = req.grpc(request_id, token, UpdateItemRequest { collection, key, data: Bytes::from(data.to_string()), query: Some(query) })?;
            let res = items.update_item(call).await?;
            Ok(reply::written(&res.get_ref().data))
        }
        Method::DELETE => {
            let call = req.grpc(request_id, token, DeleteItemRequest { collection, key })?;
            items.delete_item(call).await?;
            Ok(reply::no_content())
        }
        _ => Ok(reply::method_not_allowed(&req.method, "GET, PATCH, DELETE")),
    }
}

async fn read_items(
    state: &EdgeState,
    req: &HttpRequest,
    request_id: &str,
    collection: String,
    query: Query,
    token: Option<String>,
) -> Result<Response, ApiError> {
    if query.export.is_some() {
        return export(state, req, request_id, collection, query, token).await;
    }
    let streamed = edge_http::list_chunks::wanted(&query, state.stream_limit);
    let read = ReadRequest { collection, key: None, query: Some(query) };
    if streamed {
        return crate::list_stream::read(state, req.grpc(request_id, token, read)?).await;
    }
    if req.method == Method::GET {
        return crate::cached_read::read(state, req, req.caller(request_id, token)?, read).await;
    }
    let res = state.items.clone().read(req.grpc(request_id, token, read)?).await?;
    Ok(reply::data(&res.get_ref().data, &res.get_ref().meta))
}

/// `export=...`: streams the download (see [`crate::export`]). Errors before the first item
/// (bad query, no access) are ordinary error responses; a failure later cuts the download short.
async fn export(state: &EdgeState, req: &HttpRequest, request_id: &str, collection: String, query: Query, token: Option<String>) -> Result<Response, ApiError> {
    let format = ExportFormat::try_from(query.export.unwrap_or_default()).unwrap_or(ExportFormat::Json);
    let file = format!(
        "{collection} {}",
        crate::export::timestamp(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),)
    );
    let call = req.grpc(request_id, token, ExportItemsRequest { collection, query: Some(query) })?;
    let mut stream = state.items.clone().export_items(call).await?.into_inner();
    let first = stream.message().await?;
    let mut renderer = crate::export::Renderer::new(format);
    let (content_type, ext) = renderer.kind();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        let mut next = first;
        loop {
            let Some(chunk) = next else {
                let _ = tx.send(Ok(renderer.finish())).await;
                return;
            };
            let piece = renderer.chunk(&chunk.data).map_err(std::io::Error::other);
            let failed = piece.is_err();
            if tx.send(piece).await.is_err() || failed {
                return;
            }
            next = match stream.message().await {
                Ok(n) => n,
                Err(s) => {
                    tracing::error!(message = %s.message(), "export stream failed");
                    let _ = tx.send(Err(std::io::Error::other("export failed"))).await;
                    return;
                }
            };
        }
    });
    let mut res = warp::reply::Reply::into_response(warp::reply::stream(tokio_stream::wrappers::ReceiverStream::new(rx)));
    let headers = res.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    let disposition = format!("attachment; filename=\"{}.{ext}\"", file.replace(['"', '\\', '\r', '\n'], "_"));
    if let Ok(v) = http::HeaderValue::from_str(&disposition) {
        headers.insert(http::header::CONTENT_DISPOSITION, v);
    }
    Ok(res)
}

/// `SEARCH` body: `{"query": {...}}` (a list read with the query in the body).
fn search_query(body: &serde_json::Value) -> Result<Query, ApiError> {
    match body.get("query") {
        Some(serde_json::Value::Object(q)) => typed_query(q),
        None if body.is_object() => Ok(Query::default()),
        _ => Err(ApiError::invalid_payload("\"query\" must be an object")),
    }
}

/// Which items a batch update or delete applies to (exactly one of them; docs/what-works.md).
enum Selector {
    Keys(Vec<String>),
    Query(Box<Query>),
}

/// `{"keys": [...]}` or `{"query": {...}}`; `None` when the body has neither.
fn selector(body: &serde_json::Value) -> Result<Option<Selector>, ApiError> {
    let Some(obj) = body.as_object() else { return Ok(None) };
    match (obj.get("keys"), obj.get("query")) {
        (Some(_), Some(_)) => Err(ApiError::invalid_payload("Use exactly one of \"keys\" and \"query\"")),
        (Some(serde_json::Value::Array(keys)), None) => Ok(Some(Selector::Keys(key_list(keys)?))),
        (Some(_), None) => Err(ApiError::invalid_payload("\"keys\" must be an array of primary keys")),
        (None, Some(serde_json::Value::Object(q))) => Ok(Some(Selector::Query(Box::new(typed_query(q)?)))),
        (None, Some(_)) => Err(ApiError::invalid_payload("\"query\" must be an object")),
        (None, None) => Ok(None),
    }
}

/// Primary keys (numbers or strings) in their text form.
fn key_list(items: &[serde_json::Value]) -> Result<Vec<String>, ApiError> {
    items
        .iter()
        .map(|k| match k {
            serde_json::Value::String(s) => Ok(s.clone()),
            serde_json::Value::Number(n) => Ok(n.to_string()),
            _ => Err(ApiError::invalid_payload("Keys must be strings or numbers")),
        })
        .collect()
}

/// `GET /server/health`: `{"status":"ok"}` when the core answers SERVING, else 503 `error`;
/// 503 too once shutdown began (readiness off).
async fn health(state: &EdgeState) -> Response {
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
    let ok = !state.readiness.is_stopping()
        && matches!(
            state.health.clone().check(HealthCheckRequest { service: String::new() }).await,
            Ok(r) if r.get_ref().status == ServingStatus::Serving as i32
        );
    let (status, body) = if ok { (StatusCode::OK, r#"{"status":"ok"}"#) } else { (StatusCode::SERVICE_UNAVAILABLE, r#"{"status":"error"}"#) };
    reply::with_body(status, "application/health+json", body)
}
