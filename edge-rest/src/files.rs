//! Files over REST (docs/files.md; Directus's `/files`, `/assets`), over FilesService:
//! - `POST /files` with `multipart/form-data`: each part with a file name is a file, streamed
//!   to the core as it arrives (the edge holds one chunk at a time); the text parts before it
//!   are its fields (`title`, `description`, `folder`, `tags`...). One file answers the item,
//!   several an array. A client that stops mid-way cancels the call: the core keeps nothing.
//! - `PATCH /files/:id` with `multipart/form-data` (Directus's "replace file"): one file part
//!   replaces the item's file, the text parts before it update its fields; answers the item.
//!   Without a file part, the text parts update the fields alone (as Directus does).
//! - `POST /files/import` with `{url, data?}`: the core fetches the file (never from a private
//!   address) and stores it as an upload; answers the item.
//! - `GET /assets/:id` (`?download` for an attachment): the bytes, streamed, with `ETag`,
//!   `Last-Modified`, `Accept-Ranges` and one `Range`; `If-None-Match` → 304; image
//!   transformations (`width`, `height`, `fit`, `quality`, `format`, `withoutEnlargement`, `key`)
//!   made by the core.
//!
//! Listing, reading, updating and deleting file items are the system-collection routes
//! (`/files`, `/files/:id`). Budgets: text parts at most 64 KiB each and 100 in all; the file's
//! size is the core's FILES_MAX_UPLOAD_SIZE.

use crate::reply;
use crate::request::{Body, EdgeState, HttpRequest, json_body, url_query};
use bytes::Bytes;
use cdapi_proto::v1::{AssetRequest, ImportFileRequest, UpdateItemRequest, UploadChunk, UploadEnd, UploadStart, asset_chunk, upload_chunk};
use cdapi_proto::{ApiError, ErrorCode};
use http::{HeaderValue, Method, header};
use serde_json::{Map, Value};
use warp::reply::Response;

/// Largest text part of an upload (bytes).
const MAX_FIELD_BYTES: usize = 64 << 10;
/// Most text parts in one upload.
const MAX_FIELDS: usize = 100;

/// Whether a request carries `multipart/form-data`.
pub fn is_multipart(req: &HttpRequest) -> bool {
    req.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("multipart/form-data"))
}

