//! GraphQL over WebSocket on `/graphql` (docs/realtime.md): the `graphql-transport-ws` protocol of the
//! graphql-ws library, which Directus serves and its clients speak. Subscriptions are
//! [`crate::subscriptions`]; queries and mutations run too (one `next`, then `complete`).
//!
//! Messages (JSON text frames): client `connection_init {payload?}` → `connection_ack`;
//! `ping` ↔ `pong`; `subscribe {id, payload: {query, variables?, operationName?}}` →
//! `next {id, payload: <GraphQL response>}`... then `complete {id}`, or `error {id, payload:
//! [errors]}` when the operation does not validate or cannot start; client `complete {id}`
//! stops one. Protocol breaches close the socket with graphql-ws's codes: 4400 (bad message),
//! 4401 (subscribe before `connection_ack`), 4403 (not authenticated as WEBSOCKETS_GRAPHQL_AUTH
//! requires), 4406 (the `graphql-transport-ws` subprotocol not offered), 4408 (no
//! `connection_init` within WEBSOCKETS_GRAPHQL_AUTH_TIMEOUT), 4409 (an `id` already running),
//! 4429 (a second `connection_init`); 1013 (a `connection_init` whose user has
//! WEBSOCKETS_CONN_LIMIT_PER_USER connections open already).
//!
//! Authentication (WEBSOCKETS_GRAPHQL_AUTH, as Directus): `handshake` (the default:
//! `connection_init`'s payload carries `access_token`, unless the upgrade request carried a
//! token — `?access_token=`, `Authorization` or the session cookie), `public` (the public role
//! unless a token comes), `strict` (the upgrade request must carry a valid token, else `401`).
//! Every operation runs with the caller's schema and permissions; the token's expiry ends its
//! subscriptions (`next` with a TOKEN_EXPIRED error, then `complete`).
//!
//! Keepalive (WEBSOCKETS_HEARTBEAT_ENABLED, WEBSOCKETS_HEARTBEAT_PERIOD seconds, default 30):
//! after `connection_ack` the server sends the protocol's own `ping` every period (graphql-ws
//! clients answer `pong` by themselves) and closes with 1001 a connection that sent nothing
//! since the previous one, so a client gone without a close does not hold its subscriptions.
//! Protocol messages, not WebSocket ping frames: they cross edge-rest's tunnel to the client.
//! Directus has no GraphQL heartbeat (its heartbeat serves `/websocket` only); idle proxies'
//! timeouts are why we add one.
//!
//! Budgets: WEBSOCKETS_GRAPHQL_CONN_LIMIT connections per process (default 10,000) and
//! WEBSOCKETS_CONN_LIMIT_PER_USER per user (100; the public per client address, and a
//! `connection_init` with a token takes the user's place), WEBSOCKETS_MAX_SUBSCRIPTIONS running
//! operations per connection (100), WEBSOCKETS_QUEUE messages and WEBSOCKETS_QUEUE_BYTES bytes
//! waiting for a slow client (1,024 and 16 MiB; then closed with 4008), MAX_PAYLOAD_SIZE per message, and every document the same caps as
//! over HTTP (GRAPHQL_MAX_*, depth and complexity).

use crate::RequestData;
use crate::cache::SchemaCache;
use crate::config::Settings;
use crate::prerendered::Prerendered;
use async_graphql::Variables;
use cdapi_proto::ApiError;
use edge_http::caller::Caller;
use edge_http::upgrade::{Handshake, Message, WebSocket};
use edge_http::websocket::{Connections, Outbox};
use futures_util::StreamExt as _;
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Close code for a `connection_init` whose user has WEBSOCKETS_CONN_LIMIT_PER_USER connections
/// already (RFC 6455's 1013, "try again later"; graphql-ws has no code of its own for it).
pub const CLOSE_TOO_MANY: u16 = 1013;

/// The subprotocol spoken (graphql-ws's `GRAPHQL_TRANSPORT_WS_PROTOCOL`).
pub const PROTOCOL: &str = "graphql-transport-ws";

pub use edge_http::websocket::AuthMode;

/// The upgrade of `/graphql` to a WebSocket (`caller`: who the upgrade request names). Errors:
/// INVALID_CREDENTIALS (a bad token, or none in mode `strict`), REQUESTS_EXCEEDED (limits).
pub async fn upgrade(
    cache: Arc<SchemaCache>,
    settings: Arc<Settings>,
    connections: Arc<Connections>,
    handshake: Handshake,
    headers: &http::HeaderMap,
    caller: Caller,
    readiness: service_runtime::shutdown::Readiness,
) -> Result<warp::reply::Response, ApiError> {
    let ws_settings = &settings.websocket;
    if caller.bearer.is_none() && ws_settings.auth == AuthMode::Strict {
        return Err(ApiError::invalid_credentials());
    }
    let user = edge_http::websocket::whoami(&cache.backend().auth, &caller).await?;
    let place = connections.take(user.as_deref(), caller.client_ip)?;
    let offered =
        headers.get_all(http::header::SEC_WEBSOCKET_PROTOCOL).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|p| p.trim() == PROTOCOL);
    let max = usize::try_from(settings.edge.max_payload_size).unwrap_or(usize::MAX);
    let authenticated = user.is_some();
    let protocol = offered.then_some(http::HeaderValue::from_static(PROTOCOL));
    Ok(handshake.accept(max, protocol, move |socket| async move {
        let connection = Connection { cache, settings, caller, authenticated, place, acknowledged: false, running: HashMap::new(), readiness };
        connection.run(socket, offered).await;
    }))
}

