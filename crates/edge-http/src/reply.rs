//! HTTP replies both edges make the same way: a body with a status and content type, and the
//! one mapping of [`ApiError`] to HTTP (status and error body as in Directus docs "Error Codes",
//! `Retry-After` on 429 and on a 503 that says when to retry).

use bytes::Bytes;
use cdapi_proto::{ApiError, ErrorCode};
use http::{HeaderValue, StatusCode, header};
use warp::reply::{Reply, Response};

/// A response with a body, status and content type.
pub fn with_body(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response {
    let mut res = Reply::into_response(body.into().to_vec());
    *res.status_mut() = status;
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

/// The Directus error body with the code's HTTP status (Directus docs "Error Codes").
pub fn error(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if e.code == ErrorCode::InternalServerError {
        tracing::error!(message = %e.message, cause = e.cause.as_deref().map_or("-", String::as_str), "internal error");
    }
    let mut res = with_body(status, "application/json; charset=utf-8", e.to_body());
    // 429 from a limit, 503 from a full queue (argon2 in auth-service): both say when to retry.
    if matches!(e.code, ErrorCode::RequestsExceeded | ErrorCode::ServiceUnavailable)
        && let Some(secs) = e.extensions.get("retry_after").and_then(|v| v.as_u64())
    {
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    res
}

/// 405 with the `Allow` header listing the methods of the route.
pub fn method_not_allowed(method: &http::Method, allow: &'static str) -> Response {
    let e = ApiError::new(ErrorCode::MethodNotAllowed, format!("Method {method} is not allowed on this route."));
    let mut res = error(&e);
    res.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    res
}
