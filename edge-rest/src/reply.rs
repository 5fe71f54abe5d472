//! Building HTTP responses: JSON bodies assembled from the core's JSON bytes without
//! re-serialising item data, and the one mapping of [`ApiError`] to HTTP (status and
//! error body as in Directus docs "Error Codes").

use http::StatusCode;
use warp::reply::{Reply, Response};

pub use edge_http::reply::{error, method_not_allowed, with_body};

/// `{"data": <data>}` or `{"meta": <meta>, "data": <data>}` (Directus writes `meta` first) from
/// raw JSON pieces.
pub fn data(data: &[u8], meta: &[u8]) -> Response {
    let mut body = Vec::with_capacity(data.len() + meta.len() + 20);
    if !meta.is_empty() {
        body.extend_from_slice(b"{\"meta\":");
        body.extend_from_slice(meta);
        body.extend_from_slice(b",\"data\":");
    } else {
        body.extend_from_slice(b"{\"data\":");
    }
    body.extend_from_slice(data);
    body.push(b'}');
    with_body(StatusCode::OK, "application/json; charset=utf-8", body)
}

/// The reply to a write: `{"data": ...}`, or 204 with no body when the core sent nothing
/// because the caller may not read what they wrote (Directus answers 204 then).
pub fn written(data: &[u8]) -> Response {
    if data.is_empty() { no_content() } else { self::data(data, b"") }
}

/// 204 with no body and no Content-Type (deletes; Directus).
pub fn no_content() -> Response {
    let mut res = Reply::into_response(StatusCode::NO_CONTENT);
    res.headers_mut().remove(http::header::CONTENT_TYPE);
    res
}
