//! The caller of an HTTP request as the services see it: gRPC metadata `authorization`
//! (`Bearer <token>`), `x-client-ip`, `x-request-id`, `traceparent`, and the `User-Agent` and
//! `Origin` headers as `x-user-agent` and `x-origin` (recorded with the activity of writes),
//! and `Cache-Control` as `cache-control` (docs/grpc-api.md).
//!
//! As Directus docs "Authentication" say, the token comes from the `Authorization` header, the
//! `access_token` query parameter (both at once: INVALID_PAYLOAD, docs/authentication.md), or
//! the session cookie.

use cdapi_proto::ApiError;
use http::HeaderMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

/// Who is calling, as read from one HTTP request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// `Authorization: Bearer …`, `?access_token=` or the session cookie, as `Bearer <token>`.
    pub bearer: Option<String>,
    /// The end client's address (see [`crate::client_ip`]).
    pub client_ip: Option<IpAddr>,
    /// The request id (see [`RequestIds`]).
    pub request_id: String,
    /// W3C trace context for the services: the client's trace continued, or a new one.
    pub traceparent: service_runtime::trace::TraceParent,
    /// The `User-Agent` header (when it is a valid header value).
    pub user_agent: Option<http::HeaderValue>,
    /// The `Origin` header.
    pub origin: Option<http::HeaderValue>,
    /// The `Cache-Control` header, passed on as `cache-control` (`no-store` skips the result
    /// cache where CACHE_SKIP_ALLOWED; docs/scaling.md "The result cache").
    pub cache_control: Option<http::HeaderValue>,
}

impl Caller {
    /// Reads the token from the request. Errors: INVALID_PAYLOAD when both the header and
    /// `query_token` are given.
    pub fn new(
        headers: &HeaderMap,
        query_token: Option<String>,
        session_cookie: Option<String>,
        client_ip: Option<IpAddr>,
        request_id: String,
    ) -> Result<Self, ApiError> {
        let header = headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let bearer = match (header, query_token) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid_payload("The access token must be sent either in the Authorization header or as access_token, not both"));
            }
            (Some(h), None) => Some(h.to_owned()),
            (None, Some(t)) => Some(format!("Bearer {t}")),
            (None, None) => session_cookie.map(|t| format!("Bearer {t}")),
        };
        let incoming = headers.get("traceparent").and_then(|v| v.to_str().ok());
        // Exporting: the edge's own span is the services' parent; else the client's trace goes on.
        let traceparent = service_runtime::otel::current_traceparent().unwrap_or_else(|| service_runtime::trace::TraceParent::next_hop(incoming, &request_id));
        let user_agent = headers.get(http::header::USER_AGENT).cloned();
        let origin = headers.get(http::header::ORIGIN).cloned();
        let cache_control = headers.get(http::header::CACHE_CONTROL).cloned();
        Ok(Self { bearer, client_ip, request_id, traceparent, user_agent, origin, cache_control })
    }

    /// Writes the caller into a gRPC call's metadata. Errors: INVALID_CREDENTIALS for a token
    /// that cannot travel as a header value.
    pub fn apply<T>(&self, call: &mut tonic::Request<T>) -> Result<(), ApiError> {
        let md = call.metadata_mut();
        if let Some(ip) = self.client_ip
            && let Ok(v) = ip.to_string().parse()
        {
            md.insert("x-client-ip", v);
        }
        if let Some(b) = &self.bearer {
            let v = b.parse().map_err(|_| ApiError::invalid_credentials())?;
            md.insert("authorization", v);
        }
        if let Ok(v) = self.request_id.parse() {
            md.insert("x-request-id", v);
        }
        if let Ok(v) = self.traceparent.to_string().parse() {
            md.insert("traceparent", v);
        }
        for (key, value) in [("x-user-agent", &self.user_agent), ("x-origin", &self.origin), ("cache-control", &self.cache_control)] {
            if let Some(v) = value.as_ref().and_then(|v| tonic::metadata::MetadataValue::try_from(v.as_bytes()).ok()) {
                md.insert(key, v);
            }
        }
        Ok(())
    }

    /// A gRPC request carrying `msg` and this caller. Errors: as [`Caller::apply`].
    pub fn request<T>(&self, msg: T) -> Result<tonic::Request<T>, ApiError> {
        let mut call = tonic::Request::new(msg);
        self.apply(&mut call)?;
        Ok(call)
    }
}

/// Hands out request ids: the client's `X-Request-Id` when it is a short token (at most 64
/// letters, digits, `-`, `_`), else a new one (process start time and a counter, hex).
#[derive(Debug, Default)]
pub struct RequestIds {
    counter: AtomicU64,
}

impl RequestIds {
    /// The id for a request with these headers.
    pub fn next(&self, headers: &HeaderMap) -> String {
        if let Some(id) = headers.get("x-request-id").and_then(|v| v.to_str().ok())
            && !id.is_empty()
            && id.len() <= 64
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return id.to_owned();
        }
        static START: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
        let start = START.get_or_init(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
        format!("{:x}-{:x}", start & 0xffff_ffff_ffff, self.counter.fetch_add(1, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_query_token_at_once_is_invalid_payload() {
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, http::HeaderValue::from_static("Bearer a"));
        let err = Caller::new(&h, Some("b".into()), None, None, "r".into()).err();
        assert_eq!(err.map(|e| e.code), Some(cdapi_proto::ErrorCode::InvalidPayload));
    }

    #[test]
    fn the_session_cookie_is_used_only_without_other_tokens() -> Result<(), ApiError> {
        let h = HeaderMap::new();
        let c = Caller::new(&h, None, Some("s".into()), None, "r".into())?;
        assert_eq!(c.bearer.as_deref(), Some("Bearer s"));
        let c = Caller::new(&h, Some("q".into()), Some("s".into()), None, "r".into())?;
        assert_eq!(c.bearer.as_deref(), Some("Bearer q"));
        Ok(())
    }

    #[test]
    fn request_ids_keep_safe_client_ids_only() {
        let ids = RequestIds::default();
        let mut h = HeaderMap::new();
        h.insert("x-request-id", http::HeaderValue::from_static("abc-1"));
        assert_eq!(ids.next(&h), "abc-1");
        h.insert("x-request-id", http::HeaderValue::from_static("a b"));
        let a = ids.next(&h);
        assert_ne!(a, "a b");
        assert_ne!(ids.next(&h), a);
    }
}
