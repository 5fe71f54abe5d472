//! `/graphql`, `/graphql/system` and their SDL (`/server/specs/graphql[/system]`) on the REST port: forwarded to edge-graphql (GRAPHQL_URL),
//! so that one base URL serves REST and GraphQL, as with Directus
//! (README.md). In Kubernetes the Ingress routes `/graphql*` to edge-graphql directly; this is for a
//! single machine (`deploy/local/up`) and for clients that are given only the REST URL.
//!
//! The method, path, query string, body and end-to-end headers travel as they came; the reply
//! comes back with its status and headers (`Set-Cookie` of the `auth_*` mutations included).
//! A WebSocket upgrade of `/graphql` (GraphQL subscriptions, `graphql-transport-ws`) is
//! tunnelled: edge-rest opens the same WebSocket to edge-graphql first (so a refusal comes back
//! as its HTTP answer), then accepts the client's and relays frames both ways until either side
//! closes; a slow client slows only its own tunnel (edge-graphql closes it with 4008).
//! The client's address is passed in `X-Forwarded-For` (edge-graphql trusts it only when this
//! edge is in its IP_TRUSTED_PROXIES).

use bytes::Bytes;
use cdapi_proto::{ApiError, ErrorCode};
use edge_http::body::{Body, read_body};
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

    /// Tunnels a WebSocket upgrade of `req.path` to edge-graphql (see the module docs).
    /// Errors: SERVICE_UNAVAILABLE when edge-graphql cannot be reached; its own answer when it
    /// refuses the upgrade.
    pub async fn tunnel(&self, req: Forwarded<'_>, handshake: edge_http::upgrade::Handshake, max: u64) -> Result<Response, ApiError> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
        let query = if req.query.is_empty() { String::new() } else { format!("?{}", req.query) };
        let url = format!("{}{}{query}", self.base.replacen("http", "ws", 1), req.path);
        let mut upstream_req = url.into_client_request().map_err(|_| ApiError::invalid_payload("The request cannot be forwarded"))?;
        for name in
            [http::header::SEC_WEBSOCKET_PROTOCOL, http::header::AUTHORIZATION, http::header::COOKIE, http::header::HeaderName::from_static("traceparent")]
        {
            for value in req.headers.get_all(&name) {
                upstream_req.headers_mut().append(name.clone(), value.clone());
            }
        }
        if let Some(ip) = req.client_ip.and_then(|ip| http::HeaderValue::from_str(&ip.to_string()).ok()) {
            upstream_req.headers_mut().insert("x-forwarded-for", ip);
        }
        let size = usize::try_from(max).unwrap_or(usize::MAX);
        let (upstream, answer) = match tokio_tungstenite::connect_async_with_config(upstream_req, Some(edge_http::upgrade::config(size)), true).await {
            Ok(ok) => ok,
            Err(tokio_tungstenite::tungstenite::Error::Http(refused)) => {
                let (parts, body) = refused.into_parts();
                let mut reply = Reply::into_response(body.unwrap_or_default());
                *reply.status_mut() = parts.status;
                for (name, value) in &parts.headers {
                    if !HOP_BY_HOP.contains(&name.as_str()) {
                        reply.headers_mut().append(name, value.clone());
                    }
                }
                return Ok(reply);
            }
            Err(e) => {
                tracing::warn!(error = %e, "edge-graphql unreachable");
                return Err(ApiError::new(ErrorCode::ServiceUnavailable, "Service unavailable: the GraphQL service could not be reached."));
            }
        };
        let protocol = answer.headers().get(http::header::SEC_WEBSOCKET_PROTOCOL).cloned();
        Ok(handshake.accept(size, protocol, move |client| relay(client, upstream)))
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
        // Passed through as it arrives (a streamed GraphQL list keeps memory flat here too); a
        // body that breaks mid-way breaks the client's the same way.
        let mut reply = Reply::into_response(warp::reply::stream(body.into_data_stream()));
        *reply.status_mut() = parts.status;
        reply.headers_mut().clear();
        for (name, value) in &parts.headers {
            if !HOP_BY_HOP.contains(&name.as_str()) {
                reply.headers_mut().append(name, value.clone());
            }
        }
        // The body passes unchanged: its length, when known, too (a streamed one has none).
        if let Some(length) = parts.headers.get(http::header::CONTENT_LENGTH) {
            reply.headers_mut().insert(http::header::CONTENT_LENGTH, length.clone());
        }
        Ok(reply)
    }
}

/// Relays messages between the client's WebSocket and edge-graphql's until either closes
/// (both sides speak tungstenite's `Message`, so they pass as they are; ping and pong frames are
/// each side's own).
async fn relay(client: edge_http::upgrade::WebSocket, upstream: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>) {
    use futures_util::stream::{SplitSink, SplitStream};
    use futures_util::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    /// Forwards text, binary and close messages from `from` to `to`; ends after a close, at the
    /// end of `from`, or when `to` fails.
    async fn pump<A, B>(mut from: SplitStream<A>, mut to: SplitSink<B, Message>)
    where
        A: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>>,
        B: futures_util::Sink<Message>,
    {
        while let Some(Ok(m)) = from.next().await {
            let last = m.is_close();
            if !(m.is_text() || m.is_binary() || last) {
                continue;
            }
            if to.send(m).await.is_err() || last {
                break;
            }
        }
        let _ = to.close().await;
    }
    let (client_tx, client_rx) = client.split();
    let (up_tx, up_rx) = upstream.split();
    // Either side ending ends the tunnel.
    tokio::select! {
        () = pump(client_rx, up_tx) => {}
        () = pump(up_rx, client_tx) => {}
    }
}
