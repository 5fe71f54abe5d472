//! What both edges' WebSockets share (docs/realtime.md: edge-rest's `/websocket`, edge-graphql's
//! `graphql-transport-ws` on `/graphql`): the writer task with its bounded queue ([`Outbox`]:
//! a client too slow to read is closed with [`CLOSE_TOO_SLOW`], never slowing the others), the
//! server's keepalive ([`Heartbeat`]), and the per-process connection limits ([`Connections`],
//! [`Place`]).

use crate::balance::Balanced;
use crate::upgrade::{Message, WebSocket, close_message};
use cdapi_proto::v1::GetCurrentUserRequest;
use cdapi_proto::v1::auth_service_client::AuthServiceClient;
use cdapi_proto::{ApiError, ErrorCode};
use futures_util::{SinkExt as _, stream::SplitSink};
use service_runtime::holders::{Held, PerHolder, address_holder};
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Close code for a client that does not read fast enough (a private-use code).
pub const CLOSE_TOO_SLOW: u16 = 4008;

/// How a WebSocket endpoint's connections authenticate (Directus's WEBSOCKETS_REST_AUTH and
/// WEBSOCKETS_GRAPHQL_AUTH).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// The public role until a token comes.
    Public,
    /// The first message authenticates (edge-rest: `auth`; GraphQL: `connection_init`'s
    /// `access_token`), unless the upgrade request carried a token.
    Handshake,
    /// The upgrade request must carry a valid token.
    Strict,
}

impl AuthMode {
    /// The mode the environment variable `name` names (default `handshake`). Errors: another
    /// value.
    pub fn from_env(name: &str) -> anyhow::Result<Self> {
        match service_runtime::env_or(name, "handshake".to_string())?.to_ascii_lowercase().as_str() {
            "public" => Ok(Self::Public),
            "handshake" => Ok(Self::Handshake),
            "strict" => Ok(Self::Strict),
            other => anyhow::bail!("{name}={other:?}: public, handshake or strict"),
        }
    }

    /// Directus's name of the mode (`/server/info`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Handshake => "handshake",
            Self::Strict => "strict",
        }
    }
}

/// Which edge's WebSocket a [`Settings`] is for: edge-rest's `/websocket` (`WEBSOCKETS_REST_*`)
/// or edge-graphql's `graphql-transport-ws` (`WEBSOCKETS_GRAPHQL_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// edge-rest's `/websocket`.
    Rest,
    /// edge-graphql's `/graphql` subscriptions.
    Graphql,
}

/// One edge's WebSocket settings (Directus's names; docs/configuration.md, docs/realtime.md):
/// its own `WEBSOCKETS_<EDGE>_*` and the `WEBSOCKETS_*` both edges share.
#[derive(Debug, Clone)]
pub struct Settings {
    /// WEBSOCKETS_ENABLED and WEBSOCKETS_<EDGE>_ENABLED (both default true).
    pub enabled: bool,
    /// WEBSOCKETS_<EDGE>_AUTH (default `handshake`).
    pub auth: AuthMode,
    /// WEBSOCKETS_<EDGE>_AUTH_TIMEOUT (seconds, default 10, at least 1): time to the first
    /// `auth` (`connection_init` on GraphQL), and to the next one once a token expired.
    pub auth_timeout: std::time::Duration,
    /// WEBSOCKETS_<EDGE>_CONN_LIMIT (default 10,000): open connections per edge process.
    pub max_connections: usize,
    /// WEBSOCKETS_CONN_LIMIT_PER_USER (default 100): open connections of one user (the public:
    /// one client address) per edge process.
    pub max_connections_per_user: usize,
    /// WEBSOCKETS_MAX_SUBSCRIPTIONS (default 100): subscriptions (running operations) per
    /// connection.
    pub max_subscriptions: usize,
    /// WEBSOCKETS_QUEUE (default 1,024, at least 8): messages queued for one client before it
    /// is closed as too slow ([`CLOSE_TOO_SLOW`]).
    pub queue: usize,
    /// WEBSOCKETS_QUEUE_BYTES (default 16 MiB): bytes queued for one client before it is
    /// closed as too slow; one message larger than this is still sent when nothing else waits.
    pub queue_bytes: usize,
    /// WEBSOCKETS_HEARTBEAT_ENABLED (default true) and WEBSOCKETS_HEARTBEAT_PERIOD (seconds,
    /// default 30, at least 1): the period of [`Heartbeat`], `None` when off.
    pub heartbeat: Option<std::time::Duration>,
}

