//! The WebSocket handshake of both edges (RFC 6455 §4.2), done here instead of by warp's `ws()`
//! filter for one reason: memory per open connection (docs/realtime.md).
//!
//! tungstenite gives every connection a read buffer and zero-fills all of its capacity before
//! each read, so the whole buffer is resident even on an idle connection. Its default is
//! 128 KiB, and warp's `Ws` cannot change it: 10,000 idle subscribers cost edge-rest 168 KiB
//! each. Here every connection gets [`READ_BUFFER_BYTES`]; a larger message still arrives
//! whole (the buffer grows while a frame is read, up to the message limit).
//!
//! [`Handshake::from_parts`] recognises an upgrade request (what warp's `ws()` checked: `GET`,
//! `Connection: upgrade`, `Upgrade: websocket`, `Sec-WebSocket-Version: 13`, a
//! `Sec-WebSocket-Key`) and [`Handshake::accept`] answers it with 101 and runs the connection.

use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use std::future::Future;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use warp::reply::Response;

pub use tokio_tungstenite::tungstenite::Message;

/// One accepted WebSocket connection, server side.
pub type WebSocket = WebSocketStream<TokioIo<Upgraded>>;

/// Read buffer of each WebSocket connection (bytes): 4 KiB, enough for the protocols' small
/// JSON messages in one read (tungstenite's default, 128 KiB, is what made an idle connection
/// cost 168 KiB).
pub const READ_BUFFER_BYTES: usize = 4 * 1024;

/// The settings of every WebSocket connection the edges hold, server or client side: the
/// read buffer of [`READ_BUFFER_BYTES`], and messages and frames of at most
/// `max_message_bytes` (MAX_PAYLOAD_SIZE; a larger one ends the connection).
pub fn config(max_message_bytes: usize) -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES).max_message_size(Some(max_message_bytes)).max_frame_size(Some(max_message_bytes))
}

/// A close message with `code` and `reason` (RFC 6455 §7.4).
pub fn close_message(code: u16, reason: &str) -> Message {
    Message::Close(Some(CloseFrame { code: code.into(), reason: reason.into() }))
}

/// A WebSocket upgrade request, not yet answered.
pub struct Handshake {
    key: http::HeaderValue,
    on_upgrade: OnUpgrade,
}

impl std::fmt::Debug for Handshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handshake").finish_non_exhaustive()
    }
}

impl Handshake {
    /// The handshake a request asks for: `None` unless it is a `GET` with `Connection: upgrade`
    /// (a token of the list), `Upgrade: websocket`, `Sec-WebSocket-Version: 13` and a
    /// `Sec-WebSocket-Key`, on a connection hyper can upgrade (`on_upgrade`, the request's
    /// extension; HTTP/1.1 only). Anything less is an ordinary request.
    pub fn from_parts(method: &http::Method, headers: &http::HeaderMap, on_upgrade: Option<OnUpgrade>) -> Option<Self> {
        use http::header::{CONNECTION, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, UPGRADE};
        let has_token = |name: http::header::HeaderName, token: &str| {
            headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|t| t.trim().eq_ignore_ascii_case(token))
        };
        if method != http::Method::GET
            || !has_token(CONNECTION, "upgrade")
            || !has_token(UPGRADE, "websocket")
            || headers.get(SEC_WEBSOCKET_VERSION).is_none_or(|v| v.as_bytes() != b"13")
        {
            return None;
        }
        Some(Self { key: headers.get(SEC_WEBSOCKET_KEY)?.clone(), on_upgrade: on_upgrade? })
    }

    /// Answers 101 Switching Protocols (with `protocol` as `Sec-WebSocket-Protocol` when
    /// given) and, once hyper hands the connection over, runs `run` on it with
    /// [`config`]`(max_message_bytes)`. A connection lost before that is logged at debug.
    pub fn accept<F, U>(self, max_message_bytes: usize, protocol: Option<http::HeaderValue>, run: F) -> Response
    where
        F: FnOnce(WebSocket) -> U + Send + 'static,
        U: Future<Output = ()> + Send + 'static,
    {
        let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(self.key.as_bytes());
        let on_upgrade = self.on_upgrade;
        tokio::spawn(async move {
            match on_upgrade.await {
                Ok(upgraded) => {
                    let socket = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config(max_message_bytes))).await;
                    run(socket).await;
                }
                Err(e) => tracing::debug!(error = %e, "the WebSocket upgrade did not complete"),
            }
        });
        let mut res = Response::default();
        *res.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
        let headers = res.headers_mut();
        headers.insert(http::header::CONNECTION, http::HeaderValue::from_static("upgrade"));
        headers.insert(http::header::UPGRADE, http::HeaderValue::from_static("websocket"));
        if let Ok(v) = http::HeaderValue::from_str(&accept) {
            headers.insert(http::header::SEC_WEBSOCKET_ACCEPT, v);
        }
        if let Some(p) = protocol {
            headers.insert(http::header::SEC_WEBSOCKET_PROTOCOL, p);
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
        pairs.iter().map(|(k, v)| (http::header::HeaderName::from_static(k), http::HeaderValue::from_static(v))).collect()
    }

    const GOOD: [(&str, &str); 4] =
        [("connection", "keep-alive, Upgrade"), ("upgrade", "WebSocket"), ("sec-websocket-version", "13"), ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")];

    fn upgradable() -> Option<OnUpgrade> {
        let mut req = http::Request::new(());
        Some(hyper::upgrade::on(&mut req))
    }

    #[test]
    fn only_a_complete_upgrade_request_is_a_handshake() {
        assert!(Handshake::from_parts(&http::Method::GET, &headers(&GOOD), upgradable()).is_some());
        assert!(Handshake::from_parts(&http::Method::POST, &headers(&GOOD), upgradable()).is_none(), "not a GET");
        assert!(Handshake::from_parts(&http::Method::GET, &headers(&GOOD), None).is_none(), "not upgradable (HTTP/2)");
        for (missing, (name, _)) in GOOD.iter().enumerate() {
            let some: Vec<_> = GOOD.iter().enumerate().filter(|(i, _)| *i != missing).map(|(_, p)| *p).collect();
            assert!(Handshake::from_parts(&http::Method::GET, &headers(&some), upgradable()).is_none(), "without {name}");
        }
        let mut old = GOOD;
        old[2].1 = "8";
        assert!(Handshake::from_parts(&http::Method::GET, &headers(&old), upgradable()).is_none(), "another version");
    }

    #[test]
    fn the_answer_carries_the_accept_key_of_rfc_6455() {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let _guard = rt.enter();
        let h = Handshake::from_parts(&http::Method::GET, &headers(&GOOD), upgradable()).expect("a handshake");
        let res = h.accept(1024, Some(http::HeaderValue::from_static("graphql-transport-ws")), |_| async {});
        assert_eq!(res.status(), http::StatusCode::SWITCHING_PROTOCOLS);
        // RFC 6455 §1.3's worked example.
        assert_eq!(res.headers()[http::header::SEC_WEBSOCKET_ACCEPT], "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_eq!(res.headers()[http::header::SEC_WEBSOCKET_PROTOCOL], "graphql-transport-ws");
    }
}
