//! `/graphql`, `/graphql/system` and their SDL (`/server/specs/graphql[/system]`) on the REST port: forwarded to edge-graphql (GRAPHQL_URL),
//! so that one base URL serves REST and GraphQL, as with Directus (spec: What the service does,
//! rule 4). In Kubernetes the Ingress routes `/graphql*` to edge-graphql directly; this is for a
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

    /// Tunnels a WebSocket upgrade of `req.path` to edge-graphql (see the module docs).
    /// Errors: SERVICE_UNAVAILABLE when edge-graphql cannot be reached; its own answer when it
    /// refuses the upgrade.
    pub async fn tunnel(&self, req: Forwarded<'_>, ws: warp::ws::Ws, max: u64) -> Result<Response, ApiError> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
        let query = if req.query.is_empty() { String::new() } else { format!("?{}", req.query) };
        let url = format!("{}{}{query}", self.base.replacen("http", "ws", 1), req.path);
        let mut upstream_req = url.into_client_request().map_err(|_| ApiError::invalid_payload("The request cannot be forwarded"))?;
        for name in [http::header::SEC_WEBSOCKET_PROTOCOL, http::header::AUTHORIZATION, http::header::COOKIE, http::header::HeaderName::from_static("traceparent")] {
            for value in req.headers.get_all(&name) {
                upstream_req.headers_mut().append(name.clone(), value.clone());
            }
        }
        if let Some(ip) = req.client_ip.and_then(|ip| http::HeaderValue::from_str(&ip.to_string()).ok()) {
            upstream_req.headers_mut().insert("x-forwarded-for", ip);
        }
        let size = usize::try_from(max).unwrap_or(usize::MAX);
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().max_message_size(Some(size)).max_frame_size(Some(size));
        let (upstream, answer) = match tokio_tungstenite::connect_async_with_config(upstream_req, Some(config), true).await {
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
        let ws = ws.max_message_size(size).max_frame_size(size);
        let mut reply = Reply::into_response(ws.on_upgrade(move |client| relay(client, upstream)));
        if let Some(p) = protocol {
            reply.headers_mut().insert(http::header::SEC_WEBSOCKET_PROTOCOL, p);
        }
        Ok(reply)
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

/// Relays frames between the client's WebSocket and edge-graphql's until either closes.
async fn relay(client: warp::ws::WebSocket, upstream: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>) {
    use futures_util::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message as Up;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;
    use warp::ws::Message as Down;
    let (mut client_tx, mut client_rx) = client.split();
    let (mut up_tx, mut up_rx) = upstream.split();
    let to_upstream = async {
        while let Some(Ok(m)) = client_rx.next().await {
            let m = if m.is_text() {
                Up::text(m.to_str().unwrap_or_default())
            } else if m.is_binary() {
                Up::binary(m.into_bytes())
            } else if m.is_close() {
                let frame = m.close_frame().map(|(code, reason)| CloseFrame { code: code.into(), reason: reason.to_owned().into() });
                let _ = up_tx.send(Up::Close(frame)).await;
                break;
            } else {
                continue;
            };
            if up_tx.send(m).await.is_err() {
                break;
            }
        }
        let _ = up_tx.close().await;
    };
    let to_client = async {
        while let Some(Ok(m)) = up_rx.next().await {
            let m = match m {
                Up::Text(t) => Down::text(t.as_str()),
                Up::Binary(b) => Down::binary(b.to_vec()),
                Up::Close(frame) => {
                    let m = match frame {
                        Some(f) => Down::close_with(u16::from(f.code), f.reason.as_str().to_owned()),
                        None => Down::close(),
                    };
                    let _ = client_tx.send(m).await;
                    break;
                }
                _ => continue,
            };
            if client_tx.send(m).await.is_err() {
                break;
            }
        }
        let _ = client_tx.close().await;
    };
    // Either side ending ends the tunnel.
    tokio::select! {
        () = to_upstream => {}
        () = to_client => {}
    }
}
