//! `/graphql`, `/graphql/system` and their SDL (`/server/specs/graphql[/system]`) on the REST port: forwarded to edge-graphql (GRAPHQL_URL),
//! so that one base URL serves REST and GraphQL, as with Directus (spec: What the service does,
//! rule 4). In Kubernetes the Ingress routes `/graphql*` to edge-graphql directly; this is for a
//! single machine (`deploy/local/up`) and for clients that are given only the REST URL.
//!
//! The method, path, query string, body and end-to-end headers travel as they came; the reply
//! comes back with its status and headers (`Set-Cookie` of the `auth_*` mutations included).
//! The client's address is passed in `X-Forwarded-For` (edge-graphql trusts it only when this
//! edge is in its IP_TRUSTED_PROXIES).

use edge_http::body::{Body, read_body};
use bytes::Bytes;
use cdapi_proto::{ApiError, ErrorCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use warp::reply::{Reply, Response};

/// Headers that belong to one connection, not to the request (RFC 9110 §7.6.1).
const HOP_BY_HOP: &[&str] = &["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length"];

/// What of a request is forwarded (its body travels beside it).
pub struct Forwarded<'a> {
    /// Method.
    pub method: &'a http::Method,
    /// Path, still percent-encoded.
    pub path: &'a str,
    /// Raw query string without `?` (empty: none).
    pub query: &'a str,
    /// Headers as received (hop-by-hop ones are dropped here).
    pub headers: &'a http::HeaderMap,
    /// The end client's address, sent as `X-Forwarded-For`.
    pub client_ip: Option<std::net::IpAddr>,
}

/// A client for edge-graphql.
pub struct GraphqlProxy {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl GraphqlProxy {
    /// A proxy to `base` (`http://host:port`, no trailing slash).
    pub fn new(base: &str) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Self { base: base.trim_end_matches('/').to_owned(), client: Client::builder(TokioExecutor::new()).build(connector) }
    }

    /// Forwards one request. Errors: CONTENT_TOO_LARGE past `max` bytes of body;
    /// SERVICE_UNAVAILABLE when edge-graphql cannot be reached.
    pub async fn forward(&self, req: Forwarded<'_>, body: Body, max: u64) -> Result<Response, ApiError> {
        let body = read_body(body, max).await?;
        let query = if req.query.is_empty() { String::new() } else { format!("?{}", req.query) };
        let mut out = http::Request::builder().method(req.method.clone()).uri(format!("{}{}{query}", self.base, req.path));
        for (name, value) in req.headers {
            if !HOP_BY_HOP.contains(&name.as_str()) {
                out = out.header(name, value);
            }
        }
        if let Some(ip) = req.client_ip {
            out = out.header("x-forwarded-for", ip.to_string());
        }
        let out = out.body(Full::new(body)).map_err(|_| ApiError::invalid_payload("The request cannot be forwarded"))?;
        let unavailable = |e: &dyn std::fmt::Display| {
            tracing::warn!(error = %e, "edge-graphql unreachable");
            ApiError::new(ErrorCode::ServiceUnavailable, "Service unavailable: the GraphQL service could not be reached.")
        };
        let res = self.client.request(out).await.map_err(|e| unavailable(&e))?;
        let (parts, body) = res.into_parts();
        let bytes = body.collect().await.map_err(|e| unavailable(&e))?.to_bytes();
        let mut reply = Reply::into_response(bytes.to_vec());
        *reply.status_mut() = parts.status;
        reply.headers_mut().clear();
        for (name, value) in &parts.headers {
            if !HOP_BY_HOP.contains(&name.as_str()) {
                reply.headers_mut().append(name, value.clone());
            }
        }
        Ok(reply)
    }
}
