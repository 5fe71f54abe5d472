//! `/websocket`: Directus's realtime protocol (docs/realtime.md; Directus docs "Realtime") over `ItemsService.Subscribe` and the
//! item calls. One task per connection reads the client's messages; each subscription is a task
//! forwarding its gRPC stream; one writer task sends what they queue.
//!
//! Messages (JSON text frames; `uid` is echoed when given):
//! - `{type: "auth", access_token}` (or `email` + `password`, or `refresh_token`) →
//!   `{type: "auth", status: "ok"}` (`refresh_token` too after a login or a refresh); a bad one
//!   → `{type: "auth", status: "error", error: {code, message}}` (with the new `refresh_token`
//!   when a refresh was refused a place: [`AuthFailure`]).
//! - `{type: "subscribe", collection, query?, event?, uid?}` → `{type: "subscription", event:
//!   "init", data: [...], uid}`, then `event: "create" | "update"` with the items as the query
//!   reads them (`data: [...]`) and `event: "delete"` with the keys (`data: ["1", ...]`).
//!   `{type: "unsubscribe", uid}` ends one (`uid` absent: all).
//! - `{type: "items", collection, action: "create" | "read" | "update" | "delete", data?, id?,
//!   ids?, query?, uid?}` → `{type: "items", data, uid}`.
//! - `{type: "ping"}` → `{type: "pong"}`; the server sends `{type: "ping"}` every
//!   WEBSOCKETS_HEARTBEAT_PERIOD seconds and closes a connection that sent nothing since the
//!   last one.
//! - Errors: `{type: <the message's type>, status: "error", error: {code, message}, uid?}`.
//!
//! Authentication (WEBSOCKETS_REST_AUTH): `public` (the public role until an `auth` message),
//! `handshake` (the default: the first message must be `auth` within
//! WEBSOCKETS_REST_AUTH_TIMEOUT seconds, unless the upgrade request carried a token), `strict`
//! (the upgrade request must carry a valid token: `?access_token=`, `Authorization` or the
//! session cookie). When the token expires the client gets `{type: "auth", status: "error",
//! error: {code: "TOKEN_EXPIRED"}}` once and its subscriptions pause: nothing reaches it until
//! it authenticates again within WEBSOCKETS_REST_AUTH_TIMEOUT seconds, and then they go on
//! (opened anew with the new token, without another `init`), as the Directus SDK expects (it
//! re-authenticates on TOKEN_EXPIRED and does not subscribe again). Without it: `AUTH_TIMEOUT`,
//! and the connection is closed (modes `handshake` and `strict`). Directus keeps delivering
//! events to such a client meanwhile, read without any accountability; events of that gap are
//! not delivered here: a client whose token expired sees nothing. An `auth` naming another
//! user than the connection's (an app's next user on the same socket) opens every running
//! subscription again as that user, without `init`: from then on it gets only what the new user
//! may read, and FORBIDDEN ends those it may not open. (Directus reads each event with the
//! client's current accountability, so it too delivers as the latest user.) The connection's
//! place in the per-user count moves to the user who authenticated last.
//!
//! Budgets: WEBSOCKETS_MAX_SUBSCRIPTIONS per connection (default 100), WEBSOCKETS_REST_CONN_LIMIT
//! connections per edge process (default 10,000) and WEBSOCKETS_CONN_LIMIT_PER_USER per user and
//! process (default 100; the public per client address, and an `auth` takes a place of its
//! user's, or answers REQUESTS_EXCEEDED), WEBSOCKETS_QUEUE messages and WEBSOCKETS_QUEUE_BYTES
//! bytes waiting for a slow client (defaults 1,024 and 16 MiB; past them the connection is closed
//! with code 4008), MAX_PAYLOAD_SIZE per message.

use crate::request::{EdgeState, HttpRequest, url_query};
use bytes::Bytes;
use cdapi_proto::v1::*;
use cdapi_proto::{ApiError, ErrorCode};
use edge_http::upgrade::{Handshake, Message, WebSocket};
use edge_http::websocket::Outbox;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub use edge_http::websocket::CLOSE_TOO_SLOW;

pub use edge_http::websocket::AuthMode;