impl Settings {
    /// Reads `edge`'s settings. Errors: a value that does not parse, an unknown auth mode.
    pub fn from_env(edge: Edge) -> anyhow::Result<Self> {
        use service_runtime::env_or;
        let (enabled, auth, auth_timeout, max_connections) = match edge {
            Edge::Rest => (
                env_or("WEBSOCKETS_REST_ENABLED", true)?,
                AuthMode::from_env("WEBSOCKETS_REST_AUTH")?,
                env_or("WEBSOCKETS_REST_AUTH_TIMEOUT", 10u64)?,
                env_or("WEBSOCKETS_REST_CONN_LIMIT", 10_000usize)?,
            ),
            Edge::Graphql => (
                env_or("WEBSOCKETS_GRAPHQL_ENABLED", true)?,
                AuthMode::from_env("WEBSOCKETS_GRAPHQL_AUTH")?,
                env_or("WEBSOCKETS_GRAPHQL_AUTH_TIMEOUT", 10u64)?,
                env_or("WEBSOCKETS_GRAPHQL_CONN_LIMIT", 10_000usize)?,
            ),
        };
        Ok(Self {
            enabled: env_or("WEBSOCKETS_ENABLED", true)? && enabled,
            auth,
            auth_timeout: std::time::Duration::from_secs(auth_timeout.max(1)),
            max_connections,
            max_connections_per_user: env_or("WEBSOCKETS_CONN_LIMIT_PER_USER", 100usize)?,
            max_subscriptions: env_or("WEBSOCKETS_MAX_SUBSCRIPTIONS", 100usize)?,
            queue: env_or("WEBSOCKETS_QUEUE", 1024usize)?.max(8),
            queue_bytes: env_or("WEBSOCKETS_QUEUE_BYTES", 16usize << 20)?,
            heartbeat: if env_or("WEBSOCKETS_HEARTBEAT_ENABLED", true)? {
                Some(std::time::Duration::from_secs(env_or("WEBSOCKETS_HEARTBEAT_PERIOD", 30u64)?.max(1)))
            } else {
                None
            },
        })
    }
}

/// The server's keepalive of one connection: a `{"type": "ping"}` message every period (both
/// protocols, Directus's and graphql-transport-ws, name their ping so, and their clients answer
/// it), and the connection closed (1001) when nothing came from the client since the previous
/// ping, so a client gone without a close does not hold its subscriptions.
pub struct Heartbeat {
    pulse: Option<tokio::time::Interval>,
    heard: bool,
}

impl Heartbeat {
    /// A keepalive beating every `period` from now (`None`: never).
    pub fn new(period: Option<std::time::Duration>) -> Self {
        let pulse = period.map(|p| tokio::time::interval_at(tokio::time::Instant::now() + p, p));
        Self { pulse, heard: true }
    }

    /// Something came from the client.
    pub fn heard(&mut self) {
        self.heard = true;
    }