/// One connection's state.
struct Connection {
    cache: Arc<SchemaCache>,
    settings: Arc<Settings>,
    caller: Caller,
    /// The caller carries a token that named a user.
    authenticated: bool,
    /// The connection's place in the limits: the user's once authenticated, before that the
    /// client address's.
    place: edge_http::websocket::Place,
    acknowledged: bool,
    /// Running operations by `id`.
    running: HashMap<String, tokio::task::JoinHandle<()>>,
    /// Off once shutdown began: connections close (1001) so the drain can finish.
    readiness: service_runtime::shutdown::Readiness,
}

/// A protocol close: code and reason.
type Close = (u16, &'static str);

impl Connection {
    async fn run(mut self, socket: WebSocket, offered: bool) {
        let (sink, mut incoming) = socket.split();
        let (out, writer) = edge_http::websocket::writer(sink, self.settings.websocket.queue, self.settings.websocket.queue_bytes);
        if !offered {
            out.close_after(4406, "Subprotocol not acceptable");
        } else {
            let init_deadline = tokio::time::sleep(self.settings.websocket.auth_timeout);
            tokio::pin!(init_deadline);
            let mut stopping = tokio::time::interval(Duration::from_secs(1));
            let mut heartbeat = edge_http::websocket::Heartbeat::new(self.settings.websocket.heartbeat);
            loop {
                tokio::select! {
                    message = incoming.next() => match message {
                        Some(Ok(Message::Text(text))) => {
                            heartbeat.heard();
                            if let Err((code, reason)) = self.handle(&text, &out).await {
                                out.close_after(code, reason);
                                break;
                            }
                        }
                        Some(Ok(m)) if m.is_close() => break,
                        Some(Ok(m)) if m.is_binary() => {
                            out.close_after(4400, "Invalid message received");
                            break;
                        }
                        Some(Ok(_)) => {}
                        Some(Err(_)) | None => break,
                    },
                    () = &mut init_deadline, if !self.acknowledged => {
                        out.close_after(4408, "Connection initialisation timeout");
                        break;
                    }
                    alive = heartbeat.beat(&out), if self.acknowledged => if !alive {
                        break;
                    },
                    _ = stopping.tick() => if self.readiness.is_stopping() {
                        out.close_after(1001, "server shutting down");
                        break;
                    },
                }
            }
        }
        for (_, task) in self.running.drain() {
            task.abort();
        }
        drop(out);
        let _ = writer.await;
    }

    /// One client message. Errors: the close a protocol breach calls for.
    async fn handle(&mut self, text: &str, out: &Outbox) -> Result<(), Close> {
        let msg: Json = serde_json::from_str(text).map_err(|_| (4400, "Invalid message received"))?;
        let kind = msg.get("type").and_then(Json::as_str).ok_or((4400, "Invalid message received"))?;
        match kind {
            "connection_init" => self.init(&msg, out).await,
            "ping" => {
                out.send(Message::text(json!({"type": "pong"}).to_string()));
                Ok(())
            }
            "pong" => Ok(()),
            "subscribe" => self.subscribe(&msg, out).await,
            "complete" => {
                let id = msg.get("id").and_then(Json::as_str).ok_or((4400, "Invalid message received"))?;
                if let Some(task) = self.running.remove(id) {
                    task.abort();
                }
                Ok(())
            }
            _ => Err((4400, "Invalid message received")),
        }
    }

    /// `connection_init`: authenticates as WEBSOCKETS_GRAPHQL_AUTH says, then `connection_ack`.
    async fn init(&mut self, msg: &Json, out: &Outbox) -> Result<(), Close> {
        if self.acknowledged {
            return Err((4429, "Too many initialisation requests"));
        }
        let token = msg.get("payload").and_then(|p| p.get("access_token")).and_then(Json::as_str);
        match (token, self.settings.websocket.auth) {
            (Some(t), _) => {
                let mut caller = self.caller.clone();
                caller.bearer = Some(format!("Bearer {t}"));
                // The token must name a user the auth service knows now.
                match edge_http::websocket::whoami(&self.cache.backend().auth, &caller).await {
                    Ok(Some(user)) => {
                        // The user's own place (WEBSOCKETS_CONN_LIMIT_PER_USER).
                        if self.place.hold_for(Some(&user)).is_err() {
                            return Err((CLOSE_TOO_MANY, "Too many connections of this user"));
                        }
                        self.caller = caller;
                        self.authenticated = true;
                    }
                    _ => return Err((4403, "Forbidden")),
                }
            }
            (None, AuthMode::Handshake) if !self.authenticated => return Err((4403, "Forbidden")),
            (None, _) => {}
        }
        self.acknowledged = true;
        out.send(Message::text(json!({"type": "connection_ack"}).to_string()));
        Ok(())
    }

    /// `subscribe`: runs the operation in a task of its own, its results sent as `next`.
    async fn subscribe(&mut self, msg: &Json, out: &Outbox) -> Result<(), Close> {
        if !self.acknowledged {
            return Err((4401, "Unauthorized"));
        }
        let id = msg.get("id").and_then(Json::as_str).filter(|i| !i.is_empty()).ok_or((4400, "Invalid message received"))?.to_owned();
        let payload = msg.get("payload").filter(|p| p.is_object()).ok_or((4400, "Invalid message received"))?;
        self.running.retain(|_, t| !t.is_finished());
        if self.running.contains_key(&id) {
            return Err((4409, "Subscriber already exists"));
        }
        let error = |m: &str| {
            let payload = json!([{"message": m, "extensions": {"code": "GRAPHQL_VALIDATION"}}]);
            Message::text(json!({"id": id, "type": "error", "payload": payload}).to_string())
        };
        if self.running.len() >= self.settings.websocket.max_subscriptions {
            let payload =
                json!([{"message": "Too many operations on this connection (WEBSOCKETS_MAX_SUBSCRIPTIONS).", "extensions": {"code": "REQUESTS_EXCEEDED"}}]);
            out.send(Message::text(json!({"id": id, "type": "error", "payload": payload}).to_string()));
            return Ok(());
        }
        let (request, prerendered) = match self.request(payload) {
            Ok(r) => r,
            Err(message) => {
                out.send(error(&message));
                return Ok(());
            }
        };
        let schema = match self.cache.for_caller(&self.caller).await {
            Ok(built) => built.user.clone(),
            Err(e) => {
                e.log_cause();
                let payload = json!([{"message": e.message, "extensions": {"code": e.code.as_str()}}]);
                out.send(Message::text(json!({"id": id, "type": "error", "payload": payload}).to_string()));
                return Ok(());
            }
        };
        let out = out.clone();
        let task_id = id.clone();
        let task = tokio::spawn(async move {
            let mut results = schema.execute_stream(request);
            let mut first = true;
            while let Some(mut response) = results.next().await {
                let not_executed = crate::response_json::with_codes(&mut response);
                if first && not_executed {
                    let errors: Vec<String> = response.errors.iter().filter_map(|e| crate::response_json::error_json(e, true).ok()).collect();
                    out.send(Message::text(format!(r#"{{"id":{},"type":"error","payload":[{}]}}"#, Json::from(task_id.as_str()), errors.join(","))));
                    return;
                }
                first = false;
                match crate::response_json::response_body(&response).map(|b| prerendered.splice(b)) {
                    Ok(body) => out.send(Message::text(format!(r#"{{"id":{},"type":"next","payload":{body}}}"#, Json::from(task_id.as_str())))),
                    Err(e) => tracing::error!(error = %e, "a GraphQL response could not be serialised"),
                }
            }
            out.send(Message::text(json!({"id": task_id, "type": "complete"}).to_string()));
        });
        self.running.insert(id, task);
        Ok(())
    }

    /// The GraphQL request of a `subscribe` payload, with the same document caps as over HTTP,
    /// and where the fast path keeps the fields it answers as text ([`crate::prerendered`]).
    /// Errors: the message of a refused document or bad variables.
    fn request(&self, payload: &Json) -> Result<(async_graphql::Request, Arc<Prerendered>), String> {
        let text = payload.get("query").and_then(Json::as_str).filter(|q| !q.trim().is_empty()).ok_or("A GraphQL request needs a \"query\"")?;
        let limits = &self.settings.document;
        limits.check(text, None)?;
        let document = async_graphql::parser::parse_query(text).ok();
        limits.check(text, document.as_ref())?;
        let variables = match payload.get("variables") {
            None | Some(Json::Null) => Variables::default(),
            Some(v @ Json::Object(_)) => Variables::from_json(v.clone()),
            Some(_) => return Err("\"variables\" must be an object".into()),
        };
        let operation = payload.get("operationName").and_then(Json::as_str).filter(|o| !o.is_empty()).map(str::to_owned);
        let mut request = async_graphql::Request::new(text).variables(variables.clone());
        if let Some(doc) = &document {
            request.set_parsed_query(doc.clone());
        }
        if let Some(op) = &operation {
            request = request.operation_name(op.clone());
        }
        let prerendered = Arc::new(Prerendered::default());
        let request = request.data(RequestData {
            caller: self.caller.clone(),
            refresh_cookie: None,
            session_cookie: None,
            document: document.map(Arc::new),
            variables,
            operation_name: operation,
            streams: None,
            prerendered: prerendered.clone(),
        });
        Ok((request, prerendered))
    }
}