/// The WebSocket handshake on WEBSOCKETS_REST_PATH. Errors: INVALID_CREDENTIALS (a bad token,
/// or none in mode `strict`), REQUESTS_EXCEEDED (connection limits).
pub async fn upgrade(state: Arc<EdgeState>, req: &HttpRequest, handshake: Handshake, request_id: &str) -> Result<warp::reply::Response, ApiError> {
    let (_, token) = url_query(req)?;
    let caller = req.caller(request_id, token)?;
    if caller.bearer.is_none() && state.websocket_settings.rest.auth == AuthMode::Strict {
        return Err(ApiError::invalid_credentials());
    }
    let user = edge_http::websocket::whoami(&state.auth, &caller).await?;
    let place = state.websockets.take(user.as_deref(), caller.client_ip)?;
    let max = usize::try_from(state.max_payload_size).unwrap_or(usize::MAX);
    Ok(handshake.accept(max, None, move |socket| async move {
        Connection::new(state, caller, user, place).run(socket).await;
    }))
}

/// Text of a server message.
fn text(v: &Value) -> Message {
    Message::text(v.to_string())
}

/// An error message for a client message of type `kind`.
fn error_message(kind: &str, e: &ApiError, uid: Option<&Value>) -> Message {
    coded_error(kind, e.code.as_str(), &e.message, uid)
}

/// An error message with a code of the WebSocket protocol's own (`AUTH_FAILED`,
/// `AUTH_TIMEOUT`, as the Directus SDK reads them) or of the API.
fn coded_error(kind: &str, code: &str, message: &str, uid: Option<&Value>) -> Message {
    text(&error_json(kind, code, message, uid))
}

/// [`coded_error`]'s message as JSON.
fn error_json(kind: &str, code: &str, message: &str, uid: Option<&Value>) -> Value {
    let mut m = json!({"type": kind, "status": "error", "error": {"code": code, "message": message}});
    if let Some(u) = uid {
        m["uid"] = u.clone();
    }
    m
}

/// Why an `auth` message failed: the error, and for a refresh refused a place, the refresh
/// token its rotation issued (the one presented no longer refreshes once REFRESH_TOKEN_GRACE has
/// passed), sent with the error so the client keeps its session.
struct AuthFailure {
    error: ApiError,
    refresh_token: Option<String>,
}

impl From<ApiError> for AuthFailure {
    fn from(error: ApiError) -> Self {
        Self { error, refresh_token: None }
    }
}

impl From<tonic::Status> for AuthFailure {
    fn from(status: tonic::Status) -> Self {
        ApiError::from(status).into()
    }
}

/// One connection's state.
struct Connection {
    state: Arc<EdgeState>,
    caller: edge_http::caller::Caller,
    authenticated: bool,
    /// Who the caller's token names (`None`: the public): when an `auth` names someone else,
    /// every subscription is opened again as them.
    user: Option<String>,
    /// The connection's place in the limits, held by `user` (the public: the client address).
    place: edge_http::websocket::Place,
    /// TOKEN_EXPIRED was sent for the current token (once per token, whatever the number of
    /// subscriptions it ends).
    expired: Arc<std::sync::atomic::AtomicBool>,
    /// Wakes the connection's loop when the token expired (to time the re-authentication).
    expiry: Arc<tokio::sync::Notify>,
    subscriptions: HashMap<String, Subscription>,
    next_uid: u64,
}