/// `POST /files` (multipart), or with `replace` (`PATCH /files/:id`) the file of that item.
/// Errors: INVALID_PAYLOAD (no boundary, a broken body, no file to create, a text part too
/// large, more than one file to replace one), the core's.
pub async fn upload(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str, replace: Option<String>) -> Result<Response, ApiError> {
    let (query, token) = url_query(req)?;
    let caller = req.caller(request_id, token)?;
    let content_type = req.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let boundary = multer::parse_boundary(content_type).map_err(|e| ApiError::invalid_payload(format!("The multipart body has no boundary: {e}")))?;
    let mut parts = multer::Multipart::new(body, boundary);
    let broken = |e: multer::Error| ApiError::invalid_payload(format!("The multipart body could not be read: {e}"));
    let mut fields = Map::new();
    let mut created = Vec::new();
    while let Some(mut part) = parts.next_field().await.map_err(broken)? {
        let name = part.name().unwrap_or_default().to_owned();
        let Some(filename) = part.file_name().map(str::to_owned) else {
            if fields.len() >= MAX_FIELDS {
                return Err(ApiError::invalid_payload(format!("An upload has at most {MAX_FIELDS} fields")));
            }
            let mut text = Vec::new();
            while let Some(chunk) = part.chunk().await.map_err(broken)? {
                if text.len() + chunk.len() > MAX_FIELD_BYTES {
                    return Err(ApiError::new(ErrorCode::ContentTooLarge, format!("Field \"{name}\" is larger than {MAX_FIELD_BYTES} bytes")));
                }
                text.extend_from_slice(&chunk);
            }
            let text = String::from_utf8(text).map_err(|_| ApiError::invalid_payload(format!("Field \"{name}\" is not UTF-8 text")))?;
            // Lists and objects (`tags`, `metadata`) arrive as JSON text.
            let value = match text.trim_start().as_bytes().first() {
                Some(b'[' | b'{') => serde_json::from_str(&text).unwrap_or(Value::String(text)),
                _ => Value::String(text),
            };
            fields.insert(name, value);
            continue;
        };
        let start = UploadStart {
            item: Bytes::from(Value::Object(fields.clone()).to_string()),
            filename,
            content_type: part.content_type().map(|m| m.to_string()).unwrap_or_default(),
            query: Some(query.clone()),
            key: replace.clone().unwrap_or_default(),
        };
        if replace.is_some() {
            // The one file of a replacement: the body must end with it, which is known only
            // once its last byte came; anything after it fails the stream before `end`, so the
            // core keeps nothing of the replacement (a failed write changes nothing).
            let chunks = futures_util::stream::unfold(Some((part, parts)), move |state| async move {
                let (mut part, mut parts) = state?;
                let next = match part.chunk().await {
                    Ok(Some(chunk)) => return Some((Ok(chunk), Some((part, parts)))),
                    Ok(None) => {
                        drop(part);
                        match parts.next_field().await {
                            Ok(None) => return None,
                            Ok(Some(_)) => ApiError::invalid_payload("A file is replaced by one file, and nothing may follow it (send its fields first)"),
                            Err(e) => broken(e),
                        }
                    }
                    Err(e) => broken(e),
                };
                Some((Err(next), None))
            });
            let data = store(&state.files, &caller, start, chunks).await?.into_inner().data;
            if data.is_empty() {
                return Ok(reply::no_content());
            }
            return Ok(reply::data(&data, b""));
        }
        // A client gone mid-way ends the stream without `end` (HTTP/2 may end it gracefully
        // even then) and the core keeps nothing.
        let chunks = futures_util::stream::unfold(part, move |mut part| async move {
            match part.chunk().await {
                Ok(Some(chunk)) => Some((Ok(chunk), part)),
                Ok(None) => None,
                Err(e) => Some((Err(broken(e)), part)),
            }
        });
        let data = store(&state.files, &caller, start, chunks).await?.into_inner().data;
        created.push(if data.is_empty() { Value::Null } else { serde_json::from_slice(&data).map_err(ApiError::internal_because)? });
    }
    let data = match (created.len(), replace) {
        // No file to replace it with: the fields are updated, as a JSON PATCH would.
        (0, Some(key)) => {
            let call = caller.request(UpdateItemRequest {
                collection: "directus_files".into(),
                key,
                data: Bytes::from(Value::Object(fields).to_string()),
                query: Some(query),
            })?;
            let res = state.items.clone().update_item(call).await?;
            return Ok(reply::written(&res.get_ref().data));
        }
        (0, None) => return Err(ApiError::invalid_payload("No file was included in the body")),
        (1, _) => created.pop().unwrap_or(Value::Null),
        _ => Value::Array(created),
    };
    if data.is_null() {
        return Ok(reply::no_content());
    }
    Ok(reply::data(data.to_string().as_bytes(), b""))
}

/// Stores one file through FilesService `UploadFile`: `start`, then every chunk of `data`, then
/// `end` once `data` ended whole. The call and the pump run in the caller's future: a chunk
/// that fails ends the stream without `end` (the call is cancelled, the core keeps nothing) and
/// its error is the answer; when the core answers before the chunks end (a refusal), its answer
/// says why. Returns the created item. Errors: those, SERVICE_UNAVAILABLE when the core stops
/// taking chunks.
pub(crate) async fn store(
    files: &cdapi_proto::v1::files_service_client::FilesServiceClient<edge_http::balance::Balanced>,
    caller: &edge_http::caller::Caller,
    start: UploadStart,
    data: impl futures_util::Stream<Item = Result<Bytes, ApiError>>,
) -> Result<tonic::Response<cdapi_proto::v1::ItemResponse>, ApiError> {
    use futures_util::StreamExt;
    let (tx, rx) = tokio::sync::mpsc::channel::<UploadChunk>(4);
    let call = caller.request(tokio_stream::wrappers::ReceiverStream::new(rx))?;
    let mut client = files.clone();
    let rpc = client.upload_file(call);
    tokio::pin!(rpc);
    let pump = async move {
        let lost = || ApiError::new(ErrorCode::ServiceUnavailable, "The upload was not accepted.");
        let send = |part| tx.send(UploadChunk { part: Some(part) });
        send(upload_chunk::Part::Start(start)).await.map_err(|_| lost())?;
        futures_util::pin_mut!(data);
        while let Some(chunk) = data.next().await {
            send(upload_chunk::Part::Data(chunk?)).await.map_err(|_| lost())?;
        }
        send(upload_chunk::Part::End(UploadEnd {})).await.map_err(|_| lost())?;
        Ok::<(), ApiError>(())
    };
    tokio::pin!(pump);
    Ok(tokio::select! {
        pumped = &mut pump => {
            // A failed chunk returns here, dropping (cancelling) the call.
            pumped?;
            rpc.await?
        }
        res = &mut rpc => res?,
    })
}

