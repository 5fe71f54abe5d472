//! What the edges record per request: [`answer`] wraps one request's work in its span, error
//! body, `x-request-id` and metrics (the same for both edges); metrics use the route template
//! of a path, so that ids, collections and unknown paths do not each become a time series.

use cdapi_proto::ApiError;
use std::future::Future;
use tracing::Instrument;
use warp::reply::Response;

/// Answers one request whose work is `work`: in a span `http` (method, path, request id; the
/// client's `traceparent` adopted), an error as Directus's error body with its status
/// ([`crate::reply::error`]), `x-request-id` on the answer, and the request counted in the
/// metrics ([`record`]).
pub async fn answer(
    method: &http::Method,
    path: &str,
    headers: &http::HeaderMap,
    request_id: &str,
    work: impl Future<Output = Result<Response, ApiError>>,
) -> Response {
    let started = std::time::Instant::now();
    let span = tracing::info_span!("http", method = %method, path = %path, request_id = %request_id);
    service_runtime::otel::adopt_parent(&span, headers);
    let mut res = match work.instrument(span.clone()).await {
        Ok(res) => res,
        Err(e) => crate::reply::error(&e),
    };
    if let Ok(v) = http::HeaderValue::from_str(request_id) {
        res.headers_mut().insert("x-request-id", v);
    }
    tracing::debug!(parent: &span, status = res.status().as_u16(), "request done");
    record(path, method, res.status(), started);
    res
}

/// Counts one answered request in the process's metrics under its route template (see
/// [`route_template`]), with its latency since `started`.
pub fn record(path: &str, method: &http::Method, status: http::StatusCode, started: std::time::Instant) {
    service_runtime::metrics::global().observe_http(&route_template(path), method.as_str(), status.as_u16(), started.elapsed());
}

/// Path segments kept as written; any other segment after the first becomes `:id` (after
/// `items`, `:collection`).
const WORDS: &[&str] = &[
    "me",
    "tfa",
    "generate",
    "enable",
    "disable",
    "login",
    "refresh",
    "logout",
    "password",
    "request",
    "reset",
    "callback",
    "providers",
    "system",
    "specs",
    "graphql",
    "ping",
    "health",
    "info",
    "oas",
    "save",
    "compare",
    "promote",
];

/// Top-level paths the edges serve; anything else is `other`.
const ROOTS: &[&str] = &["items", "users", "roles", "permissions", "versions", "auth", "server", "graphql"];

/// The route template of a request path, e.g. `/items/articles/5` → `/items/:collection/:id`,
/// `/auth/login/github` → `/auth/login/:id`, `/nope` → `other`. At most 5 segments.
pub fn route_template(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let Some(root) = segments.first() else { return "/".to_owned() };
    if !ROOTS.contains(root) || segments.len() > 5 {
        return "other".to_owned();
    }
    let mut out = format!("/{root}");
    for (i, s) in segments.iter().enumerate().skip(1) {
        out.push('/');
        if *root == "items" && i == 1 {
            out.push_str(":collection");
        } else if WORDS.contains(s) {
            out.push_str(s);
        } else {
            out.push_str(":id");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::route_template;

    #[test]
    fn ids_and_collections_become_placeholders() {
        assert_eq!(route_template("/items/articles/5"), "/items/:collection/:id");
        assert_eq!(route_template("/items/articles"), "/items/:collection");
        assert_eq!(route_template("/users/me/tfa/enable"), "/users/me/tfa/enable");
        assert_eq!(route_template("/auth/login/github/callback"), "/auth/login/:id/callback");
        assert_eq!(route_template("/graphql/system"), "/graphql/system");
        assert_eq!(route_template("/"), "/");
        assert_eq!(route_template("/wp-admin/x"), "other");
    }
}