/// One `subscribe`: what it asked for, and the task forwarding its stream.
struct Subscription {
    request: SubscribeRequest,
    uid: Option<Value>,
    /// Its stream ended with TOKEN_EXPIRED: opened again after the next `auth`.
    paused: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Connection {
    fn new(state: Arc<EdgeState>, caller: edge_http::caller::Caller, user: Option<String>, place: edge_http::websocket::Place) -> Self {
        Self {
            state,
            caller,
            authenticated: user.is_some(),
            user,
            place,
            expired: Arc::default(),
            expiry: Arc::default(),
            subscriptions: HashMap::new(),
            next_uid: 0,
        }
    }

    async fn run(mut self, socket: WebSocket) {
        let settings = self.state.websocket_settings.rest.clone();
        let (sink, mut incoming) = socket.split();
        let (out, writer) = edge_http::websocket::writer(sink, settings.queue, settings.queue_bytes);
        let auth_deadline = tokio::time::sleep(settings.auth_timeout);
        tokio::pin!(auth_deadline);
        let needs_auth = settings.auth == AuthMode::Handshake && !self.authenticated;
        let mut heartbeat = edge_http::websocket::Heartbeat::new(settings.heartbeat);
        let mut stopping = tokio::time::interval(Duration::from_secs(1));
        // Set when the token expired: `auth_deadline` then times the next `auth`.
        let mut awaiting_reauth = false;
        loop {
            tokio::select! {
                message = incoming.next() => match message {
                    Some(Ok(Message::Text(body))) => {
                        heartbeat.heard();
                        if needs_auth && !self.authenticated && !is_auth(&body) {
                            out.send(coded_error("auth", "AUTH_FAILED", "Authentication required: the first message must be \"auth\".", None));
                            out.close_after(1008, "authentication required");
                            break;
                        }
                        self.handle(&body, &out).await;
                    }
                    Some(Ok(m)) if m.is_close() => break,
                    Some(Ok(_)) => heartbeat.heard(),
                    Some(Err(_)) | None => break,
                },
                () = self.expiry.notified() => {
                    awaiting_reauth = true;
                    auth_deadline.as_mut().reset(tokio::time::Instant::now() + settings.auth_timeout);
                }
                // The first `auth` did not come in time (handshake mode), or, once the token
                // expired, the next one did not.
                () = &mut auth_deadline, if (needs_auth && !self.authenticated) || awaiting_reauth => {
                    if std::mem::take(&mut awaiting_reauth) && !self.expired.load(Ordering::SeqCst) {
                        continue; // authenticated again meanwhile
                    }
                    out.send(coded_error("auth", "AUTH_TIMEOUT", "Authentication timed out.", None));
                    if settings.auth != AuthMode::Public {
                        out.close_after(1008, "authentication timed out");
                        break;
                    }
                }
                alive = heartbeat.beat(&out) => if !alive {
                    break;
                },
                _ = stopping.tick() => if self.state.readiness.is_stopping() {
                    out.close_after(1001, "server shutting down");
                    break;
                },
            }
        }
        for (_, sub) in self.subscriptions.drain() {
            sub.task.abort();
        }
        drop(out);
        let _ = writer.await;
    }

    /// One client message.
    async fn handle(&mut self, body: &str, out: &Outbox) {
        let msg: Value = match serde_json::from_str(body) {
            Ok(v @ Value::Object(_)) => v,
            _ => return out.send(error_message("error", &ApiError::invalid_payload("A message is a JSON object"), None)),
        };
        let kind = msg.get("type").and_then(Value::as_str).unwrap_or_default().to_ascii_lowercase();
        let uid = msg.get("uid").filter(|u| u.is_string() || u.is_number()).cloned();
        let result = match kind.as_str() {
            "ping" => Ok(Some(json!({"type": "pong"}))),
            "pong" => Ok(None),
            "auth" => match self.authenticate(&msg, out).await {
                Ok(reply) => Ok(Some(reply)),
                // The Directus SDK reads AUTH_FAILED (a handshake connection it then closes); a
                // user with all their connections open gets REQUESTS_EXCEEDED.
                Err(AuthFailure { error: e, refresh_token }) if e.code == ErrorCode::RequestsExceeded => {
                    let mut m = error_json("auth", e.code.as_str(), &e.message, uid.as_ref());
                    if let Some(r) = refresh_token {
                        m["refresh_token"] = json!(r);
                    }
                    return out.send(text(&m));
                }
                Err(AuthFailure { error: e, .. }) => return out.send(coded_error("auth", "AUTH_FAILED", &e.message, uid.as_ref())),
            },
            "subscribe" => self.subscribe(&msg, uid.clone(), out).await.map(|()| None),
            "unsubscribe" => {
                self.unsubscribe(uid.as_ref());
                Ok(None)
            }
            "items" => self.items(&msg).await.map(|data| Some(json!({"type": "items", "data": data}))),
            _ => Err(ApiError::invalid_payload(format!("Unknown message type \"{kind}\""))),
        };
        match result {
            Ok(Some(mut reply)) => {
                if let Some(u) = &uid {
                    reply["uid"] = u.clone();
                }
                out.send(text(&reply));
            }
            Ok(None) => {}
            Err(e) => out.send(error_message(&kind, &e, uid.as_ref())),
        }
    }

    /// A call's metadata as the connection's caller.
    fn request<T>(&self, msg: T) -> Result<tonic::Request<T>, ApiError> {
        self.caller.request(msg)
    }

    /// `auth`: a token, a login or a refresh token. Errors: the auth service's;
    /// REQUESTS_EXCEEDED when the user has WEBSOCKETS_CONN_LIMIT_PER_USER connections already
    /// (the connection stays as it was; a login's session is ended again, a refresh's new
    /// token is sent with the error: [`AuthFailure`]).
    async fn authenticate(&mut self, msg: &Value, out: &Outbox) -> Result<Value, AuthFailure> {
        let field = |k: &str| msg.get(k).and_then(Value::as_str).map(str::to_owned);
        let mut auth = self.state.auth.clone();
        let (token, refresh, login) = if let Some(t) = field("access_token") {
            (t, None, false)
        } else if let (Some(email), Some(password)) = (field("email"), field("password")) {
            let t = auth.login(self.request(LoginRequest { email, password, otp: field("otp"), mode: SessionMode::Json as i32 })?).await?.into_inner();
            (t.access_token, Some(t.refresh_token), true)
        } else if let Some(r) = field("refresh_token") {
            let t = auth.refresh(self.request(RefreshRequest { refresh_token: r, mode: SessionMode::Json as i32, ..Default::default() })?).await?.into_inner();
            (t.access_token, Some(t.refresh_token), false)
        } else {
            return Err(ApiError::invalid_payload("\"auth\" needs access_token, email and password, or refresh_token").into());
        };
        let mut caller = self.caller.clone();
        caller.bearer = Some(format!("Bearer {token}"));
        let user = edge_http::websocket::whoami(&self.state.auth, &caller).await?;
        // The user's own place (WEBSOCKETS_CONN_LIMIT_PER_USER), or nothing changes: no session
        // a refused login opened stays open.
        if let Err(error) = self.place.hold_for(user.as_deref()) {
            if let (true, Some(r)) = (login, &refresh) {
                if let Err(e) = auth.logout(self.request(LogoutRequest { refresh_token: r.clone(), ..Default::default() })?).await {
                    tracing::warn!(error = %e.message(), "could not end the session of a login refused a place");
                }
                return Err(error.into());
            }
            return Err(AuthFailure { error, refresh_token: refresh });
        }
        let switched = user != self.user;
        self.caller = caller;
        self.user = user;
        self.authenticated = true;
        if switched || self.expired.load(Ordering::SeqCst) {
            // Another user on the same socket (an app's next user): nothing more as the previous
            // one. After an expiry: every running stream holds the expired token too and ends
            // with TOKEN_EXPIRED in a moment, so all are opened again now, and the flag is
            // cleared only once the old tasks are gone: a late one can neither announce the
            // expiry a second time nor mark the connection expired again.
            self.reopen(out, true).await;
        }
        self.expired.store(false, Ordering::SeqCst);
        let mut reply = json!({"type": "auth", "status": "ok"});
        if let Some(r) = refresh {
            reply["refresh_token"] = json!(r);
        }
        Ok(reply)
    }

    /// `subscribe`: a gRPC Subscribe stream forwarded by a task of its own.
    async fn subscribe(&mut self, msg: &Value, uid: Option<Value>, out: &Outbox) -> Result<(), ApiError> {
        let collection = msg.get("collection").and_then(Value::as_str).ok_or_else(|| ApiError::invalid_payload("\"collection\" is required"))?;
        collection_name_ok(collection)?;
        let query = match msg.get("query") {
            None | Some(Value::Null) => Query::default(),
            Some(Value::Object(q)) => query_language::query_json::query_from_json(q)?,
            Some(_) => return Err(ApiError::invalid_query("\"query\" must be an object")),
        };
        crate::identifiers::check(&query)?;
        let event = match msg.get("event").and_then(Value::as_str) {
            None => ItemEventKind::Unspecified,
            Some("create") => ItemEventKind::Create,
            Some("update") => ItemEventKind::Update,
            Some("delete") => ItemEventKind::Delete,
            Some(other) => return Err(ApiError::invalid_payload(format!("Unknown event \"{other}\""))),
        };
        let key = match &uid {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => {
                self.next_uid += 1;
                format!("\u{0}{}", self.next_uid)
            }
        };
        self.subscriptions.retain(|_, sub| !sub.task.is_finished() || sub.paused.load(Ordering::SeqCst));
        if !self.subscriptions.contains_key(&key) && self.subscriptions.len() >= self.state.websocket_settings.rest.max_subscriptions {
            return Err(ApiError::new(ErrorCode::RequestsExceeded, "Too many subscriptions on this connection (WEBSOCKETS_MAX_SUBSCRIPTIONS)."));
        }
        let request = SubscribeRequest { collection: collection.to_owned(), query: Some(query), event: event as i32 };
        let sub = self.open(request, uid, true, out).await?;
        if let Some(old) = self.subscriptions.insert(key, sub) {
            old.task.abort();
        }
        Ok(())
    }

    /// Subscriptions opened again as the connection's current caller (their `init` not sent
    /// again): those paused by the token's expiry, and with `all` also the running ones (their
    /// streams, opened as the previous caller, end first). One the caller may not open gets its
    /// error message (FORBIDDEN, say) and ends.
    async fn reopen(&mut self, out: &Outbox, all: bool) {
        let chosen: Vec<String> =
            self.subscriptions.iter().filter(|(_, s)| s.paused.load(Ordering::SeqCst) || (all && !s.task.is_finished())).map(|(k, _)| k.clone()).collect();
        for key in chosen {
            let Some(mut old) = self.subscriptions.remove(&key) else { continue };
            old.task.abort();
            // Until it has stopped: a task being polled elsewhere could still send one item.
            let _ = (&mut old.task).await;
            match self.open(old.request, old.uid.clone(), false, out).await {
                Ok(sub) => {
                    self.subscriptions.insert(key, sub);
                }
                Err(e) => out.send(error_message("subscribe", &e, old.uid.as_ref())),
            }
        }
    }

    /// Opens the gRPC Subscribe stream of `request` as the connection's caller and forwards it
    /// by a task of its own (its `init` only `with_init`). Errors: the core's.
    async fn open(&self, request: SubscribeRequest, uid: Option<Value>, with_init: bool, out: &Outbox) -> Result<Subscription, ApiError> {
        let call = self.request(request.clone())?;
        let mut stream = self.state.subscriptions.clone().subscribe(call).await?.into_inner();
        let out = out.clone();
        let (expired, expiry) = (self.expired.clone(), self.expiry.clone());
        let paused: Arc<std::sync::atomic::AtomicBool> = Arc::default();
        let mark = paused.clone();
        let forwarded_uid = uid.clone();
        let task = tokio::spawn(async move {
            let uid = forwarded_uid;
            let uid_text = uid.as_ref().map(|u| format!(",\"uid\":{u}")).unwrap_or_default();
            loop {
                match stream.message().await {
                    Ok(Some(e)) => {
                        let name = match e.kind() {
                            ItemEventKind::Init if with_init => "init",
                            ItemEventKind::Create => "create",
                            ItemEventKind::Update => "update",
                            ItemEventKind::Delete => "delete",
                            ItemEventKind::Init | ItemEventKind::Unspecified => continue,
                        };
                        // Another stream of this connection already met the token's expiry:
                        // this one ends in a moment too, and nothing reaches the expired token
                        // meanwhile.
                        if expired.load(Ordering::SeqCst) {
                            continue;
                        }
                        let data = String::from_utf8_lossy(&e.data);
                        out.send(Message::text(format!("{{\"type\":\"subscription\",\"event\":\"{name}\",\"data\":{data}{uid_text}}}")));
                    }
                    Ok(None) => break,
                    Err(status) => {
                        let e = ApiError::from(status);
                        if e.code != ErrorCode::TokenExpired {
                            out.send(error_message("subscribe", &e, uid.as_ref()));
                        } else {
                            mark.store(true, Ordering::SeqCst);
                            if !expired.swap(true, Ordering::SeqCst) {
                                // Once per token; the connection then waits for a new `auth`.
                                out.send(error_message("auth", &e, None));
                                expiry.notify_one();
                            }
                        }
                        break;
                    }
                }
            }
        });
        Ok(Subscription { request, uid, paused, task })
    }

    /// `unsubscribe`: one subscription (`uid`), or all.
    fn unsubscribe(&mut self, uid: Option<&Value>) {
        match uid {
            Some(Value::String(s)) => self.subscriptions.remove(s).into_iter().for_each(|sub| sub.task.abort()),
            Some(other) => self.subscriptions.remove(&other.to_string()).into_iter().for_each(|sub| sub.task.abort()),
            None => self.subscriptions.drain().for_each(|(_, sub)| sub.task.abort()),
        }
    }

    /// `items`: the same calls as REST's `/items`. Errors: the core's; INVALID_PAYLOAD.
    async fn items(&self, msg: &Value) -> Result<Value, ApiError> {
        let collection = msg.get("collection").and_then(Value::as_str).ok_or_else(|| ApiError::invalid_payload("\"collection\" is required"))?.to_owned();
        collection_name_ok(&collection)?;
        if collection.starts_with("directus_") {
            return Err(ApiError::forbidden());
        }
        let query = match msg.get("query") {
            Some(Value::Object(q)) => query_language::query_json::query_from_json(q)?,
            _ => Query::default(),
        };
        crate::identifiers::check(&query)?;
        let key = |v: &Value| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let id = msg.get("id").and_then(key);
        let ids: Option<Vec<String>> = msg.get("ids").and_then(Value::as_array).map(|a| a.iter().filter_map(key).collect());
        let data = msg.get("data").cloned().unwrap_or(Value::Null);
        let bytes = || Bytes::from(data.to_string());
        let mut items = self.state.items.clone();
        let reply: Bytes = match msg.get("action").and_then(Value::as_str).unwrap_or_default() {
            "create" if data.is_array() => {
                items.create_items(self.request(CreateItemsRequest { collection, data: bytes(), query: Some(query) })?).await?.into_inner().data
            }
            "create" => items.create_item(self.request(CreateItemRequest { collection, data: bytes(), query: Some(query) })?).await?.into_inner().data,
            "read" => items.read(self.request(ReadRequest { collection, key: id, query: Some(query) })?).await?.into_inner().data,
            "update" => match (id, ids) {
                (Some(key), _) => {
                    items.update_item(self.request(UpdateItemRequest { collection, key, data: bytes(), query: Some(query) })?).await?.into_inner().data
                }
                (None, Some(keys)) => {
                    let selector = Some(update_items_request::Selector::Keys(KeyList { keys }));
                    items.update_items(self.request(UpdateItemsRequest { collection, selector, data: bytes(), query: Some(query) })?).await?.into_inner().data
                }
                (None, None) => return Err(ApiError::invalid_payload("\"update\" needs \"id\" or \"ids\"")),
            },
            "delete" => match (id, ids) {
                (Some(key), _) => {
                    items.delete_item(self.request(DeleteItemRequest { collection, key: key.clone() })?).await?;
                    return Ok(json!(key));
                }
                (None, Some(keys)) => {
                    let selector = Some(delete_items_request::Selector::Keys(KeyList { keys: keys.clone() }));
                    items.delete_items(self.request(DeleteItemsRequest { collection, selector })?).await?;
                    return Ok(json!(keys));
                }
                (None, None) => return Err(ApiError::invalid_payload("\"delete\" needs \"id\" or \"ids\"")),
            },
            other => return Err(ApiError::invalid_payload(format!("Unknown action \"{other}\""))),
        };
        if reply.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&reply).map_err(ApiError::internal_because)
    }
}

/// A collection name within the identifier budget. Errors: INVALID_PAYLOAD.
fn collection_name_ok(name: &str) -> Result<(), ApiError> {
    if name.is_empty() || name.chars().count() > crate::identifiers::MAX_IDENTIFIER_LENGTH {
        return Err(ApiError::invalid_payload("\"collection\" must be a collection's name"));
    }
    Ok(())
}

/// Whether a message is an `auth` message (checked before parsing it in full).
fn is_auth(body: &str) -> bool {
    serde_json::from_str::<Value>(body).ok().and_then(|v| v.get("type").and_then(Value::as_str).map(|t| t.eq_ignore_ascii_case("auth"))).unwrap_or(false)
}