/// `POST /files/import` `{url, data?}` (Directus's body; `data` the item's fields). Errors:
/// INVALID_PAYLOAD (no `url` string, `data` not an object), the core's.
pub async fn import(state: &EdgeState, req: &HttpRequest, body: Body, request_id: &str) -> Result<Response, ApiError> {
    let (query, token) = url_query(req)?;
    let body = json_body(req, body, state.max_payload_size).await?;
    let url = body.get("url").and_then(Value::as_str).ok_or_else(|| ApiError::invalid_payload("\"url\" is required"))?.to_owned();
    let item = match body.get("data") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => return Err(ApiError::invalid_payload("\"data\" must be an object")),
    };
    let call = req.grpc(request_id, token, ImportFileRequest { url, item: Bytes::from(Value::Object(item).to_string()), query: Some(query) })?;
    let res = state.files.clone().import_file(call).await?;
    Ok(reply::written(&res.get_ref().data))
}

/// The query parameters of image transformations, passed to the core.
const TRANSFORMS: &[&str] = &["width", "height", "fit", "quality", "format", "key", "withoutEnlargement"];

/// `GET /assets/:id` (see the module docs). Errors: the core's (FORBIDDEN, RANGE_NOT_SATISFIABLE,
/// INVALID_QUERY, ILLEGAL_ASSET_TRANSFORMATION); INVALID_QUERY for `transforms`; 405 for other
/// methods.
pub async fn asset(state: &EdgeState, req: &HttpRequest, request_id: &str, id: String) -> Result<Response, ApiError> {
    if req.method != Method::GET {
        return Ok(reply::method_not_allowed(&req.method, "GET"));
    }
    let params: Vec<(String, String)> = form_urlencoded::parse(req.query.as_bytes()).into_owned().collect();
    if params.iter().any(|(k, _)| k == "transforms") {
        return Err(ApiError::invalid_query(
            "Custom transformations (\"transforms\") are not supported; use width, height, fit, quality, format or a preset key",
        ));
    }
    let transform = params.iter().filter(|(k, _)| TRANSFORMS.contains(&k.as_str())).cloned().collect();
    let download = params.iter().any(|(k, _)| k == "download");
    // The token the one query-string reader finds (with its bounds), as on every route.
    let token = crate::query_string::parse(&req.query)?.access_token;
    let caller = req.caller(request_id, token)?;
    let text = |name: header::HeaderName| req.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let call = caller.request(AssetRequest { id, range: text(header::RANGE), if_none_match: text(header::IF_NONE_MATCH), transform })?;
    let mut stream = state.files.clone().read_asset(call).await?.into_inner();
    let head = match stream.message().await? {
        Some(cdapi_proto::v1::AssetChunk { part: Some(asset_chunk::Part::Head(h)) }) => h,
        _ => return Err(ApiError::internal_because("the asset stream did not start with its head")),
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        loop {
            let next = match stream.message().await {
                Ok(Some(cdapi_proto::v1::AssetChunk { part: Some(asset_chunk::Part::Data(d)) })) => Ok(d),
                Ok(_) => return,
                Err(s) => {
                    tracing::error!(message = %s.message(), "asset stream failed");
                    Err(std::io::Error::other("asset stream failed"))
                }
            };
            let failed = next.is_err();
            if tx.send(next).await.is_err() || failed {
                return;
            }
        }
    });
    let mut res = warp::reply::Reply::into_response(warp::reply::stream(tokio_stream::wrappers::ReceiverStream::new(rx)));
    *res.status_mut() = http::StatusCode::from_u16(head.status as u16).unwrap_or(http::StatusCode::OK);
    let h = res.headers_mut();
    let mut set = |name: header::HeaderName, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            h.insert(name, v);
        }
    };
    set(header::ETAG, &head.etag);
    set(header::LAST_MODIFIED, &head.last_modified);
    set(header::ACCEPT_RANGES, "bytes");
    set(header::CACHE_CONTROL, "no-cache");
    if head.status != 304 {
        set(header::CONTENT_TYPE, &head.content_type);
        set(header::CONTENT_LENGTH, &head.content_length.to_string());
        let name: String = head.filename.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' }).collect();
        set(header::CONTENT_DISPOSITION, &format!("{}; filename=\"{name}\"", if download { "attachment" } else { "inline" }));
        // A file is never run as a page of this origin (an uploaded HTML or SVG).
        set(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
        set(header::CONTENT_SECURITY_POLICY, "default-src 'none'; style-src 'unsafe-inline'; sandbox");
    }
    if !head.content_range.is_empty() {
        set(header::CONTENT_RANGE, &head.content_range);
    }
    Ok(res)
}