    /// Waits for the next beat (forever when off), then pings through `out`. `false`: nothing
    /// was heard since the previous beat, so the connection was closed (1001) instead; end it.
    pub async fn beat(&mut self, out: &Outbox) -> bool {
        match self.pulse.as_mut() {
            Some(pulse) => {
                pulse.tick().await;
            }
            None => std::future::pending::<()>().await,
        }
        if !std::mem::replace(&mut self.heard, false) {
            out.close_after(1001, "no answer to ping");
            return false;
        }
        out.send(Message::text(r#"{"type":"ping"}"#));
        true
    }
}

/// Closes the connection once, with a close code and reason.
type Closer = oneshot::Sender<(u16, &'static str)>;

/// Sends to the client through the writer's bounded queue (in messages and in bytes); a full
/// queue closes the connection (the client does not read fast enough).
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Message>,
    close: Arc<Mutex<Option<Closer>>>,
    /// Bytes queued and not yet written, and their bound.
    queued: Arc<AtomicUsize>,
    max_bytes: usize,
}

impl Outbox {
    /// Queues `m`; a full queue (WEBSOCKETS_QUEUE messages or WEBSOCKETS_QUEUE_BYTES bytes)
    /// closes the connection with [`CLOSE_TOO_SLOW`].
    pub fn send(&self, m: Message) {
        let len = m.len();
        let before = self.queued.fetch_add(len, Ordering::SeqCst);
        let over_bytes = before > 0 && before.saturating_add(len) > self.max_bytes;
        if over_bytes || self.tx.try_send(m).is_err() {
            self.queued.fetch_sub(len, Ordering::SeqCst);
            if over_bytes || !self.tx.is_closed() {
                self.close(CLOSE_TOO_SLOW, "too slow: messages were not read in time");
            }
        }
    }

    /// Closes at once, whatever is queued (a client too slow to read it).
    pub fn close(&self, code: u16, reason: &'static str) {
        if let Some(c) = self.close.lock().ok().and_then(|mut c| c.take()) {
            let _ = c.send((code, reason));
        }
    }

    /// Closes after what is queued (the reason message of a protocol close goes first).
    pub fn close_after(&self, code: u16, reason: &'static str) {
        let m = close_message(code, reason);
        let len = m.len();
        self.queued.fetch_add(len, Ordering::SeqCst);
        if self.tx.try_send(m).is_err() {
            self.queued.fetch_sub(len, Ordering::SeqCst);
            self.close(code, reason);
        }
    }
}

/// Starts the writer of a connection: it sends what the [`Outbox`] queues (at most `queue`
/// messages and `queue_bytes` bytes wait) until a close, an error, or every outbox is dropped
/// (then what is queued is sent first). Await the handle to let it finish.
pub fn writer(mut sink: SplitSink<WebSocket, Message>, queue: usize, queue_bytes: usize) -> (Outbox, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<Message>(queue.max(1));
    let (close_tx, close_rx) = oneshot::channel::<(u16, &'static str)>();
    let queued = Arc::new(AtomicUsize::new(0));
    let out = Outbox { tx, close: Arc::new(Mutex::new(Some(close_tx))), queued: queued.clone(), max_bytes: queue_bytes };
    let task = tokio::spawn(async move {
        let mut close_rx = Some(close_rx);
        loop {
            let close = async {
                match close_rx.as_mut() {
                    Some(c) => c.await.ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                close = close => match close {
                    Some((code, reason)) => {
                        let _ = sink.send(close_message(code, reason)).await;
                        break;
                    }
                    // Every sender is gone (the connection ended): drain what is queued.
                    None => close_rx = None,
                },
                m = rx.recv() => match m {
                    Some(m) => {
                        let (last, len) = (m.is_close(), m.len());
                        let sent = sink.send(m).await;
                        queued.fetch_sub(len, Ordering::SeqCst);
                        if sent.is_err() || last {
                            break;
                        }
                    }
                    None => break,
                },
            }
        }
        let _ = sink.close().await;
    });
    (out, task)
}

/// Who a connection's token belongs to (`None`: the public), for the per-user limit. Errors:
/// the auth service's (a bad or expired token).
pub async fn whoami(auth: &AuthServiceClient<Balanced>, caller: &crate::caller::Caller) -> Result<Option<String>, ApiError> {
    if caller.bearer.is_none() {
        return Ok(None);
    }
    let user = auth.clone().get_current_user(caller.request(GetCurrentUserRequest {})?).await?.into_inner();
    Ok(Some(user.id).filter(|id| !id.is_empty()))
}

/// Open connections of one process, in all and per holder, with their limits. A connection's
/// holder is the user its token names, or, for the public, the client's address: a connection
/// opened without a token holds its address's place until it authenticates, and then moves to
/// its user's ([`Place::hold_for`]), so authenticating after the upgrade (`auth` on
/// `/websocket`, `connection_init` on GraphQL) is bounded as a token at the upgrade is.
pub struct Connections {
    total: AtomicUsize,
    per_holder: Arc<PerHolder>,
    max: usize,
}

/// Who holds a connection's place: `user:<id>`, else `ip:<address>` (an IPv6 client's /64:
/// [`address_holder`]), else `None` (the public without a known address: counted in all only).
fn holder(user: Option<&str>, ip: Option<IpAddr>) -> Option<String> {
    match (user, ip) {
        (Some(u), _) => Some(format!("user:{u}")),
        (None, Some(ip)) => Some(format!("ip:{}", address_holder(ip))),
        (None, None) => None,
    }
}

fn too_many() -> ApiError {
    ApiError::new(ErrorCode::RequestsExceeded, "Too many WebSocket connections (WEBSOCKETS_CONN_LIMIT_PER_USER).")
}

impl Connections {
    /// At most `max` connections, `max_per_holder` of them per user (the public: per client
    /// address).
    pub fn new(max: usize, max_per_holder: usize) -> Arc<Self> {
        Arc::new(Self { total: AtomicUsize::new(0), per_holder: PerHolder::new(max_per_holder), max })
    }

    /// Takes a place for `user` (`None`: the public, held by the client address `ip`). Errors:
    /// REQUESTS_EXCEEDED past a limit.
    pub fn take(self: &Arc<Self>, user: Option<&str>, ip: Option<IpAddr>) -> Result<Place, ApiError> {
        if self.total.fetch_add(1, Ordering::SeqCst) >= self.max {
            self.total.fetch_sub(1, Ordering::SeqCst);
            return Err(ApiError::new(ErrorCode::RequestsExceeded, "Too many WebSocket connections."));
        }
        let mut place = Place { of: self.clone(), ip, holder: None };
        place.holder = self.count_in(holder(user, ip))?;
        Ok(place)
    }

    /// One more connection for `holder`. Errors: REQUESTS_EXCEEDED when it has all its places.
    fn count_in(&self, holder: Option<String>) -> Result<Option<Held>, ApiError> {
        holder.map(|h| self.per_holder.take(&h).ok_or_else(too_many)).transpose()
    }
}

/// Holds one connection's place in [`Connections`] until dropped.
pub struct Place {
    of: Arc<Connections>,
    ip: Option<IpAddr>,
    /// Its place among its holder's (none for the public without a known address).
    holder: Option<Held>,
}

impl Place {
    /// Moves the place to `user` (the connection authenticated; `None`: back to the public at
    /// its address). Errors: REQUESTS_EXCEEDED when `user` has all their places already; the
    /// place then stays where it was.
    pub fn hold_for(&mut self, user: Option<&str>) -> Result<(), ApiError> {
        let next = holder(user, self.ip);
        if next.as_deref() == self.holder.as_ref().map(Held::holder) {
            return Ok(());
        }
        // The previous place is given back (dropped) once the next is taken.
        self.holder = self.of.count_in(next)?;
        Ok(())
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.of.total.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_bounded_in_all_and_per_user_and_given_back() {
        let c = Connections::new(3, 2);
        let a = c.take(Some("u"), None).expect("first");
        let _b = c.take(Some("u"), None).expect("second");
        assert!(c.take(Some("u"), None).is_err(), "a third for the same user");
        let _p = c.take(None, None).expect("the public");
        assert!(c.take(Some("v"), None).is_err(), "past the total");
        drop(a);
        assert!(c.take(Some("u"), None).is_ok(), "a place given back is free again");
    }

    #[test]
    fn the_public_is_bounded_per_address_and_authenticating_moves_the_place() {
        let c = Connections::new(10, 2);
        let ip: IpAddr = [203, 0, 113, 7].into();
        let mut a = c.take(None, Some(ip)).expect("first at the address");
        let mut b = c.take(None, Some(ip)).expect("second at the address");
        assert!(c.take(None, Some(ip)).is_err(), "a third at the same address");
        assert!(c.take(None, Some([203, 0, 113, 8].into())).is_ok(), "another address");
        a.hold_for(Some("u")).expect("authenticated: the user's place");
        b.hold_for(Some("u")).expect("the user's second place");
        let mut d = c.take(None, Some(ip)).expect("the address's places were given back");
        assert!(d.hold_for(Some("u")).is_err(), "a third place for the user, taken by authenticating");
        let _e = c.take(None, Some(ip)).expect("a refused move frees none of the address's places");
        assert!(c.take(None, Some(ip)).is_err(), "the address is full again");
        drop(a);
        d.hold_for(Some("u")).expect("a place the user gave back");
    }
}
